package view

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/decode"
)

// maxLogprob is the largest log-probability a page takes: a server's
// rounding may put one a little above 0 (shown as probability 1), a
// larger one is not a log-probability.
const maxLogprob = 1e-3

// maxCaptureExcess is how far above 0 a capture's log-probability, and
// above 1 its confidence, may be: they sum or multiply many tokens', each
// of which may be a little above 0.
const maxCaptureExcess = 1e-2

// Check reports the first value of p a page cannot show, by its place in
// p's JSON (segments[2].tokens[5].top_logprobs[0].logprob): a
// log-probability above 0 or NaN, a capture's confidence outside
// [0, 1], a capture's span outside the page's text, two captures that
// overlap, a segment with both text and tokens. Rounding is allowed: a
// token's log-probability up to 1e-3, a capture's up to 1e-2 and its
// confidence up to 1.01. Write checks the page first.
func (p *Page) Check() error {
	text := 0
	for i, s := range p.Segments {
		if s.Text != "" && len(s.Tokens) > 0 {
			return fmt.Errorf("segments[%d]: both text and tokens", i)
		}
		text += len(s.Text)
		if err := CheckTokens(s.Tokens); err != nil {
			return fmt.Errorf("segments[%d].tokens%w", i, err)
		}
		for _, t := range s.Tokens {
			text += tokenLen(t)
		}
	}
	for i, c := range p.Captures {
		switch {
		case c.Start < 0 || c.End < c.Start || c.End > text:
			return fmt.Errorf("captures[%d] (%q): bytes %d to %d: want a span of the page's %d bytes of text", i, c.Name, c.Start, c.End, text)
		case !(c.Prob >= 0 && c.Prob <= 1+maxCaptureExcess):
			return fmt.Errorf("captures[%d] (%q).prob: %v: want a probability, from 0 to 1", i, c.Name, c.Prob)
		case math.IsNaN(c.Logprob) || c.Logprob > maxCaptureExcess:
			return fmt.Errorf("captures[%d] (%q).logprob: %v: want a log-probability, at most 0", i, c.Name, c.Logprob)
		}
	}
	order := captureOrder(p.Captures)
	for k := 1; k < len(order); k++ {
		a, b := order[k-1], order[k]
		if p.Captures[b].Start < p.Captures[a].End {
			a, b = min(a, b), max(a, b)
			return fmt.Errorf("captures[%d] (%q) and captures[%d] (%q) overlap: bytes %d to %d and %d to %d", a, p.Captures[a].Name, b, p.Captures[b].Name, p.Captures[a].Start, p.Captures[a].End, p.Captures[b].Start, p.Captures[b].End)
		}
	}
	return nil
}

// captureOrder returns the indexes of caps by start, then end.
func captureOrder(caps []Capture) []int {
	order := make([]int, len(caps))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(caps[a].Start, caps[b].Start), cmp.Compare(caps[a].End, caps[b].End), cmp.Compare(a, b))
	})
	return order
}

// CheckTokens reports the first log-probability of toks that is above 0
// or NaN, by its place: "[3].top_logprobs[1].logprob: ...".
func CheckTokens(toks []reins.Token) error {
	for i, t := range toks {
		if err := checkLogprob(t.Logprob); err != nil {
			return fmt.Errorf("[%d].logprob: %w", i, err)
		}
		if err := checkAlternatives(t.TopLogprobs); err != nil {
			return fmt.Errorf("[%d].top_logprobs%w", i, err)
		}
		if c := t.Constrained; c != nil {
			if err := checkLogprob(c.Logprob); err != nil {
				return fmt.Errorf("[%d].constrained.logprob: %w", i, err)
			}
			if err := checkAlternatives(c.TopLogprobs); err != nil {
				return fmt.Errorf("[%d].constrained.top_logprobs%w", i, err)
			}
		}
	}
	return nil
}

func checkAlternatives(alts decode.Alternatives) error {
	for j, a := range alts {
		if err := checkLogprob(a.Logprob); err != nil {
			return fmt.Errorf("[%d].logprob: %w", j, err)
		}
	}
	return nil
}

// checkLogprob refuses lp unless it is a log-probability: -Inf (a
// probability of 0) is one.
func checkLogprob(lp float64) error {
	if math.IsNaN(lp) || lp > maxLogprob {
		return fmt.Errorf("%v: want a log-probability, at most 0", lp)
	}
	return nil
}

// tokenLen is how many bytes of the page's text token t spells: its
// bytes, or its text when it has none.
func tokenLen(t reins.Token) int {
	if len(t.Bytes) > 0 {
		return len(t.Bytes)
	}
	return len(t.Token)
}
