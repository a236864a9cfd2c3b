package view

import (
	"strings"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/program"
)

// FromProgram is the page of a program's run: its text, each capture's
// tokens shaded and outlined with the capture's name and probability
// (Capture.Prob: under the constrained distribution, or among a
// select's options). The captures are found in the text in order; one
// whose value the text does not hold where expected is shown as text.
func FromProgram(title string, res *program.Result) *Page {
	p := &Page{Title: title}
	if res == nil {
		return p
	}
	spans := make([]span, len(res.Captures))
	for i, c := range res.Captures {
		spans[i] = span{name: c.Name, value: c.Value, tokens: c.Tokens, prob: c.Prob, logprob: c.Logprob}
	}
	p.appendSpans(res.Text, spans)
	return p
}

// span is a value in a text and the tokens that decided it: a program's
// capture, an extracted field.
type span struct {
	name, value   string
	tokens        []reins.Token
	prob, logprob float64
}

// appendSpans adds text to the page with each span's tokens shaded and
// outlined. The spans are found in the text in order; the tokens may
// spell the end of the text before the value too (token healing, a
// select's option scored after the prompt's last token, a JSON key's
// quote) and some of the text after it. A span whose tokens do not spell
// its value where the text holds it is outlined over the value as text.
func (p *Page) appendSpans(text string, spans []span) {
	off := 0 // bytes of the page so far
	for _, s := range p.Segments {
		off += len(s.Text)
		for _, t := range s.Tokens {
			off += len(t.Bytes)
		}
	}
	plain := func(s string) {
		if s != "" {
			p.Segments = append(p.Segments, Segment{Text: s})
			off += len(s)
		}
	}
	for _, c := range spans {
		i := strings.Index(text, c.value)
		if i < 0 || c.value == "" {
			continue
		}
		var spelled strings.Builder
		for _, t := range c.tokens {
			spelled.Write(t.Bytes)
		}
		toks := spelled.String()
		before := text[:i]
		healed, found := "", false
		for k := min(len(before), len(toks)-len(c.value)); k >= 0 && !found; k-- {
			if strings.HasSuffix(before, toks[:k]) && strings.HasPrefix(toks[k:], c.value) {
				healed, found = toks[:k], true
			}
		}
		before = before[:len(before)-len(healed)]
		if !found {
			plain(before)
			p.Captures = append(p.Captures, Capture{Name: c.name, Start: off, End: off + len(c.value), Prob: c.prob, Logprob: c.logprob})
			plain(c.value)
			text = text[i+len(c.value):]
			continue
		}
		plain(before)
		start := off + len(healed)
		p.Segments = append(p.Segments, Segment{Tokens: c.tokens})
		p.Captures = append(p.Captures, Capture{Name: c.name, Start: start, End: start + len(c.value), Prob: c.prob, Logprob: c.logprob})
		off += len(toks)
		text = text[i+len(c.value):]
		// Tokens past the value (the one whose choice ended it) spell
		// the text that follows: shown once, as tokens.
		text = strings.TrimPrefix(text, toks[len(healed)+len(c.value):])
	}
	plain(text)
}
