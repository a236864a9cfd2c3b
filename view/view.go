// Package view writes a self-contained HTML page that shows a text token
// by token: each token shaded by its probability; hovering a token shows
// its top alternatives, and under a constraint its probability under the
// constrained distribution beside the model's; tokens the constraint
// forced are marked; captures (a program's holes, an extraction's
// fields) are outlined with their name and confidence.
//
// The page needs nothing but a browser: its style, script and data are
// inline, and it loads nothing. Write builds it from a Page; FromCompletion
// and FromScore make a Page of what Generate and Score return, and a
// program or an extraction builds one from its segments and captures.
package view

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/reins-go/reins"
)

// Page is what the viewer shows: segments of text in order, some plain
// (a prompt, a template's text) and some tokens with their
// probabilities, and captures over them.
type Page struct {
	Title    string    `json:"title,omitempty"`
	Segments []Segment `json:"segments"`
	// Captures are named spans of the page's text (the concatenation of
	// the segments' texts), outlined with their confidence. They may not
	// overlap; a capture is drawn around the tokens it touches.
	Captures []Capture `json:"captures,omitempty"`
}

// Segment is plain text (Text) or generated or scored tokens (Tokens),
// not both.
type Segment struct {
	Text   string        `json:"text,omitempty"`
	Tokens []reins.Token `json:"tokens,omitempty"`
}

// Capture is a named span of the page's text with its confidence: a
// program's capture, an extracted field.
type Capture struct {
	Name string `json:"name"`
	// Start and End are byte offsets in the page's text: the
	// concatenation of every segment's Text and tokens' bytes.
	Start int `json:"start"`
	End   int `json:"end"`
	// Prob is the confidence shown, from 0 to 1; Logprob the
	// log-probability behind it (0 when unknown).
	Prob    float64 `json:"prob"`
	Logprob float64 `json:"logprob,omitempty"`
	// Value is the captured value as the caller reports it, when it
	// differs from the text (a parsed JSON value, say).
	Value string `json:"value,omitempty"`
}

// FromCompletion is the page of a generation: the prompt, then the
// output's tokens.
func FromCompletion(title, prompt string, c *reins.Completion) *Page {
	p := &Page{Title: title}
	if prompt != "" {
		p.Segments = append(p.Segments, Segment{Text: prompt})
	}
	if c != nil {
		if c.Healed != "" && len(p.Segments) > 0 {
			// The output's tokens spell the healed bytes again.
			p.Segments[0].Text = strings.TrimSuffix(prompt, c.Healed)
		}
		p.Segments = append(p.Segments, Segment{Tokens: c.Tokens})
	}
	return p
}

// FromScore is the page of a scored text after its context.
func FromScore(title, context string, r *reins.ScoreResult) *Page {
	p := &Page{Title: title}
	if context != "" {
		p.Segments = append(p.Segments, Segment{Text: context})
	}
	if r != nil {
		p.Segments = append(p.Segments, Segment{Tokens: r.Tokens})
	}
	return p
}

// WriteFile writes the page to path.
func WriteFile(path string, p *Page) error {
	var buf bytes.Buffer
	if err := Write(&buf, p); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// piece is one drawn element: plain text, or a token (T indexes the
// data's tokens).
type piece struct {
	Plain  string
	Tok    int // index in data.Tokens, or -1
	Text   string
	Shade  template.CSS
	Forced bool
	Class  string
}

// group is a run of pieces, inside a capture or not.
type group struct {
	Cap    int // index in Captures, or -1
	Label  string
	Pieces []piece
}

// tokenData is what the page's script knows of a token.
type tokenData struct {
	Text        string    `json:"t"`
	P           float64   `json:"p"`
	Logprob     *float64  `json:"lp"`           // null for -Inf
	CP          *float64  `json:"cp,omitempty"` // constrained probability
	Forced      bool      `json:"f,omitempty"`
	Unscored    bool      `json:"u,omitempty"`
	Alts        []altData `json:"a,omitempty"`
	ConAlts     []altData `json:"ca,omitempty"`
	CaptureName string    `json:"c,omitempty"`
}

type altData struct {
	Text string  `json:"t"`
	P    float64 `json:"p"`
	ID   int     `json:"id"`
}

// Write writes the page as one HTML document.
func Write(w io.Writer, p *Page) error {
	if p == nil {
		return errors.New("view: nil page")
	}
	if err := p.Check(); err != nil {
		return fmt.Errorf("view: %w", err)
	}
	text := 0 // byte offset of the next piece
	var groups []group
	var toks []tokenData
	// Pieces come in the text's order; so do the captures, sorted (Check
	// refused overlaps), and the edges plain text is split at.
	caps := newCapCursor(p.Captures)
	type edge struct {
		at    int
		start bool // a capture's start, else its end
	}
	var edges []edge
	for _, c := range p.Captures {
		edges = append(edges, edge{c.Start, true}, edge{c.End, false})
	}
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Compare(a.at, b.at) })
	add := func(pc piece, start, end int) {
		ci := caps.at(start, end)
		if len(groups) == 0 || groups[len(groups)-1].Cap != ci {
			g := group{Cap: ci}
			if ci >= 0 {
				c := p.Captures[ci]
				g.Label = fmt.Sprintf("%s %s", c.Name, percent(min(c.Prob, 1)))
			}
			groups = append(groups, g)
		}
		groups[len(groups)-1].Pieces = append(groups[len(groups)-1].Pieces, pc)
	}
	for _, s := range p.Segments {
		if s.Text != "" {
			// Plain text is split where captures begin and end; inside a
			// character, before it for a start and after it for an end,
			// so that the capture holds the whole character.
			rest := s.Text
			for rest != "" {
				n := len(rest)
				for ; len(edges) > 0; edges = edges[1:] {
					k := edges[0].at - text
					if k <= 0 {
						continue
					}
					if k < len(rest) && !utf8.RuneStart(rest[k]) {
						for edges[0].start && k > 0 && !utf8.RuneStart(rest[k]) {
							k--
						}
						for k < len(rest) && !utf8.RuneStart(rest[k]) {
							k++
						}
					}
					if k > 0 {
						n = min(k, len(rest))
						break
					}
				}
				add(piece{Plain: strings.ToValidUTF8(rest[:n], "\uFFFD"), Tok: -1}, text, text+n)
				text += n
				rest = rest[n:]
			}
			continue
		}
		for _, t := range s.Tokens {
			td := tokenData{Text: display(t.Bytes), P: prob(t.Logprob), Forced: t.Forced, Unscored: t.Unscored}
			if !math.IsInf(t.Logprob, -1) {
				td.Logprob = &t.Logprob
			}
			if len(t.Bytes) == 0 && t.Token != "" {
				td.Text = display([]byte(t.Token))
			}
			if t.Constrained != nil {
				cp := prob(t.Constrained.Logprob)
				td.CP = &cp
				for _, a := range t.Constrained.TopLogprobs {
					td.ConAlts = append(td.ConAlts, altData{Text: display(a.Bytes), P: prob(a.Logprob), ID: a.ID})
				}
			}
			for _, a := range t.TopLogprobs {
				td.Alts = append(td.Alts, altData{Text: display(a.Bytes), P: prob(a.Logprob), ID: a.ID})
			}
			n := tokenLen(t)
			if ci := caps.at(text, text+n); ci >= 0 {
				td.CaptureName = p.Captures[ci].Name
			}
			pc := piece{Tok: len(toks), Text: td.Text, Shade: shade(td.P), Forced: t.Forced}
			switch {
			case t.Forced:
				pc.Class = "tok forced"
			case t.Unscored:
				pc.Class = "tok unscored"
				pc.Shade = ""
			default:
				pc.Class = "tok"
			}
			toks = append(toks, td)
			add(pc, text, text+n)
			text += n
		}
	}
	data, err := json.Marshal(map[string]any{"tokens": toks})
	if err != nil {
		return err
	}
	title := p.Title
	if title == "" {
		title = "reins: token probabilities"
	}
	page, err := template.New("page").Parse(pageHTML)
	if err != nil {
		return err
	}
	return page.Execute(w, map[string]any{"Title": title, "Groups": groups, "Data": template.JS(data), "Count": len(toks)})
}

// capCursor finds the capture of each piece of a page, the pieces
// taken in the text's order: in time linear in pieces and captures.
type capCursor struct {
	caps  []Capture
	order []int // indexes of caps by Start (then End)
	next  int   // order[next:] may still hold a piece
}

func newCapCursor(caps []Capture) *capCursor {
	return &capCursor{caps: caps, order: captureOrder(caps)}
}

// at returns the index of the capture the piece of bytes [start, end)
// touches (an empty piece: that it stands in), or -1. Each call's start
// is at least the last's, so a capture that ends by start is done with.
func (cc *capCursor) at(start, end int) int {
	for cc.next < len(cc.order) && cc.caps[cc.order[cc.next]].End <= start {
		cc.next++
	}
	for _, i := range cc.order[cc.next:] {
		c := cc.caps[i]
		if c.Start >= max(end, start+1) {
			break // it and the rest begin after the piece
		}
		if start < c.End && c.Start < end || start == end && c.Start <= start {
			return i
		}
	}
	return -1
}

// prob is the probability of log-probability lp, at most 1 (Check
// allows lp a little above 0).
func prob(lp float64) float64 { return min(math.Exp(lp), 1) }

// display shows a token's bytes as text, with the bytes of a character
// split across tokens, and control characters but newline and tab, as
// ‹xx›.
func display(b []byte) string {
	var s strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 || r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
			fmt.Fprintf(&s, "‹%02x›", b[0])
			b = b[1:]
			continue
		}
		s.WriteRune(r)
		b = b[n:]
	}
	return s.String()
}

// shade is a token's background: red for improbable, through yellow, to
// green for certain, on the probability's square root so that the low
// end is told apart.
func shade(p float64) template.CSS {
	if math.IsNaN(p) {
		p = 0
	}
	p = math.Max(0, math.Min(1, p))
	return template.CSS(fmt.Sprintf("background-color: hsl(%.0f, 85%%, 80%%)", 120*math.Sqrt(p)))
}

func percent(p float64) string {
	switch {
	case p >= 0.995:
		return fmt.Sprintf("%.1f%%", 100*p)
	case p >= 0.01:
		return fmt.Sprintf("%.0f%%", 100*p)
	}
	return fmt.Sprintf("%.2g%%", 100*p)
}
