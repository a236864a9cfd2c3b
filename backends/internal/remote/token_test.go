package remote

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/decode"
)

func lp(x float64) *float64 { return &x }

func ints(b []byte) []int {
	out := make([]int, len(b))
	for i, x := range b {
		out[i] = int(x)
	}
	return out
}

// TestSpells: a token's text against its bytes.
func TestSpells(t *testing.T) {
	for _, c := range []struct {
		text string
		b    []byte
		ok   bool
	}{
		{" the", []byte(" the"), true},
		{" the", []byte(" tha"), false},
		{"\uFFFD", []byte{0xe2, 0x80}, true},       // JSON's stand-in for a split character
		{"\uFFFD\uFFFD", []byte{0xe2, 0x80}, true}, // counted per byte
		{`bytes:\xe2\x80`, []byte{0xe2, 0x80}, true},
		{"x", []byte{0xe2, 0x80}, false},
		{"\uFFFD", []byte("é"), false},
	} {
		assert.Equal(t, c.ok, Spells(c.text, c.b), "%q %v", c.text, c.b)
	}
}

// TestResolve: bytes win over text, alternatives come most probable
// first, blind ones are left out, and what disagrees is an error.
func TestResolve(t *testing.T) {
	tok, blind, err := Resolve(RawToken{ID: -1, Text: " a", Bytes: ints([]byte(" a")), HasBytes: true, Logprob: lp(-1),
		Top: []RawToken{{Text: "b", Logprob: lp(-3)}, {Text: " a", Logprob: lp(-1)}, {Text: "\uFFFD", Logprob: lp(-2)}}})
	require.NoError(t, err)
	assert.False(t, blind)
	require.Len(t, tok.TopLogprobs, 2)
	assert.Equal(t, " a", tok.TopLogprobs[0].Token)

	_, blind, err = Resolve(RawToken{Text: "\uFFFD", Bytes: ints([]byte("\uFFFD")), HasBytes: true, Logprob: lp(-1)})
	require.NoError(t, err)
	assert.True(t, blind, "Ollama's bytes of U+FFFD may stand for anything")

	for _, bad := range []RawToken{
		{Text: " a", Bytes: []int{32, 98}, HasBytes: true, Logprob: lp(-1)},
		{Text: " a", Bytes: []int{300}, HasBytes: true, Logprob: lp(-1)},
		{Text: " a"},
		{Text: " a", Logprob: lp(0.5)},
		{Text: " a", Logprob: lp(-1), Top: []RawToken{{Text: "b"}}},
	} {
		_, _, err := Resolve(bad)
		assert.Error(t, err, "%+v", bad)
	}
}

// TestAligner: tokens are confirmed by the text as it arrives; a blind
// run takes its bytes from the text and becomes one token.
func TestAligner(t *testing.T) {
	var a Aligner
	mk := func(s string, x float64) decode.Token {
		return decode.Token{ID: -1, Token: s, Bytes: decode.Bytes(s), Logprob: x}
	}
	a.Add(" caf", []decode.Token{mk(" caf", -1), mk("\uFFFD", -0.5), mk("\uFFFD", -0.25)}, []bool{false, true, true})
	got, err := a.Ready(false)
	require.NoError(t, err)
	assert.Len(t, got, 1, "the blind run waits for its text")
	a.Add("é!", []decode.Token{mk("!", -2)}, []bool{false})
	got, err = a.Ready(true)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "é", got[0].Token)
	assert.InDelta(t, -0.75, got[0].Logprob, 1e-12)
	assert.Equal(t, "!", got[1].Token)

	var b Aligner
	b.Add("ab", []decode.Token{mk("a", -1), mk("c", -1)}, []bool{false, false})
	_, err = b.Ready(true)
	assert.ErrorIs(t, err, ErrMisaligned)
	var c Aligner
	c.Add("abc", []decode.Token{mk("a", -1)}, []bool{false})
	_, err = c.Ready(true)
	assert.ErrorIs(t, err, ErrMisaligned, "text past the last token")
}

// FuzzResolveAlign: whatever a server says of its tokens and its text,
// Resolve and the Aligner never panic, and what they accept is
// consistent: a token's text is its bytes, its log-probabilities are
// log-probabilities within bounds, and the tokens the Aligner passes
// spell the text it was given, in order.
func FuzzResolveAlign(f *testing.F) {
	f.Add(" the", []byte(" the"), true, -0.5, "bytes:\\xe2\\x80", -1.0, " the cat")
	f.Add("\uFFFD", []byte{0xe2, 0x80}, true, -0.1, "\uFFFD", -2.0, "\u2019s")
	f.Add("token_id:5", []byte(nil), false, -1e6, "x", 1.0, "")
	f.Fuzz(func(t *testing.T, text string, b []byte, hasBytes bool, logprob float64, alt string, altLogprob float64, answer string) {
		raw := RawToken{ID: -1, Text: text, HasBytes: hasBytes, Logprob: &logprob,
			Top: []RawToken{{ID: -1, Text: alt, Logprob: &altLogprob}}}
		if hasBytes {
			raw.Bytes = ints(b)
		}
		tok, blind, err := Resolve(raw)
		if err != nil {
			return
		}
		if tok.Token != string(tok.Bytes) {
			t.Fatalf("token %q has bytes %q", tok.Token, tok.Bytes)
		}
		if !(tok.Logprob <= 1e-4 && tok.Logprob >= minLogprob) {
			t.Fatalf("log-probability %v accepted", tok.Logprob)
		}
		for _, a := range tok.TopLogprobs {
			if a.Token != string(a.Bytes) || !(a.Logprob <= 1e-4 && a.Logprob >= minLogprob) {
				t.Fatalf("alternative %q (%q) at %v accepted", a.Token, a.Bytes, a.Logprob)
			}
		}
		var al Aligner
		al.Add(answer, []decode.Token{tok, tok}, []bool{blind, blind})
		got, _ := al.Ready(true)
		var spelled []byte
		for _, g := range got {
			spelled = append(spelled, g.Bytes...)
		}
		if string(spelled) != answer[:min(len(answer), len(spelled))] || len(spelled) > len(answer) {
			t.Fatalf("the aligned tokens spell %q, the text is %q", spelled, answer)
		}
	})
}
