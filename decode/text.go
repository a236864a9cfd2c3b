package decode

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
)

// TextBackend is a server that continues text and returns each token
// with its log-probability and at most Capabilities().TopLogprobs
// alternatives. It must be safe for concurrent use.
type TextBackend interface {
	Backend
	// Continue continues req.Prompt.
	Continue(ctx context.Context, req TextRequest) (*TextResponse, error)
}

// TextRequest asks a TextBackend to continue a text.
type TextRequest struct {
	Prompt      string
	MaxTokens   int
	TopLogprobs int
	Sampling    SamplingOptions
	Stop        []string
	// Bias adds to the logits of tokens by id, for a backend whose
	// Capabilities say Bias (OpenAI's logit_bias: -100 bans a token).
	Bias map[int]float64
}

// TextResponse is what a TextBackend returns: the tokens it generated,
// each with its alternatives (IDs are -1 where the server does not say),
// and whether it stopped by itself (end of generation or a stop string:
// FinishStop) or at MaxTokens (FinishLength).
type TextResponse struct {
	Tokens       []Token
	FinishReason string
}

// PromptScorer is a TextBackend that can score a given text after a
// prompt (Capabilities().Echo), as Score does.
type PromptScorer interface {
	ScorePrompt(ctx context.Context, prompt, text string, topN int) (*ScoreResult, error)
}

// TextConstraint is a constraint for a TextBackend, judged on bytes:
// there is no vocabulary to mask with. It holds one output's state and
// is not safe for concurrent use.
type TextConstraint interface {
	// Accept consumes text when the language allows it to continue the
	// output, and reports false, changing nothing, when it does not.
	Accept(text []byte) bool
	// Mark returns a mark for Undo, which returns to it.
	Mark() int
	Undo(mark int)
	// CanEnd reports whether the output so far is complete.
	CanEnd() bool
	// Forced returns the bytes that are the only way on from here.
	Forced() []byte
	// Expected describes what may come next, for errors.
	Expected() string
}

// Usage counts what a generation on a TextBackend cost.
type Usage struct {
	Requests  int `json:"requests"`  // requests to the server
	Generated int `json:"generated"` // tokens the server generated
	Kept      int `json:"kept"`      // of those, tokens kept in the output
	Forced    int `json:"forced"`    // pieces of text the constraint forced, unasked
	Refused   int `json:"refused"`   // tokens the constraint refused
}

// Chunks of tokens asked for at once under a constraint: the first
// request asks textChunk; a chunk kept whole doubles the next (up to
// maxTextChunk), a refusal halves it.
const (
	textChunk    = 16
	maxTextChunk = 256
	// maxStalls bounds the round trips in a row that add nothing to a
	// constrained output before it fails.
	maxStalls = 4
)

// textRun is a generation on a TextBackend: one or more branches, each
// asked for in turn, concurrently.
type textRun struct {
	b        TextBackend
	opts     Options
	prompt   string
	topK     int
	branches []*textBranch
	maxStop  int
}

type textBranch struct {
	seed   uint64
	con    TextConstraint
	text   []byte
	starts []int
	gen    []Token
	taken  int
	cut    int
	done   bool
	finish string
	chunk  int
	stalls int
	usage  Usage
	err    error
}

func newTextRun(b TextBackend, prompt string, opts Options, n int) (*textRun, error) {
	if err := opts.validateText(b.Capabilities()); err != nil {
		return nil, err
	}
	if prompt == "" {
		return nil, errors.New("empty prompt: give at least one character")
	}
	if n < 1 {
		return nil, &OptionError{"n", fmt.Sprint(n), "want at least 1 branch"}
	}
	if opts.MaxTokens == 0 {
		opts.MaxTokens = DefaultMaxTokens
	}
	r := &textRun{b: b, opts: opts, prompt: prompt}
	for _, s := range opts.Stop {
		r.maxStop = max(r.maxStop, len(s))
	}
	if opts.TextConstraint != nil || opts.TopLogprobs > 0 {
		r.topK = max(opts.TopLogprobs, b.Capabilities().TopLogprobs)
		if opts.TextConstraint == nil {
			r.topK = opts.TopLogprobs
		}
	}
	for i := range n {
		br := &textBranch{seed: opts.Sampling.Seed + uint64(i), cut: -1, chunk: textChunk}
		if opts.TextConstraint != nil {
			if br.con = opts.TextConstraint(); br.con == nil {
				return nil, errors.New("Options.TextConstraint returned nil")
			}
		}
		r.branches = append(r.branches, br)
	}
	return r, nil
}

func (o *Options) validateText(c Capabilities) error {
	switch {
	case o.MaxTokens < 0:
		return &OptionError{"MaxTokens", fmt.Sprint(o.MaxTokens), "want ≥ 0"}
	case o.TopLogprobs < 0 || o.TopLogprobs > c.TopLogprobs:
		return &OptionError{"TopLogprobs", fmt.Sprint(o.TopLogprobs), fmt.Sprintf("the server returns 0 to %d alternatives", c.TopLogprobs)}
	case o.Sampler != nil:
		return &OptionError{"Sampler", "set", "a text backend samples on the server: leave it nil"}
	case o.Constraint != nil && o.TextConstraint == nil:
		return &OptionError{"TextConstraint", "nil", "a text backend needs a constraint on bytes beside Options.Constraint"}
	}
	for i, s := range o.Stop {
		if s == "" {
			return &OptionError{fmt.Sprintf("Stop[%d]", i), `""`, "want a non-empty string"}
		}
	}
	return o.Sampling.Validate()
}

func (r *textRun) allDone() bool {
	for _, br := range r.branches {
		if !br.done {
			return false
		}
	}
	return true
}

// step asks the server once for every live branch, concurrently.
func (r *textRun) step(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, br := range r.branches {
		if !br.done {
			wg.Go(func() { br.err = r.roundTrip(ctx, br) })
		}
	}
	wg.Wait()
	var errs []error
	for _, br := range r.branches {
		if br.err != nil {
			errs = append(errs, br.err)
			br.err = nil
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.Join(errs...)
}

// roundTrip asks the server to continue branch br's output, keeps the
// longest part of the answer the constraint allows, and in place of the
// first refused token the likeliest allowed alternative or, failing
// that, the bytes the constraint forces.
func (r *textRun) roundTrip(ctx context.Context, br *textBranch) error {
	left := r.opts.MaxTokens - len(br.gen)
	want := left
	if br.con != nil {
		want = min(left, br.chunk)
	}
	req := TextRequest{Prompt: r.prompt + string(br.text), MaxTokens: want, TopLogprobs: r.topK, Sampling: r.opts.Sampling, Stop: r.opts.Stop}
	req.Sampling.Seed = br.seed + uint64(br.usage.Requests)
	resp, err := r.b.Continue(ctx, req)
	br.usage.Requests++
	if err != nil {
		return fmt.Errorf("request %d: %w", br.usage.Requests, err)
	}
	if len(resp.Tokens) > want {
		return fmt.Errorf("the server returned %d tokens, %d were asked for", len(resp.Tokens), want)
	}
	br.usage.Generated += len(resp.Tokens)
	kept, refused := 0, false
	for _, t := range resp.Tokens {
		if err := checkToken(t); err != nil {
			return err
		}
		if br.con == nil {
			r.keep(br, t)
			kept++
			continue
		}
		if tok, ok := r.allowed(br, t); ok {
			r.keep(br, tok)
			kept++
			continue
		}
		refused = true
		br.usage.Refused++
		if alt, ok := r.bestAlternative(br, t); ok {
			r.keep(br, alt)
			kept++
		} else if f := br.con.Forced(); len(f) > 0 {
			r.keepForced(br, f)
			kept++
		} else if br.con.CanEnd() {
			// The model wanted more than the language allows, and the
			// output may end here: it ends.
			br.finishWith(FinishStop)
			return nil
		}
		break
	}
	if br.done {
		return nil
	}
	switch {
	case !refused && resp.FinishReason == FinishStop && len(resp.Tokens) < want:
		// The server ended the output by itself.
		if br.con == nil || br.con.CanEnd() {
			br.finishWith(FinishStop)
			return nil
		}
		if f := br.con.Forced(); len(f) > 0 {
			r.keepForced(br, f)
			kept++
		}
	case refused:
		br.chunk = max(1, br.chunk/2)
	case kept == want:
		br.chunk = min(maxTextChunk, 2*br.chunk)
	}
	if kept == 0 {
		br.stalls++
		if br.stalls >= maxStalls {
			return fmt.Errorf("the server's answers left the constraint after %d bytes of output %d times in a row, with no allowed alternative among its top %d tokens and nothing forced; expected %s", len(br.text), br.stalls, r.topK, br.con.Expected())
		}
	} else {
		br.stalls = 0
	}
	if len(br.gen) >= r.opts.MaxTokens {
		br.finishWith(FinishLength)
	}
	return nil
}

// checkToken refuses a token whose text and bytes disagree.
func checkToken(t Token) error {
	if t.Token != string(t.Bytes) {
		return fmt.Errorf("the server's token %q does not match its bytes %v", t.Token, []byte(t.Bytes))
	}
	if math.IsNaN(t.Logprob) || t.Logprob > 1e-6 {
		return fmt.Errorf("the server's token %q has log-probability %v", t.Token, t.Logprob)
	}
	return nil
}

// allowed advances br's constraint by t when the language allows it, and
// returns t with its constrained log-probabilities.
func (r *textRun) allowed(br *textBranch, t Token) (Token, bool) {
	alts := r.allowedAlternatives(br, t)
	if !br.con.Accept(t.Bytes) {
		return t, false
	}
	t.Constrained = renormalise(t, alts)
	return t, true
}

// allowedAlternatives returns the alternatives at t's position that the
// constraint allows.
func (r *textRun) allowedAlternatives(br *textBranch, t Token) []TopLogprob {
	var out []TopLogprob
	for _, a := range t.TopLogprobs {
		mark := br.con.Mark()
		if br.con.Accept(a.Bytes) {
			out = append(out, a)
		}
		br.con.Undo(mark)
	}
	return out
}

// bestAlternative advances br's constraint by the likeliest alternative
// at refused token t's position that the constraint allows.
func (r *textRun) bestAlternative(br *textBranch, t Token) (Token, bool) {
	alts := r.allowedAlternatives(br, t)
	best := -1
	for i, a := range alts {
		if best < 0 || a.Logprob > alts[best].Logprob {
			best = i
		}
	}
	if best < 0 || !br.con.Accept(alts[best].Bytes) {
		return Token{}, false
	}
	a := alts[best]
	tok := Token{ID: a.ID, Token: a.Token, Bytes: a.Bytes, Logprob: a.Logprob, TopLogprobs: t.TopLogprobs}
	tok.Constrained = renormalise(tok, alts)
	return tok, true
}

// renormalise gives token t's constrained log-probabilities: over the
// allowed alternatives the server returned (and t itself).
func renormalise(t Token, allowed []TopLogprob) *Logprobs {
	seen := false
	z := math.Inf(-1)
	for _, a := range allowed {
		z = logAddExp(z, a.Logprob)
		if string(a.Bytes) == string(t.Bytes) {
			seen = true
		}
	}
	if !seen {
		z = logAddExp(z, t.Logprob)
	}
	out := &Logprobs{Logprob: t.Logprob - z, TopK: true}
	mass := 0.0
	inTop := false
	for _, a := range t.TopLogprobs {
		mass += math.Exp(a.Logprob)
		if string(a.Bytes) == string(t.Bytes) {
			inTop = true
		}
	}
	if !inTop {
		mass += math.Exp(t.Logprob)
	}
	if len(t.TopLogprobs) > 0 {
		out.Unseen = max(0, 1-mass)
	}
	for _, a := range allowed {
		a.Logprob -= z
		out.TopLogprobs = append(out.TopLogprobs, a)
	}
	return out
}

func logAddExp(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(a, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// keep appends token t to br's output.
func (r *textRun) keep(br *textBranch, t Token) {
	br.usage.Kept++
	r.append(br, t)
}

// keepForced appends text the constraint forces, which the server was
// not asked about.
func (r *textRun) keepForced(br *textBranch, f []byte) {
	if !br.con.Accept(f) {
		return // unreachable: forced bytes are allowed
	}
	br.usage.Forced++
	r.append(br, Token{ID: -1, Token: string(f), Bytes: Bytes(f), Forced: true, Unscored: true,
		Constrained: &Logprobs{Logprob: 0}})
}

func (r *textRun) append(br *textBranch, t Token) {
	br.starts = append(br.starts, len(br.text))
	br.text = append(br.text, t.Bytes...)
	br.gen = append(br.gen, t)
	if len(r.opts.Stop) == 0 {
		return
	}
	from := max(0, len(br.text)-len(t.Bytes)-r.maxStop+1)
	for _, s := range r.opts.Stop {
		if i := strings.Index(string(br.text[from:]), s); i >= 0 && (br.cut < 0 || from+i < br.cut) {
			br.cut = from + i
		}
	}
	if br.cut >= 0 {
		keep := len(br.starts)
		for keep > 0 && br.starts[keep-1] >= br.cut {
			keep--
		}
		br.gen = br.gen[:keep]
		br.finishWith(FinishStop)
	}
}

func (br *textBranch) finishWith(reason string) {
	br.done, br.finish = true, reason
}

func (r *textRun) completions() []*Completion {
	out := make([]*Completion, len(r.branches))
	for i, br := range r.branches {
		text := br.text
		if br.cut >= 0 {
			text = text[:br.cut]
		}
		usage := br.usage
		out[i] = &Completion{Text: string(text), Tokens: br.gen[:len(br.gen):len(br.gen)], FinishReason: br.finish, Usage: &usage}
	}
	return out
}

// unfinished reports the constrained branches whose output is not
// complete, as the logits loop does.
func (r *textRun) unfinished() error {
	var errs []error
	cs := r.completions()
	for i, br := range r.branches {
		if br.con == nil || br.cut >= 0 || br.con.CanEnd() {
			continue
		}
		errs = append(errs, &UnfinishedError{Branch: i, Reason: br.finish, Detail: "the token budget (MaxTokens) ran out before the constraint was satisfied", Completion: cs[i]})
	}
	return errors.Join(errs...)
}

func (r *textRun) failure(ctx context.Context, err error) error {
	if ctx.Err() == nil || r.opts.TextConstraint == nil {
		return err
	}
	cs := r.completions()
	var errs []error
	for i, br := range r.branches {
		if !br.done || !br.con.CanEnd() {
			cs[i].FinishReason = FinishCancelled
			errs = append(errs, &UnfinishedError{Branch: i, Reason: FinishCancelled, Detail: "generation was cancelled: " + ctx.Err().Error(), Completion: cs[i], Cause: ctx.Err()})
		}
	}
	if len(errs) == 0 {
		return err
	}
	return errors.Join(errs...)
}

// released returns branch i's tokens not yet handed to a stream: all
// but a tail that might begin a stop string.
func (r *textRun) released(i int) []Token {
	br := r.branches[i]
	end := len(br.gen)
	if !br.done && r.maxStop > 0 {
		for end > br.taken && br.starts[end-1]+len(br.gen[end-1].Bytes) > len(br.text)-r.maxStop+1 {
			end--
		}
	}
	out := br.gen[br.taken:end]
	br.taken = end
	return out
}
