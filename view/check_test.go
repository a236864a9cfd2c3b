package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/decode"
)

// TestCheckNamesThePlace: a page that holds what it cannot show is
// refused by Check, and by Write, with the place of the value in the
// page's JSON; a token of probability 0 (-Inf) is shown, not refused.
func TestCheckNamesThePlace(t *testing.T) {
	tok := func(lp float64, alts ...float64) reins.Token {
		tk := reins.Token{Token: "a", Bytes: []byte("a"), Logprob: lp}
		for _, a := range alts {
			tk.TopLogprobs = append(tk.TopLogprobs, decode.TopLogprob{Token: "b", Bytes: []byte("b"), Logprob: a})
		}
		return tk
	}
	text := Segment{Text: "The "}
	for _, c := range []struct {
		page Page
		want string
	}{
		{Page{Segments: []Segment{text, {Tokens: []reins.Token{tok(-1), tok(0.5)}}}}, "segments[1].tokens[1].logprob: 0.5: want a log-probability, at most 0"},
		{Page{Segments: []Segment{{Tokens: []reins.Token{tok(-1, -2, 3)}}}}, "segments[0].tokens[0].top_logprobs[1].logprob: 3"},
		{Page{Segments: []Segment{{Tokens: []reins.Token{{Logprob: -1, Constrained: &decode.Logprobs{Logprob: math.NaN()}}}}}}, "segments[0].tokens[0].constrained.logprob: NaN"},
		{Page{Segments: []Segment{{Text: "x", Tokens: []reins.Token{tok(-1)}}}}, "segments[0]: both text and tokens"},
		{Page{Segments: []Segment{text}, Captures: []Capture{{Name: "x", Start: 3, End: 1}}}, `captures[0] ("x"): bytes 3 to 1`},
		{Page{Segments: []Segment{text, {Tokens: []reins.Token{tok(-1)}}}, Captures: []Capture{{Name: "x", Start: 0, End: 6}}}, `captures[0] ("x"): bytes 0 to 6: want a span of the page's 5 bytes`},
		{Page{Segments: []Segment{text}, Captures: []Capture{{Name: "x", End: 1, Prob: 1.5}}}, `captures[0] ("x").prob: 1.5`},
		{Page{Segments: []Segment{text}, Captures: []Capture{{Name: "x", Start: 2, End: 4}, {Name: "y", Start: 0, End: 1}, {Name: "z", Start: 1, End: 3}}}, `captures[0] ("x") and captures[2] ("z") overlap: bytes 2 to 4 and 1 to 3`},
		{Page{Segments: []Segment{text}, Captures: []Capture{{Name: "x", Start: 0, End: 3}, {Name: "e", Start: 1, End: 1}}}, `captures[0] ("x") and captures[1] ("e") overlap`},
		{Page{Segments: []Segment{text}, Captures: []Capture{{Name: "x", End: 1, Prob: 0.5, Logprob: math.NaN()}}}, `captures[0] ("x").logprob: NaN`},
	} {
		err := c.page.Check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check: %v, want %q", err, c.want)
		}
		if err := Write(&bytes.Buffer{}, &c.page); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Write: %v, want %q", err, c.want)
		}
	}
	ok := Page{Segments: []Segment{text, {Tokens: []reins.Token{tok(math.Inf(-1), -1), tok(1e-4)}}}, Captures: []Capture{{Name: "x", Start: 4, End: 5, Prob: 1 + 1e-3, Logprob: math.Inf(-1)}, {Name: "y", Start: 5, End: 6, Prob: 1, Logprob: 1e-3}}}
	if err := ok.Check(); err != nil {
		t.Errorf("probabilities of 0 and roundings above 0 and 1: %v", err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, &ok); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if !strings.Contains(buf.String(), `"lp":null`) {
		t.Error("a log-probability of -Inf is not written as null")
	}
}

// FuzzWrite: any page JSON decodes, checks and writes without a panic,
// and Write refuses exactly the pages Check refuses.
func FuzzWrite(f *testing.F) {
	f.Add([]byte(`{"segments":[{"text":"The "},{"tokens":[{"token":"a","bytes":[97],"logprob":-0.5,"top_logprobs":[{"token":"b","bytes":[98],"logprob":-1}]}]}],"captures":[{"name":"x","start":4,"end":5,"prob":0.6}]}`))
	f.Add([]byte(`{"segments":[{"tokens":[{"token":"\u00e9","bytes":[195],"logprob":0},{"token":"","bytes":[169],"logprob":-3,"constrained":{"logprob":0}}]}],"captures":[{"name":"y","start":0,"end":2,"prob":1}]}`))
	f.Add([]byte(`{"segments":[{"text":"abc"}],"captures":[{"name":"z","start":3,"end":3,"prob":0}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p Page
		if json.Unmarshal(data, &p) != nil {
			return
		}
		checkErr := p.Check()
		writeErr := Write(io.Discard, &p)
		if (checkErr == nil) != (writeErr == nil) {
			t.Fatalf("Check: %v; Write: %v", checkErr, writeErr)
		}
	})
}

// TestWriteCaptures: every piece of text is drawn in the capture it
// falls in, with many captures in any order (one per character, given
// backwards); an edge inside a UTF-8 character splits the text at the
// next character, so the page holds valid UTF-8.
func TestWriteCaptures(t *testing.T) {
	const n = 3000
	p := Page{Segments: []Segment{{Text: strings.Repeat("ab", n/2)}}}
	for i := n - 1; i >= 0; i-- {
		p.Captures = append(p.Captures, Capture{Name: fmt.Sprintf("c%d", i), Start: i, End: i + 1, Prob: 0.5})
	}
	var buf bytes.Buffer
	if err := Write(&buf, &p); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		if !strings.Contains(buf.String(), fmt.Sprintf("c%d 50%%", i)) {
			t.Errorf("capture c%d is not drawn", i)
		}
	}
	if got := strings.Count(buf.String(), `data-cap="`); got != n {
		t.Errorf("%d captures drawn, want %d", got, n)
	}

	p = Page{Segments: []Segment{{Text: "héllo"}, {Tokens: []reins.Token{{Token: "ab", Bytes: []byte("ab"), Logprob: -1}}}},
		Captures: []Capture{{Name: "x", Start: 2, End: 4, Prob: 0.5}}}
	buf.Reset()
	if err := Write(&buf, &p); err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(buf.Bytes()) {
		t.Error("the page is not UTF-8")
	}
	if !strings.Contains(buf.String(), "é") {
		t.Error("é was split")
	}
	// The capture holds the character it starts in, and no more before.
	p = Page{Segments: []Segment{{Text: "hello wörld"}}, Captures: []Capture{{Name: "x", Start: 8, End: 11, Prob: 0.5}}}
	buf.Reset()
	if err := Write(&buf, &p); err != nil {
		t.Fatal(err)
	}
	if want := `<span class="plain">hello w</span><span class="cap" data-cap="0"><span class="label">x 50%</span><span class="plain">örl</span></span><span class="plain">d</span>`; !strings.Contains(buf.String(), want) {
		t.Errorf("the page does not hold %s", want)
	}
}

// BenchmarkWriteCaptures: a page of one capture per character; Write
// is linear in pieces and captures.
func BenchmarkWriteCaptures(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		p := Page{Segments: []Segment{{Text: strings.Repeat("a", n)}}}
		for i := range n {
			p.Captures = append(p.Captures, Capture{Name: "c", Start: i, End: i + 1, Prob: 0.5})
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if err := Write(io.Discard, &p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
