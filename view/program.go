package view

import (
	"strings"

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
	text, off := res.Text, 0 // off: bytes of the page so far
	plain := func(s string) {
		if s != "" {
			p.Segments = append(p.Segments, Segment{Text: s})
			off += len(s)
		}
	}
	for _, c := range res.Captures {
		i := strings.Index(text, c.Value)
		if i < 0 || c.Value == "" {
			continue
		}
		var spelled strings.Builder
		for _, t := range c.Tokens {
			spelled.Write(t.Bytes)
		}
		toks := spelled.String()
		before := text[:i]
		// The tokens may spell the end of the text before the value
		// too (token healing; a select's option scored after the
		// prompt's last token): the longest such start.
		healed, found := "", false
		for k := min(len(before), len(toks)-len(c.Value)); k >= 0 && !found; k-- {
			if strings.HasSuffix(before, toks[:k]) && strings.HasPrefix(toks[k:], c.Value) {
				healed, found = toks[:k], true
			}
		}
		before = before[:len(before)-len(healed)]
		if !found {
			// The tokens do not spell the value here: the value as text.
			plain(before)
			p.Captures = append(p.Captures, Capture{Name: c.Name, Start: off, End: off + len(c.Value), Prob: c.Prob, Logprob: c.Logprob})
			plain(c.Value)
			text = text[i+len(c.Value):]
			continue
		}
		plain(before)
		start := off + len(healed)
		p.Segments = append(p.Segments, Segment{Tokens: c.Tokens})
		p.Captures = append(p.Captures, Capture{Name: c.Name, Start: start, End: start + len(c.Value), Prob: c.Prob, Logprob: c.Logprob})
		off += len(toks)
		text = text[i+len(c.Value):]
		// Tokens past the value (the one whose choice ended it) spell
		// the text that follows: shown once, as tokens.
		text = strings.TrimPrefix(text, toks[len(healed)+len(c.Value):])
	}
	plain(text)
	return p
}
