package server

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// TestTextOffsetAsGoDecodes: over random tokens cut from a few bytes
// that make whole, split and invalid UTF-8, each token's text_offset is
// the number of characters that begin before its first byte, as Go
// decodes the text up to the token's end (an invalid byte is one
// character; a character still cut short there is taken to complete,
// as the tokens to come cannot be known when a token is streamed).
func TestTextOffsetAsGoDecodes(t *testing.T) {
	alphabet := []byte{'a', 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80}
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		var toks [][]byte
		var whole []byte
		for range 1 + r.IntN(8) {
			tok := make([]byte, 1+r.IntN(3))
			for k := range tok {
				tok[k] = alphabet[r.IntN(len(alphabet))]
			}
			toks = append(toks, tok)
			whole = append(whole, tok...)
		}
		var o textOffset
		at := 0
		for i, tok := range toks {
			want := 0 // characters of the text so far that begin before byte at
			seen := whole[:at+len(tok)]
			for k := 0; k < at; {
				want++
				if !utf8.FullRune(seen[k:]) {
					break
				}
				_, w := utf8.DecodeRune(seen[k:])
				k += w
			}
			if got := o.next(tok); got != want {
				t.Fatalf("trial %d: tokens %q: token %d at %d, want %d", trial, toks, i, got, want)
			}
			at += len(tok)
		}
	}
	// A stray continuation byte is a character; so is a lead byte that
	// nothing completes.
	var o textOffset
	for i, c := range []struct {
		tok  string
		want int
	}{{"a", 0}, {"\x80", 1}, {"b", 2}, {"\xe2", 3}, {"c", 4}, {"\xc3", 5}, {"\xa9", 6}, {"d", 6}} {
		if got := o.next([]byte(c.tok)); got != c.want {
			t.Errorf("token %d %q at %d, want %d", i, c.tok, got, c.want)
		}
	}
}
