package decode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"math/bits"
	"sync"

	"github.com/reins-go/reins/vocab"
)

// DefaultMaxTokens is the token budget of a generation whose options set none.
const DefaultMaxTokens = 256

// Options configures Generate, Complete and CompleteN.
type Options struct {
	// MaxTokens caps the generated tokens; 0 means DefaultMaxTokens. The
	// context window caps them too.
	MaxTokens int
	// Stop ends generation at the first occurrence of any of these
	// strings, which may straddle tokens. The stop string is not part of
	// the returned text.
	Stop []string
	// TopLogprobs is how many alternatives to report per token, from 0
	// up to the vocabulary size (not capped at 20).
	TopLogprobs int
	// Sampling configures the built-in sampler; its zero value is greedy.
	Sampling SamplingOptions
	// Sampler, when set, replaces the built-in sampler. It is shared by
	// every branch.
	Sampler Sampler
	// Constraint, when set, is called once per branch for that branch's
	// constraint, which restricts every token to what it allows: the
	// sampler sees the model's log-probabilities masked to the allowed
	// tokens and renormalised, and each token reports both views. A token
	// the constraint leaves as the only choice is appended without
	// sampling (Token.Forced) and evaluated in one batch with the next.
	// Generation ends when the constraint allows only end-of-generation;
	// an output the budget or a cancellation cut before the constraint
	// could end is an *UnfinishedError. A Budgeted constraint keeps room
	// to finish within the budget.
	Constraint func() Constraint
	// TextConstraint is the same constraint judged on bytes, for a
	// TextBackend, which has no vocabulary to mask with.
	TextConstraint func() TextConstraint
	// HealedBytes is how many bytes at the output's start spell the
	// prompt's end again (token healing takes the prompt's last token
	// back; the constraint makes the output begin with its bytes): the
	// tokens that start within them do not count against MaxTokens,
	// however many the model spells them in. LogitsBackend only.
	HealedBytes int
	// Prefill is the beginning of the output, decided before
	// generation: the model continues prompt+Prefill. A LogitsBackend
	// tokenizes the two together; a TextBackend sends Prefill as the
	// output so far (TextRequest.Output), which a chat server continues
	// as the beginning of the assistant's message. It is not part of
	// Completion.Text, and a constraint must already have consumed it.
	Prefill string
}

// maxHealedBytes bounds Options.HealedBytes: far more than a token's
// bytes.
const maxHealedBytes = 1 << 16

func (o *Options) validate(v *vocab.Vocab) error {
	if o.Constraint == nil && o.TextConstraint != nil {
		return &OptionError{"Constraint", "nil", "a logits backend needs the token-level constraint beside Options.TextConstraint"}
	}
	switch {
	case o.MaxTokens < 0:
		return &OptionError{"MaxTokens", fmt.Sprint(o.MaxTokens), "want ≥ 0"}
	case o.HealedBytes < 0 || o.HealedBytes > maxHealedBytes || o.HealedBytes > 0 && o.Constraint == nil:
		return &OptionError{"HealedBytes", fmt.Sprint(o.HealedBytes), fmt.Sprintf("want 0 to %d, and a Constraint that begins the output with them", maxHealedBytes)}
	case o.TopLogprobs < 0:
		return &OptionError{"TopLogprobs", fmt.Sprint(o.TopLogprobs), "want a count ≥ 0"}
	case o.TopLogprobs > v.Len():
		return &OptionError{"TopLogprobs", fmt.Sprint(o.TopLogprobs), fmt.Sprintf("the vocabulary has only %d tokens", v.Len())}
	}
	for i, s := range o.Stop {
		if s == "" {
			return &OptionError{fmt.Sprintf("Stop[%d]", i), `""`, "want a non-empty string"}
		}
	}
	if o.Sampler == nil {
		return o.Sampling.Validate()
	}
	return nil
}

// Finish reasons of a Completion.
const (
	FinishStop      = "stop"      // end-of-generation token, stop string, or a constraint that allows nothing more
	FinishLength    = "length"    // MaxTokens reached, or the context is full
	FinishCancelled = "cancelled" // the context.Context was cancelled
)

// Completion is the result of a finished generation.
type Completion struct {
	Text         string  `json:"text"`
	Tokens       []Token `json:"tokens"`
	FinishReason string  `json:"finish_reason"`
	PromptTokens int     `json:"prompt_tokens,omitempty"`
	// Usage is what the output cost on a TextBackend.
	Usage *Usage `json:"usage,omitempty"`
}

// Logprob returns the sum of the generated tokens' log-probabilities.
func (c *Completion) Logprob() float64 {
	var s float64
	for _, t := range c.Tokens {
		s += t.Logprob
	}
	return s
}

// run is one generation in progress, on either kind of backend.
type run interface {
	step(ctx context.Context) error // advance every live branch
	allDone() bool
	released(i int) []Token // branch i's tokens not yet streamed
	completions() []*Completion
	unfinished() error                            // after the end: the constrained outputs cut short
	failure(ctx context.Context, err error) error // what a failed step returns
}

var (
	_ run = (*generator)(nil)
	_ run = (*textRun)(nil)
)

// newRun starts a generation of n branches on b.
func newRun(b Backend, prompt string, opts Options, n int) (run, error) {
	// A failed start returns a nil run, not a typed nil in the interface.
	switch b := b.(type) {
	case LogitsBackend:
		g, err := newGenerator(b, prompt, opts, n)
		if err != nil {
			return nil, err
		}
		return g, nil
	case TextBackend:
		r, err := newTextRun(b, prompt, opts, n)
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	return nil, fmt.Errorf("backend %T is neither a LogitsBackend nor a TextBackend", b)
}

// Stream is one generation in progress: range over Tokens, then ask Err
// and Completion how it ended.
type Stream struct {
	ctx  context.Context
	r    run
	err  error
	done bool
}

// Generate starts generating after prompt; nothing is evaluated until
// Tokens is ranged over. Each token is yielded once it is certain not to
// be part of a stop string.
func Generate(ctx context.Context, b Backend, prompt string, opts Options) *Stream {
	r, err := newRun(b, prompt, opts, 1)
	return &Stream{ctx: ctx, r: r, err: err, done: err != nil}
}

// Tokens yields the generated tokens until generation ends or fails;
// then Err says whether it failed, and Completion holds the result.
func (s *Stream) Tokens() iter.Seq[Token] {
	return func(yield func(Token) bool) {
		if s.done {
			return
		}
		for !s.r.allDone() {
			if err := s.r.step(s.ctx); err != nil {
				s.err = s.r.failure(s.ctx, err)
				s.done = true
				return
			}
			for _, t := range s.r.released(0) {
				if !yield(t) {
					return
				}
			}
		}
		for _, t := range s.r.released(0) {
			if !yield(t) {
				return
			}
		}
		s.done = true
		s.err = s.r.unfinished()
	}
}

// Err returns the error that ended the stream: nil when it ended
// normally, an *UnfinishedError (errors.Is ErrUnfinished) when a
// constrained output was cut before it was complete.
func (s *Stream) Err() error { return s.err }

// Completion returns the whole generation once Tokens has ended (nil
// before, or when the options were invalid): its text, every token, and
// why it finished.
func (s *Stream) Completion() *Completion {
	if !s.done || s.r == nil {
		return nil
	}
	return s.r.completions()[0]
}

// Complete generates after prompt until a stop condition and returns the
// whole completion. When ctx is cancelled it returns what was generated so
// far, with FinishReason "cancelled", and an error that wraps ctx's.
func Complete(ctx context.Context, b Backend, prompt string, opts Options) (*Completion, error) {
	cs, err := CompleteN(ctx, b, prompt, 1, opts)
	if len(cs) == 1 {
		return cs[0], err
	}
	return nil, err
}

// CompleteN generates n continuations of one prompt, branch i sampled
// with seed opts.Sampling.Seed+i. On a LogitsBackend the prompt is
// evaluated once and shared, all branches advance together, batched, and
// n may be at most b.MaxSequences(); on a TextBackend the branches are
// asked for concurrently. The completions come back with the error, also
// when it is an *UnfinishedError (one per unfinished branch, joined).
func CompleteN(ctx context.Context, b Backend, prompt string, n int, opts Options) ([]*Completion, error) {
	r, err := newRun(b, prompt, opts, n)
	if err != nil {
		return nil, err
	}
	for !r.allDone() {
		if err := r.step(ctx); err != nil {
			err = r.failure(ctx, err)
			return r.completions(), err
		}
	}
	return r.completions(), r.unfinished()
}

// generator runs the generation loop on a LogitsBackend, for one or more
// branches of a prompt.
type generator struct {
	b         LogitsBackend
	v         *vocab.Vocab
	opts      Options
	maxStop   int
	prompt    []int
	branches  []*branch
	reqs      []EvalRequest
	lp        []float32 // scratch log-probabilities
	clp       []float32 // scratch constrained log-probabilities
	top       []int     // scratch top-N ids
	nctx      int       // the backend's ContextSize
	first     bool      // no step taken yet
	cancelled bool      // the context was cancelled
}

type branch struct {
	seq      int
	ids      []int // prompt and generated token ids
	sampler  Sampler
	text     []byte  // bytes of all generated tokens
	starts   []int   // starts[i]: offset in text of generated token i
	gen      []Token // generated tokens, released or not
	released int     // gen[:released] are released
	taken    int     // gen[:taken] were handed to the stream
	cut      int     // when stopped by a stop string, the text ends here
	done     bool
	finish   string
	con      Constraint
	bud      Budgeted  // con, when it is Budgeted
	branch   Branching // con, when it is Branching
	mask     []uint32  // the constraint's mask
	fresh    bool      // mask is that of con's current state
	sized    bool      // within is that of con's current state
	within   bool      // the budget is close: masks are filled within it (FillMaskWithin)
	maskErr  error     // the error of a mask filled during Eval
	forced   []int     // forced tokens appended to ids, awaiting evaluation
	free     int       // tokens of gen that start within Options.HealedBytes
	logits   []float32
}

func newGenerator(b LogitsBackend, prompt string, opts Options, n int) (*generator, error) {
	v := b.Vocab()
	if err := opts.validate(v); err != nil {
		return nil, err
	}
	if prompt == "" {
		return nil, errors.New("empty prompt: give at least one character")
	}
	if n < 1 {
		return nil, &OptionError{"n", fmt.Sprint(n), "want at least 1 branch"}
	}
	if n > b.MaxSequences() {
		return nil, fmt.Errorf("%d branches: %w (%d)", n, ErrTooManyBranches, b.MaxSequences())
	}
	if opts.MaxTokens == 0 {
		opts.MaxTokens = DefaultMaxTokens
	}
	toks, err := b.Tokenize(prompt+opts.Prefill, true)
	if err != nil {
		return nil, fmt.Errorf("tokenize prompt: %w", err)
	}
	if len(toks) == 0 {
		return nil, errors.New("the prompt tokenizes to no tokens (and the model adds none): nothing to condition on")
	}
	if len(toks) >= b.ContextSize() {
		return nil, fmt.Errorf("prompt is %d tokens, the context holds %d: shorten the prompt or enlarge the context", len(toks), b.ContextSize())
	}
	g := &generator{b: b, v: v, opts: opts, prompt: toks, first: true, nctx: b.ContextSize()}
	for _, s := range opts.Stop {
		g.maxStop = max(g.maxStop, len(s))
	}
	nl := b.NumLogits()
	g.lp = make([]float32, nl)
	g.top = make([]int, 0, opts.TopLogprobs)
	if opts.Constraint != nil {
		g.clp = make([]float32, nl)
	}
	// The budget bounds the capacity: MaxTokens is the caller's number.
	room := min(min(opts.MaxTokens, b.ContextSize()-len(toks))+opts.HealedBytes, b.ContextSize()-len(toks))
	for i := range n {
		br := &branch{seq: i, ids: append(make([]int, 0, len(toks)+room), toks...), cut: -1}
		br.sampler = opts.Sampler
		if br.sampler == nil {
			so := opts.Sampling
			so.Seed += uint64(i)
			if br.sampler, err = NewSampler(so); err != nil {
				return nil, err
			}
		}
		if opts.Constraint != nil {
			if br.con = opts.Constraint(); br.con == nil {
				return nil, errors.New("Options.Constraint returned nil")
			}
			br.bud, _ = br.con.(Budgeted)
			br.branch, _ = br.con.(Branching)
			br.mask = make([]uint32, maskWords(nl))
			if br.bud != nil {
				if need, r := br.bud.TokensToEnd(), g.remaining(br); need > r {
					budget := fmt.Sprintf("a budget of %d tokens", r)
					if opts.HealedBytes > 0 && r > opts.MaxTokens {
						budget = fmt.Sprintf("MaxTokens %d, with one free token for the %d healed bytes,", opts.MaxTokens, opts.HealedBytes)
					}
					return nil, &UnfinishedError{Reason: FinishLength, Detail: fmt.Sprintf("%s cannot hold the output: the shortest way to finish it takes %d", budget, need),
						Completion: &Completion{FinishReason: FinishLength, Tokens: []Token{}, PromptTokens: len(toks)}}
				}
			}
			if err := g.forceAhead(br); err != nil {
				return nil, err
			}
		}
		g.branches = append(g.branches, br)
	}
	return g, nil
}

// remaining returns how many more tokens branch br may take: what is left
// of MaxTokens and of the context. While the healed bytes are not all
// spelled, the next token is free (it starts within them): one more, a
// lower bound of the free tokens to come. A Budgeted constraint's mask
// keeps room by this count, so at a budget with no token to spare it
// spells the healed bytes in one token where the vocabulary has one
// (the shortest way), not in several free ones.
func (g *generator) remaining(br *branch) int {
	if g.opts.HealedBytes == 0 {
		return min(g.opts.MaxTokens-len(br.gen)-len(br.forced), g.nctx-len(br.ids))
	}
	used, off := len(br.gen)-br.free, len(br.text)
	for _, f := range br.forced {
		if off >= g.opts.HealedBytes {
			used++
		}
		off += len(g.v.Bytes(f))
	}
	left := g.opts.MaxTokens - used
	if off < g.opts.HealedBytes {
		left++
	}
	return min(left, g.nctx-len(br.ids))
}

// forceAhead appends the tokens the constraint leaves as the only choice,
// to be evaluated with the next step, and ends the branch when only
// end-of-generation is left.
func (g *generator) forceAhead(br *branch) error {
	for g.remaining(br) > 0 {
		if g.unforced(br) {
			return nil // no token is forced: the mask is filled during the next Eval
		}
		if err := g.fillMask(br); err != nil {
			return err
		}
		only, n, eogOnly := -1, 0, true
		for w, word := range br.mask {
			for word != 0 {
				t := w*32 + bits.TrailingZeros32(word)
				word &= word - 1
				n++
				only = t
				if !g.v.IsEOG(t) {
					eogOnly = false
				}
			}
			if n > 1 && !eogOnly {
				return nil
			}
		}
		switch {
		case n == 0:
			return g.noToken(br)
		case eogOnly:
			if len(br.forced) == 0 {
				br.finishWith(FinishStop)
			}
			return nil // finish once the forced tokens are recorded
		case n > 1:
			return nil
		}
		if err := br.con.Advance(only); err != nil {
			return fmt.Errorf("constraint refused the token it forced: %w", err)
		}
		br.advanced()
		br.forced = append(br.forced, only)
		br.ids = append(br.ids, only)
	}
	return nil
}

// noToken explains a mask that allows nothing.
func (g *generator) noToken(br *branch) error {
	if br.within {
		return fmt.Errorf("no token leaves room to finish the output within the %d tokens left: the constraint's TokensToEnd broke its promise", g.remaining(br))
	}
	return errors.New("the constraint allows no token: its state is dead")
}

func (g *generator) allDone() bool {
	for _, br := range g.branches {
		if !br.done {
			return false
		}
	}
	return true
}

// step evaluates every live branch once and advances it by one token.
func (g *generator) step(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	nl := g.b.NumLogits()
	g.reqs = g.reqs[:0]
	var live []*branch
	for i, br := range g.branches {
		if br.done {
			continue
		}
		// The first step evaluates the shared prompt once.
		if g.first && i > 0 {
			continue
		}
		live = append(live, br)
		want := 1 + len(br.forced)
		if cap(br.logits) < want*nl {
			br.logits = make([]float32, want*nl)
		}
		br.logits = br.logits[:want*nl]
		g.reqs = append(g.reqs, EvalRequest{Seq: br.seq, Tokens: br.ids, Want: want, Logits: br.logits})
	}
	// The masks the constraints will need next are filled while the
	// model evaluates, so that a constrained token costs what a free one
	// does.
	var wg sync.WaitGroup
	for _, br := range g.branches {
		if !br.done && br.con != nil && !br.fresh {
			wg.Go(func() { br.maskErr = g.fillMask(br) })
		}
	}
	err := g.b.Eval(ctx, g.reqs)
	wg.Wait()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("evaluate: %w", err)
	}
	for _, br := range g.branches {
		if err := br.maskErr; err != nil {
			br.maskErr = nil
			return err
		}
	}
	if g.first {
		g.first = false
		for _, br := range g.branches[1:] {
			br.logits = append(br.logits[:0], g.branches[0].logits...)
			live = append(live, br)
		}
	}
	for _, br := range live {
		for i, f := range br.forced {
			if br.done {
				break
			}
			if err := g.record(br, br.logits[i*nl:(i+1)*nl], f, true); err != nil {
				return err
			}
		}
		rows := len(br.forced)
		br.forced = br.forced[:0]
		if br.done {
			continue
		}
		if br.con != nil && br.con.CanEnd() {
			// forceAhead saw only end-of-generation after the forced tokens.
			if err := g.fillMask(br); err != nil {
				return err
			}
			if onlyEOG(br.mask, g.v) {
				br.finishWith(FinishStop)
				continue
			}
		}
		if err := g.advance(br, br.logits[rows*nl:(rows+1)*nl]); err != nil {
			return err
		}
	}
	return nil
}

func onlyEOG(mask []uint32, v *vocab.Vocab) bool {
	for w, word := range mask {
		for word != 0 {
			t := w*32 + bits.TrailingZeros32(word)
			word &= word - 1
			if !v.IsEOG(t) {
				return false
			}
		}
	}
	return true
}

// advance samples branch br's next token from logits and records it.
func (g *generator) advance(br *branch, logits []float32) error {
	lp := g.lp
	if math.IsNaN(LogSoftmax(lp, logits)) {
		return errors.New("the model returned no finite logits")
	}
	for id := g.v.Len(); id < len(lp); id++ {
		lp[id] = float32(math.Inf(-1)) // padding logits stand for no token
	}
	dist := lp
	if br.con != nil {
		if err := g.fillMask(br); err != nil {
			return err
		}
		if err := g.constrain(br, logits); err != nil {
			return err
		}
		dist = g.clp
	}
	id, err := g.sample(br, dist, logits)
	if err != nil {
		return err
	}
	if g.v.IsEOG(id) {
		br.finishWith(FinishStop)
		return nil
	}
	if err := g.record(br, nil, id, false); err != nil || br.done || br.con == nil {
		return err
	}
	return g.forceAhead(br)
}

// sample draws branch br's next token from dist and, under a constraint,
// advances the constraint with it. A draw that would leave a Budgeted
// constraint no room to finish is taken out of the mask and dist, and the
// draw repeated.
func (g *generator) sample(br *branch, dist, logits []float32) (int, error) {
	for {
		id, err := br.sampler.Sample(dist)
		switch {
		case err != nil:
			return 0, err
		case id < 0 || id >= len(dist):
			return 0, fmt.Errorf("sampler returned token %d, outside [0, %d)", id, len(dist))
		case math.IsInf(float64(dist[id]), -1):
			return 0, fmt.Errorf("sampler returned token %d, which has probability 0", id)
		}
		if br.con == nil {
			return id, nil
		}
		check := br.bud != nil && !br.within && !g.v.IsEOG(id)
		var mark int
		if check {
			mark = br.bud.Snapshot()
		}
		if err := br.con.Advance(id); err != nil {
			return 0, fmt.Errorf("constraint refused a token its mask allowed: %w", err)
		}
		br.advanced()
		if !check || br.bud.TokensToEnd() <= g.remaining(br)-1 {
			return id, nil
		}
		// The token leaves no room to finish: take it out and draw again.
		br.bud.Restore(mark)
		br.fresh, br.sized = true, true // the mask is the state's, less the tokens taken out
		br.mask[id/32] &^= 1 << (id % 32)
		if err := g.constrain(br, logits); err != nil {
			return 0, g.noToken(br)
		}
	}
}

// advanced marks what br knew of its constraint's state as stale.
func (br *branch) advanced() { br.fresh, br.sized = false, false }

// size decides, once per state, whether br's masks are filled within its
// budget: when what is left of the budget comes close to the tokens
// needed to finish.
func (g *generator) size(br *branch) {
	if !br.sized {
		br.within = br.bud != nil && g.remaining(br)-1 < br.bud.TokensToEnd()+budgetWindow
		br.sized = true
	}
}

// unforced reports whether br's constraint says, without a mask, that
// at least two tokens may come next, so that none is forced.
func (g *generator) unforced(br *branch) bool {
	if br.branch == nil || br.fresh {
		return false
	}
	g.size(br)
	return !br.within && br.branch.Branches()
}

// fillMask brings br.mask up to date with br's constraint, once per
// state: within the budget when the budget is close. It touches only
// br, and may run while the backend evaluates.
func (g *generator) fillMask(br *branch) error {
	if br.fresh {
		return nil
	}
	g.size(br)
	var err error
	if br.within {
		err = br.bud.FillMaskWithin(br.mask, g.remaining(br))
	} else {
		err = br.con.FillMask(br.mask)
	}
	if err != nil {
		return err
	}
	br.fresh = true
	return nil
}

// constrain fills g.clp with the log-probabilities of logits masked to
// br.mask, renormalised.
func (g *generator) constrain(br *branch, logits []float32) error {
	ninf := float32(math.Inf(-1))
	for i, x := range logits {
		if br.mask[i/32]&(1<<(i%32)) != 0 {
			g.clp[i] = x
		} else {
			g.clp[i] = ninf
		}
	}
	if math.IsNaN(LogSoftmax(g.clp, g.clp)) {
		return g.noToken(br)
	}
	return nil
}

// record appends token id to br's output with its log-probabilities.
// For a sampled token (logits nil) g.lp, and g.clp under a constraint,
// hold the distributions; for a forced one they come from logits.
func (g *generator) record(br *branch, logits []float32, id int, forced bool) error {
	lp := g.lp
	if forced {
		if math.IsNaN(LogSoftmax(lp, logits)) {
			return errors.New("the model returned no finite logits")
		}
	}
	tb := g.v.Bytes(id)
	g.top = TopN(g.top[:0], lp[:g.v.Len()], g.opts.TopLogprobs)
	tok := Token{
		ID:          id,
		Token:       string(tb),
		Bytes:       Bytes(tb),
		Logprob:     float64(lp[id]),
		TopLogprobs: topLogprobs(g.v, lp, g.top),
		Forced:      forced,
	}
	switch {
	case forced:
		tok.Constrained = &Logprobs{Logprob: 0}
		if g.opts.TopLogprobs > 0 {
			tok.Constrained.TopLogprobs = []TopLogprob{{ID: id, Token: tok.Token, Bytes: tok.Bytes, Logprob: 0}}
		}
	case br.con != nil:
		g.top = TopN(g.top[:0], g.clp[:g.v.Len()], g.opts.TopLogprobs)
		tok.Constrained = &Logprobs{Logprob: float64(g.clp[id]), TopLogprobs: topLogprobs(g.v, g.clp, g.top)}
	}
	if !forced {
		br.ids = append(br.ids, id)
	}
	if len(br.text) < g.opts.HealedBytes {
		br.free++
	}
	br.starts = append(br.starts, len(br.text))
	br.text = append(br.text, tb...)
	br.gen = append(br.gen, tok)
	g.checkStop(br, len(tb))
	if br.done {
		return nil
	}
	if len(br.gen)-br.free >= g.opts.MaxTokens || g.contextFull(br) {
		br.finishWith(FinishLength)
	}
	return nil
}

// contextFull reports whether br's prompt and recorded tokens fill the
// context. (br.ids holds the forced tokens not yet recorded too.)
func (g *generator) contextFull(br *branch) bool {
	return len(g.prompt)+len(br.gen) >= g.nctx
}

// checkStop looks for a stop string that the last token (of n bytes)
// completed, and releases the tokens that can no longer be part of one.
func (g *generator) checkStop(br *branch, n int) {
	if len(g.opts.Stop) == 0 {
		br.released = len(br.gen)
		return
	}
	from := max(0, len(br.text)-n-g.maxStop+1)
	cut := -1
	for _, s := range g.opts.Stop {
		if i := bytes.Index(br.text[from:], []byte(s)); i >= 0 && (cut < 0 || from+i < cut) {
			cut = from + i
		}
	}
	if cut >= 0 {
		br.cut = cut
		// Keep the tokens that begin before the stop string.
		keep := len(br.starts)
		for keep > 0 && br.starts[keep-1] >= cut {
			keep--
		}
		br.gen = br.gen[:keep]
		br.finishWith(FinishStop)
		return
	}
	// Hold back the longest tail that could still begin a stop string.
	hold := 0
	for _, s := range g.opts.Stop {
		for k := min(len(s)-1, len(br.text)); k > hold; k-- {
			if bytes.HasSuffix(br.text, []byte(s[:k])) {
				hold = k
				break
			}
		}
	}
	safe := len(br.text) - hold
	for br.released < len(br.gen) && br.starts[br.released]+len(br.gen[br.released].Bytes) <= safe {
		br.released++
	}
}

func (br *branch) finishWith(reason string) {
	br.done = true
	br.finish = reason
	br.released = len(br.gen)
}

// released returns branch i's tokens released since the last call.
func (g *generator) released(i int) []Token {
	br := g.branches[i]
	out := br.gen[br.taken:br.released]
	br.taken = br.released
	return out
}

func (g *generator) completions() []*Completion {
	out := make([]*Completion, len(g.branches))
	for i, br := range g.branches {
		text := br.text
		if br.cut >= 0 {
			text = text[:br.cut]
		}
		finish := br.finish
		if !br.done && g.cancelled {
			finish = FinishCancelled
		}
		out[i] = &Completion{
			Text:         string(text),
			Tokens:       br.gen[:br.released:br.released],
			FinishReason: finish,
			PromptTokens: len(g.prompt),
		}
	}
	return out
}

// unfinished returns, after generation ended, an *UnfinishedError for each
// constrained branch whose output is not complete (joined), or nil. A
// stop string that cut a constrained output leaves it to the caller to
// check the text, which may end inside a token.
func (g *generator) unfinished() error {
	var errs []error
	cs := g.completions()
	for i, br := range g.branches {
		if br.con == nil || br.con.CanEnd() || br.cut >= 0 {
			continue
		}
		what := "the token budget (MaxTokens) ran out"
		if g.contextFull(br) {
			what = "the context is full"
		}
		errs = append(errs, &UnfinishedError{Branch: i, Reason: br.finish, Detail: what + " before the constraint was satisfied", Completion: cs[i]})
	}
	return errors.Join(errs...)
}

// failure turns the error that stopped a step into what the caller gets:
// under a constraint, a cancellation is an *UnfinishedError that wraps
// the context's error.
func (g *generator) failure(ctx context.Context, err error) error {
	g.cancelled = ctx.Err() != nil
	if !g.cancelled || g.opts.Constraint == nil {
		return err
	}
	cs := g.completions()
	var errs []error
	for i, br := range g.branches {
		if !br.done || !br.con.CanEnd() {
			errs = append(errs, &UnfinishedError{Branch: i, Reason: FinishCancelled, Detail: "generation was cancelled: " + ctx.Err().Error(), Completion: cs[i], Cause: ctx.Err()})
		}
	}
	if len(errs) == 0 {
		return err
	}
	return errors.Join(errs...)
}
