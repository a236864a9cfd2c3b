package program

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/chat"
	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/vocab"
)

// RunOptions configures Run. The zero value runs greedily, heals every
// boundary, and writes role blocks in the model's chat format.
type RunOptions struct {
	// Vars are the input variables: a string for {{name}}, a []string
	// (or a []any of strings) for {{#each name}}.
	Vars map[string]any
	// Temperature is the default of holes that set none; Seed seeds
	// sampling: the i-th hole filled (from 0, gens and selects in the
	// order they run, each {{#each}} iteration's own) samples with
	// Seed+i, so a run is reproduced by its seed.
	Temperature float64
	Seed        uint64
	// TopLogprobs is how many alternatives each captured token reports.
	TopLogprobs int
	// Chat is the format of role blocks; nil asks the model (chat.For).
	Chat *chat.Format
	// NoHeal turns token healing off (for comparison: the prompt's last
	// token then stays, and a hole starts after it).
	NoHeal bool
}

// MaxSteps bounds a program once {{#each}} loops are unrolled.
const MaxSteps = 1 << 16

// Result is a program's output: the whole text, and every capture.
type Result struct {
	// Text is the filled program: literal text, inserted variables,
	// chat markers and captured values, in order.
	Text string `json:"text"`
	// Captures are in the order they were made.
	Captures []*Capture `json:"captures"`
}

// Capture returns the capture named name, or nil.
func (r *Result) Capture(name string) *Capture {
	for _, c := range r.Captures {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Capture is the value a hole took, and how sure the model was of it.
type Capture struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // "gen" or "select"
	Pos  Pos    `json:"-"`
	// Value is the captured text; JSON is the parsed value of a json or
	// schema hole (numbers as json.Number).
	Value string `json:"value"`
	JSON  any    `json:"json,omitempty"`
	// Logprob is the sum of Tokens' log-probabilities under the model;
	// Constrained the same under the constrained distribution (the
	// model's, masked to what the hole allowed and renormalised); Prob
	// is e^Constrained. For a select, Constrained is the log of the
	// option's probability among the options, and Prob that probability.
	Logprob     float64 `json:"logprob"`
	Constrained float64 `json:"constrained_logprob"`
	Prob        float64 `json:"prob"`
	// Tokens are the tokens that decided the value: those that spell any
	// of its bytes (a token across a boundary included) and, for a
	// gen that ends where literal text begins on a token boundary, the
	// token after it, whose choice ended the value. For a select: the
	// chosen option's tokens, with those of the text that follows it.
	Tokens []reins.Token `json:"tokens"`
	// Options is, for a select, every option with its probability, in
	// the order given.
	Options []reins.Option `json:"options,omitempty"`
	// Healed is the text token healing took back from the prompt before
	// the hole (the hole's first token spells it again).
	Healed string `json:"healed,omitempty"`

	call *reins.Completion // the generation that filled a gen
}

// Run runs the program on model m: literal text and variables become
// prompt text, each gen is generated under its constraint, each select
// scored in full; the result comes back with every capture. An error
// from a hole is an *Error with the hole's position (wrapping the cause:
// errors.Is(err, reins.ErrUnfinished) when a budget cut it), and the
// result so far comes back with it. opts may be nil.
func (p *Program) Run(ctx context.Context, m *reins.Model, opts *RunOptions) (*Result, error) {
	if opts == nil {
		opts = &RunOptions{}
	}
	r := &runner{p: p, m: m, opts: opts, values: map[string]string{}}
	if p.roles {
		r.chat = opts.Chat
		if r.chat == nil {
			var err error
			if r.chat, err = chat.For(m.Backend()); errors.Is(err, chat.ErrUnknownTemplate) {
				err = fmt.Errorf("program: %w: set RunOptions.Chat", err)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	if err := r.expand(p.nodes, nil); err != nil {
		return nil, err
	}
	if v := m.Vocab(); v != nil {
		r.v = v
		if err := checkMarkerTokens(m, r.chat); err != nil {
			return nil, err
		}
	}
	return r.run(ctx)
}

// checkMarkerTokens checks that a local model tokenizes each special
// marker of the chat format f as its special token, not as text (a
// backend not wrapped with chat.SpecialTokens).
func checkMarkerTokens(m *reins.Model, f *chat.Format) error {
	if f == nil || !f.Special {
		return nil
	}
	ids, err := f.MarkerIDs(m.Vocab())
	if err != nil {
		return fmt.Errorf("program: %w", err)
	}
	for _, mk := range f.Markers() {
		toks, err := m.Tokenize(mk, false)
		if err != nil {
			return fmt.Errorf("program: tokenize the chat marker %q: %w", mk, err)
		}
		if len(toks) != 1 || toks[0] != ids[mk] {
			return fmt.Errorf("program: the backend tokenizes the chat marker %q of format %s as text (%d tokens), not as its special token %d: wrap it with chat.SpecialTokens", mk, f.Name, len(toks), ids[mk])
		}
	}
	return nil
}

// stepKind is what a step of an unrolled program does.
type stepKind uint8

const (
	stepText   stepKind = iota // literal text (text)
	stepRef                    // an earlier capture's value (ref)
	stepGen                    // a gen (gen), captured as name
	stepSelect                 // a select (sel), captured as name
	stepMarker                 // a chat marker (text); hard: a boundary no hole crosses
)

type step struct {
	kind stepKind
	pos  Pos
	text string
	ref  string
	name string
	hard bool
	gen  *Gen
	sel  *Select
}

// scope is one {{#each}} iteration.
type scope struct {
	this    string
	index   int
	suffix  string            // [i] per enclosing loop
	renamed map[string]string // captures of the body made so far: name → name[i]
}

type runner struct {
	p      *Program
	m      *reins.Model
	v      *vocab.Vocab
	opts   *RunOptions
	chat   *chat.Format
	steps  []step
	made   map[string]bool // captures unrolled so far (full names)
	values map[string]string
}

// expand unrolls nodes into r.steps, resolving every name.
func (r *runner) expand(nodes []Node, sc *scope) error {
	if r.made == nil {
		r.made = map[string]bool{}
	}
	for _, n := range nodes {
		if len(r.steps) >= MaxSteps {
			return errorf(n.Position(), KindLimit, "the program unrolls to more than MaxSteps (%d) steps", MaxSteps)
		}
		switch n := n.(type) {
		case *Text:
			r.steps = append(r.steps, step{kind: stepText, pos: n.Pos, text: n.Text})
		case *Var:
			st, err := r.resolve(n, sc)
			if err != nil {
				return err
			}
			r.steps = append(r.steps, st)
		case *Gen:
			r.steps = append(r.steps, step{kind: stepGen, pos: n.Pos, gen: n, name: r.name(n.Name, sc)})
		case *Select:
			r.steps = append(r.steps, step{kind: stepSelect, pos: n.Pos, sel: n, name: r.name(n.Name, sc)})
		case *Role:
			i := chat.Role(n.Role)
			r.steps = append(r.steps, step{kind: stepMarker, pos: n.Pos, text: r.chat.Start[i], hard: r.chat.Special})
			if err := r.expand(n.Body, sc); err != nil {
				return err
			}
			r.steps = append(r.steps, step{kind: stepMarker, pos: n.Pos, text: r.chat.End[i], hard: r.chat.Special})
		case *Each:
			items, err := r.list(n)
			if err != nil {
				return err
			}
			for i, it := range items {
				inner := &scope{this: it, index: i, suffix: "[" + strconv.Itoa(i) + "]", renamed: map[string]string{}}
				if sc != nil {
					inner.suffix = sc.suffix + inner.suffix
				}
				if err := r.expand(n.Body, inner); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// name returns the full name of a capture made in scope sc.
func (r *runner) name(base string, sc *scope) string {
	full := base
	if sc != nil {
		full = base + sc.suffix
		sc.renamed[base] = full
	}
	r.made[full] = true
	return full
}

func (r *runner) resolve(v *Var, sc *scope) (step, error) {
	st := step{kind: stepText, pos: v.Pos}
	switch {
	case v.Name == "this" || v.Name == "@index":
		if sc == nil {
			return st, errorf(v.Pos, KindName, "{{%s}} outside {{#each}}", v.Name)
		}
		st.text = sc.this
		if v.Name == "@index" {
			st.text = strconv.Itoa(sc.index)
		}
		return st, nil
	case sc != nil && sc.renamed[v.Name] != "":
		st.kind, st.ref = stepRef, sc.renamed[v.Name]
		return st, nil
	case r.made[v.Name]:
		st.kind, st.ref = stepRef, v.Name
		return st, nil
	}
	val, ok := r.opts.Vars[v.Name]
	if !ok {
		return st, errorf(v.Pos, KindName, "unknown name %q: neither an input variable nor a capture made before it", v.Name)
	}
	s, ok := val.(string)
	if !ok {
		return st, errorf(v.Pos, KindName, "variable %q is a %T; {{%s}} wants a string", v.Name, val, v.Name)
	}
	if err := r.checkMarkers(v.Pos, "variable "+strconv.Quote(v.Name), s); err != nil {
		return st, err
	}
	st.text = s
	return st, nil
}

// list returns the items of an {{#each}}'s list variable.
func (r *runner) list(e *Each) ([]string, error) {
	val, ok := r.opts.Vars[e.List]
	if !ok {
		return nil, errorf(e.Pos, KindName, "unknown list variable %q", e.List)
	}
	var items []string
	switch val := val.(type) {
	case []string:
		items = val
	case []any:
		for i, x := range val {
			s, ok := x.(string)
			if !ok {
				return nil, errorf(e.Pos, KindName, "list variable %q: item %d is a %T, not a string", e.List, i, x)
			}
			items = append(items, s)
		}
	default:
		return nil, errorf(e.Pos, KindName, "variable %q is a %T; {{#each}} wants a list of strings", e.List, val)
	}
	for i, it := range items {
		if err := r.checkMarkers(e.Pos, fmt.Sprintf("item %d of %q", i, e.List), it); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// checkMarkers refuses text that holds a special chat marker, which the
// prompt would turn into a special token.
func (r *runner) checkMarkers(pos Pos, what, s string) error {
	if r.chat == nil || !r.chat.Special {
		return nil
	}
	for _, mk := range r.chat.Markers() {
		if strings.Contains(s, mk) {
			return errorf(pos, KindName, "%s contains the chat marker %q", what, mk)
		}
	}
	return nil
}

func (r *runner) run(ctx context.Context) (*Result, error) {
	res := &Result{}
	var text strings.Builder
	for i, st := range r.steps {
		switch st.kind {
		case stepText, stepMarker:
			text.WriteString(st.text)
		case stepRef:
			text.WriteString(r.values[st.ref])
		case stepGen, stepSelect:
			var c *Capture
			var err error
			follow := r.following(i + 1)
			hole := uint64(len(res.Captures)) // the holes filled before this one
			if st.kind == stepGen {
				c, err = r.gen(ctx, text.String(), st, follow, hole)
			} else {
				c, err = r.choose(ctx, text.String(), st, follow, hole)
			}
			if err == nil {
				err = r.checkMarkers(st.pos, "capture "+strconv.Quote(st.name), c.Value)
			}
			if err != nil {
				res.Text = text.String()
				var pe *Error
				if errors.As(err, &pe) {
					return res, err
				}
				return res, &Error{Pos: st.pos, Kind: KindRun, Msg: fmt.Sprintf("%s %q", c0(st), st.name), Err: err}
			}
			c.Name, c.Pos = st.name, st.pos
			r.values[st.name] = c.Value
			res.Captures = append(res.Captures, c)
			text.WriteString(c.Value)
		}
	}
	res.Text = text.String()
	return res, nil
}

func c0(st step) string {
	if st.kind == stepGen {
		return "gen"
	}
	return "select"
}

// maxFollow bounds the literal text after a hole that its boundary and
// a select's Then are taken from.
const maxFollow = 256

// following returns the literal text that comes after step i up to the
// next hole or hard marker (at most maxFollow bytes, cut at a character
// boundary).
func (r *runner) following(i int) string {
	var b strings.Builder
	for ; i < len(r.steps) && b.Len() < maxFollow; i++ {
		st := r.steps[i]
		switch {
		case st.kind == stepText, st.kind == stepMarker && !st.hard:
			b.WriteString(st.text)
		case st.kind == stepRef:
			b.WriteString(r.values[st.ref])
		default:
			i = len(r.steps)
		}
	}
	return cutUTF8(b.String(), maxFollow)
}

func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// maxBoundary bounds the literal text a gen's constraint ends with.
const maxBoundary = 64

// boundary returns the beginning of the literal text after a gen that
// its constraint ends with: the longest token of the vocabulary that
// begins it (so that the model can end the value with the token it
// would use there, possibly one that also spells the value's last
// bytes), or on a server, whose vocabulary reins does not know, its
// first word (leading white space, then letters and digits) or first
// character.
func (r *runner) boundary(follow string) string {
	if follow == "" {
		return ""
	}
	if r.v != nil {
		best := ""
		for id := range r.v.Len() {
			switch r.v.Kind(id) {
			case vocab.KindNormal, vocab.KindByte, vocab.KindUserDefined:
			default:
				continue
			}
			t := r.v.Bytes(id)
			if len(t) > len(best) && len(t) <= maxBoundary && strings.HasPrefix(follow, string(t)) {
				best = string(t)
			}
		}
		if best != "" && utf8.ValidString(best) {
			return best
		}
	}
	i := 0
	for i < len(follow) && (follow[i] == ' ' || follow[i] == '\t' || follow[i] == '\n') {
		i++
	}
	j := i
	for j < len(follow) {
		c, n := utf8.DecodeRuneInString(follow[j:])
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			break
		}
		j += n
	}
	if j == i && j < len(follow) {
		_, n := utf8.DecodeRuneInString(follow[j:])
		j += n
	}
	return cutUTF8(follow[:j], maxBoundary)
}

// constraint returns the constraint of gen g's value followed by
// boundary, compiled once per Program.
func (r *runner) constraint(g *Gen, h *hole, boundary string) (*reins.Constraint, error) {
	key := boundKey{g, boundary}
	r.p.mu.Lock()
	c, ok := r.p.cache[key]
	r.p.mu.Unlock()
	if ok {
		return c, nil
	}
	gr := h.g
	if boundary != "" {
		start := "program.hole"
		for gr.Rule(start) != nil {
			start += "_"
		}
		gr = &grammar.Grammar{Start: start, File: h.g.File, Rules: append([]grammar.Rule{{Name: start,
			Body: grammar.Seq(grammar.Ref(h.g.Start), &grammar.Node{Op: grammar.OpBytes, Leaf: &grammar.Leaf{Bytes: []byte(boundary)}})}}, h.g.Rules...)}
	}
	c, err := reins.FromGrammar(gr)
	if err != nil {
		return nil, err
	}
	r.p.mu.Lock()
	if r.p.cache == nil {
		r.p.cache = map[boundKey]*reins.Constraint{}
	}
	if len(r.p.cache) < maxCache {
		r.p.cache[key] = c
	}
	r.p.mu.Unlock()
	return c, nil
}

// gen fills a gen: one generation after prompt whose constraint is the
// hole's language followed by the boundary (the start of the literal
// text after it), with the prompt's last token healed.
func (r *runner) gen(ctx context.Context, prompt string, st step, follow string, index uint64) (*Capture, error) {
	g := st.gen
	h := r.p.holes[g]
	o := &g.GenOptions
	budget := o.MaxTokens
	if budget == 0 {
		budget = DefaultGenTokens
	}
	// The generation may spend a token more after the value: the start
	// of the text after the hole, which ends a constrained value. (The
	// tokens that spell the healed bytes again do not count, in Generate.)
	slack := 0
	if h.g != nil && r.boundary(follow) != "" {
		slack++
	}
	opts := reins.Options{MaxTokens: budget + slack, TopLogprobs: r.opts.TopLogprobs, Temperature: r.opts.Temperature,
		TopK: o.TopK, TopP: o.TopP, MinP: o.MinP, Seed: r.opts.Seed + index, Stop: o.Stop}
	if o.Temperature != nil {
		opts.Temperature = *o.Temperature
	}
	boundary := ""
	if h.g != nil {
		boundary = r.boundary(follow)
		c, err := r.constraint(g, h, boundary)
		if err != nil {
			return nil, &Error{Pos: g.Pos, Kind: KindConstraint, Msg: fmt.Sprintf("gen %q", g.Name), Err: err}
		}
		opts.Constraint = c
	}
	opts.Heal = !r.opts.NoHeal // Generate does not heal where a stop string could begin in the healed bytes
	out, err := r.m.Generate(ctx, prompt, opts)
	if err != nil {
		return nil, err
	}
	value, ok := strings.CutSuffix(out.Text, boundary)
	if !ok {
		return nil, fmt.Errorf("reins bug: the output %q does not end with the boundary %q", out.Text, boundary)
	}
	c := &Capture{Kind: "gen", Value: value, Healed: out.Healed, call: out}
	if h.isJS {
		if h.json != nil {
			if err := h.json.Validate([]byte(value)); err != nil {
				return nil, fmt.Errorf("reins bug: the value fails its %s: %w", h.desc, err)
			}
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(value)))
		dec.UseNumber()
		if err := dec.Decode(&c.JSON); err != nil {
			return nil, fmt.Errorf("reins bug: the value is not JSON: %w", err)
		}
	}
	start := len(out.Healed)
	c.Tokens = ValueTokens(out.Tokens, start, start+len(value), boundary != "")
	if len(c.Tokens) == 0 && out.FinishReason == decode.FinishLength {
		// Nothing decided the empty value: no room was left in the
		// context (the tokens that spell the healed bytes again do not
		// count against max_tokens).
		return nil, errors.New("the output ended for length before a token of its value: the model's context is full")
	}
	c.sum()
	return c, nil
}

// sum sets the capture's logprobs and probability from its tokens.
func (c *Capture) sum() {
	c.Logprob, c.Constrained = 0, 0
	for _, t := range c.Tokens {
		c.Logprob += t.Logprob
		if t.Constrained != nil {
			c.Constrained += t.Constrained.Logprob
		} else {
			c.Constrained += t.Logprob
		}
	}
	c.Prob = math.Exp(c.Constrained)
}

// ValueTokens returns the tokens that decided the bytes [start, end) of
// the text that toks spell: those that spell any of them and, with
// extendable (the value could have gone on) when end falls between two
// tokens, the token after end, whose choice ended the value. An empty
// value is decided by the token that spells the byte after it.
func ValueTokens(toks []reins.Token, start, end int, extendable bool) []reins.Token {
	first, last, off := -1, -1, 0
	for i, t := range toks {
		s, e := off, off+len(t.Bytes)
		off = e
		spells := s < end && e > start
		if start == end {
			spells = s <= start && e > start
		}
		if spells {
			if first < 0 {
				first = i
			}
			last = i
			continue
		}
		if s >= end && first >= 0 {
			if extendable && s == end && start < end {
				last = i
			}
			break
		}
	}
	if first < 0 {
		return nil
	}
	return toks[first : last+1]
}

// choose fills a select: every option scored in full after prompt,
// followed by the text after it up to the end of its line, with the
// prompt's last token healed.
func (r *runner) choose(ctx context.Context, prompt string, st step, follow string, index uint64) (*Capture, error) {
	s := st.sel
	then := follow
	if i := strings.IndexByte(then, '\n'); i >= 0 {
		then = then[:i+1]
	}
	opts := reins.ChooseOptions{Temperature: r.opts.Temperature, Seed: r.opts.Seed + index, Then: then,
		TopLogprobs: r.opts.TopLogprobs, Heal: !r.opts.NoHeal}
	if s.Temperature != nil {
		opts.Temperature = *s.Temperature
	}
	sel, err := r.m.Choose(ctx, prompt, s.Options, opts)
	if err != nil {
		return nil, err
	}
	o := sel.Options[sel.Index]
	return &Capture{Kind: "select", Value: sel.Choice, Logprob: o.Logprob, Constrained: math.Log(o.Prob), Prob: o.Prob,
		Tokens: o.Tokens, Options: sel.Options}, nil
}
