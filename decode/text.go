package decode

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/reins-go/reins/internal/logspace"
)

// TextBackend is a server that continues text and returns each token
// with its log-probability and at most Capabilities().TopLogprobs
// alternatives. It must be safe for concurrent use.
type TextBackend interface {
	Backend
	// Continue continues req.Prompt+req.Output. When the answer breaks
	// off after tokens were passed to req.Watch, it returns them with the
	// error; the generation keeps them and asks again.
	Continue(ctx context.Context, req TextRequest) (*TextResponse, error)
}

// TextRequest asks a TextBackend to continue a text.
type TextRequest struct {
	// Prompt is the caller's prompt, and Output the output so far, which
	// the server continues: a server that continues raw text is given
	// Prompt+Output; a chat server puts Prompt in a user message and
	// continues an assistant message that begins with Output.
	Prompt string
	Output string
	// MaxTokens is the most tokens to generate, at least 1.
	MaxTokens int
	// TopLogprobs is how many alternatives to return per token.
	TopLogprobs int
	Sampling    SamplingOptions
	// Stop ends the server's output at any of these strings, left out.
	Stop []string
	// Bias adds to the logits of tokens by id, for a backend whose
	// Capabilities say Bias (OpenAI's logit_bias: -100 bans a token).
	Bias map[int]float64
	// JSONSchema, when set, asks a server whose Capabilities say
	// JSONSchema to keep its output to a JSON value valid against this
	// schema (Ollama's format, OpenAI's response_format), from the start
	// of its output: it is set only when Output is empty. It is a hint:
	// reins checks every byte the server returns.
	JSONSchema json.RawMessage
	// Watch, when set, is called with each token in order, from the
	// goroutine that called Continue, as the token arrives when the
	// server streams. Once it returns false the backend passes no more
	// tokens, ends the request as soon as it can, and returns the tokens
	// it passed. Deliver does this for a backend that does not stream.
	Watch func(Token) bool
}

// Deliver passes tokens to r.Watch in order until it returns false and
// returns the tokens it passed (all of them without a Watch): what a
// backend that receives a whole answer at once returns. An answer of
// more than r.MaxTokens tokens is an error.
func (r *TextRequest) Deliver(tokens []Token) ([]Token, error) {
	if len(tokens) > r.MaxTokens {
		return nil, fmt.Errorf("the server returned %d tokens, %d were asked for", len(tokens), r.MaxTokens)
	}
	if r.Watch == nil {
		return tokens, nil
	}
	for i, t := range tokens {
		if !r.Watch(t) {
			return tokens[:i+1], nil
		}
	}
	return tokens, nil
}

// TextResponse is what a TextBackend returns: the tokens it generated,
// each with its alternatives (IDs are -1 where the server does not say),
// and whether it stopped by itself (end of generation or a stop string:
// FinishStop) or at MaxTokens (FinishLength). After a Watch stopped it,
// FinishReason is whatever the backend knew.
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
	// Commit tells that Undo will not go back before mark, so that
	// the state before it can be compacted.
	Commit(mark int)
	// CanEnd reports whether the output so far is complete.
	CanEnd() bool
	// Forced returns the bytes that are the only way on from here.
	Forced() []byte
	// Expected describes what may come next, for errors.
	Expected() string
}

// SchemaConstraint is a TextConstraint that is a JSON Schema's: a server
// that keeps outputs to a schema itself (Capabilities().JSONSchema) is
// asked to as a first line of defence, and the constraint checks every
// byte it returns all the same. JSONSchema returns nil when the schema
// is not fit to send (it refers to other documents, say).
type SchemaConstraint interface {
	TextConstraint
	JSONSchema() json.RawMessage
}

// Usage counts what a generation on a TextBackend cost and how its
// output was made. Of the output's tokens, Kept came from the server
// (its own choices and the alternatives taken in place of refused ones),
// Forced and Cut did not: len(Completion.Tokens) = Kept+Forced+Cut.
type Usage struct {
	Requests  int `json:"requests"`  // requests to the server
	Generated int `json:"generated"` // tokens the server returned
	Kept      int `json:"kept"`      // tokens of the output that the server returned
	Forced    int `json:"forced"`    // pieces of text the constraint forced, unasked
	Cut       int `json:"cut,omitempty"`
	// Cut counts the allowed beginnings of refused tokens that the
	// output kept where nothing whole was allowed (Token.Unscored).
	Refused     int `json:"refused"`               // tokens the constraint refused
	Alternative int `json:"alternative,omitempty"` // refused tokens replaced by an allowed alternative
	Healed      int `json:"healed,omitempty"`      // boundaries spelled again by the server's own tokens
	Backtracked int `json:"backtracked,omitempty"` // tokens replaced by the next allowed alternative at their position
	// Banned counts requests that banned the tokens refused at a
	// position (logit_bias), to see below them.
	Banned int `json:"banned,omitempty"`
	// Broken counts answers that broke off, kept as far as they went.
	Broken int `json:"broken,omitempty"`
	// Scored counts the texts scored where the rest of the output was
	// one of a few (an enum at its end), its tokens refused by the
	// server's alternatives.
	Scored int `json:"scored,omitempty"`
	// SchemaTokens counts the tokens the server returned while it kept
	// the output to the JSON Schema itself (TextRequest.JSONSchema).
	SchemaTokens int `json:"schema_tokens,omitempty"`
}

// Round trips under a constraint. A backend that streams is asked for
// the whole budget, and its answer is cut off at the first refused
// token. Otherwise the first request asks textChunk tokens; a chunk kept
// whole doubles the next (up to maxTextChunk), a refusal halves it.
const (
	textChunk    = 16
	minTextChunk = 4
	maxTextChunk = 256
	// maxStalls bounds the round trips in a row that take the output no
	// further than it has been before it fails.
	maxStalls = 6
	// maxBacktracks bounds the tokens of one output replaced by the next
	// allowed alternative at their position.
	maxBacktracks = 16
)

// pieceKind says where a piece of the output came from.
type pieceKind uint8

const (
	pieceServer pieceKind = iota // a token the server chose
	pieceAlt                     // an alternative taken in place of a refused token
	pieceForced                  // bytes the constraint forced (unscored)
	pieceCut                     // the allowed beginning of a refused token (unscored)
)

// piece is what the loop knows of one token of the output beside the
// token itself.
type piece struct {
	start int          // offset in the output
	mark  int          // the constraint's mark before it
	kind  pieceKind    //
	alts  []TopLogprob // all alternatives at its position, for backtracking
	short bool         // an alternative that a longer token at its position begins
}

// textRun is a generation on a TextBackend: one or more branches, each
// asked for in turn, concurrently.
type textRun struct {
	b        TextBackend
	caps     Capabilities
	opts     Options
	prompt   string
	topK     int
	branches []*textBranch
	maxStop  int
}

type textBranch struct {
	seed   uint64
	con    TextConstraint
	schema json.RawMessage // con's JSON Schema, for the first request
	text   []byte
	gen    []Token
	pieces []piece // beside gen
	taken  int     // gen[:taken] were handed to a stream
	cut    int     // when stopped by a stop string, the text ends here
	done   bool
	finish string
	chunk  int
	stalls int
	reach  int // the longest the output has been
	usage  Usage
	err    error

	// Healing: the output must go on with need, bytes taken back from
	// its end so that the server spells them again with its own tokens.
	need     []byte
	heal     *healing
	noHealAt int // a healing at this length failed: do not try it again

	// Bans: token ids refused at the output's current length, which the
	// next request asks the server (Capabilities().Bias) to leave out, so
	// that its top tokens show what lies below them.
	ban   map[int]float64
	banAt int
	bans  int // requests with bans at banAt

	backtracks int
	last       *refusal // the last refused token, for errors

	// finite holds, when set, every way the output may still go to its
	// end (few and short), to be scored by the next round trip instead
	// of asking the server to continue.
	finite []string
}

// healing is a boundary taken back, to be put back if the server will
// not spell it.
type healing struct {
	saved   []Token // the tokens taken back
	pieces  []piece
	split   bool // the last piece left in the output is the head of saved[0]
	touched bool // the server has spelled some of need
	at      int  // the output's length before
}

// refusal is a token the constraint refused, for error messages.
type refusal struct {
	at    int
	token string
	alts  []string
}

func newTextRun(b TextBackend, prompt string, opts Options, n int) (*textRun, error) {
	caps := b.Capabilities()
	if err := opts.validateText(caps); err != nil {
		return nil, err
	}
	if prompt == "" {
		return nil, errors.New("empty prompt: give at least one character")
	}
	if !utf8.ValidString(prompt) {
		return nil, errors.New("the prompt is not valid UTF-8, which a server's JSON API cannot carry")
	}
	if !utf8.ValidString(opts.Prefill) {
		return nil, &OptionError{"Prefill", fmt.Sprintf("%q", opts.Prefill), "valid UTF-8, which a server's JSON API can carry"}
	}
	if n < 1 {
		return nil, &OptionError{"n", fmt.Sprint(n), "want at least 1 branch"}
	}
	if opts.MaxTokens == 0 {
		opts.MaxTokens = DefaultMaxTokens
	}
	r := &textRun{b: b, caps: caps, opts: opts, prompt: prompt}
	for _, s := range opts.Stop {
		r.maxStop = max(r.maxStop, len(s))
	}
	r.topK = opts.TopLogprobs
	if opts.TextConstraint != nil {
		r.topK = max(opts.TopLogprobs, caps.TopLogprobs)
	}
	for i := range n {
		br := &textBranch{seed: opts.Sampling.Seed + uint64(i), cut: -1, chunk: textChunk, noHealAt: -1}
		if opts.TextConstraint != nil {
			if br.con = opts.TextConstraint(); br.con == nil {
				return nil, errors.New("Options.TextConstraint returned nil")
			}
			if sc, ok := br.con.(SchemaConstraint); ok && caps.JSONSchema {
				br.schema = sc.JSONSchema()
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

// walk is one answer being walked through a branch's constraint.
type walk struct {
	want    int
	seen    int
	stopped bool // the walk ended the answer: a refusal, the end, a stop string
	refused bool
	err     error
}

// roundTrip asks the server to continue branch br's output once and
// walks the answer through the constraint: it keeps the longest allowed
// part, and in place of the first refused token the likeliest allowed
// alternative or, failing that, what recover finds.
func (r *textRun) roundTrip(ctx context.Context, br *textBranch) (err error) {
	if br.finite != nil {
		return r.chooseFinite(ctx, br)
	}
	if br.con != nil {
		r.takeBack(br)
		defer func() {
			if err != nil || br.done {
				r.putBack(br)
			}
		}()
	}
	if br.con != nil && len(br.need) == 0 && partialTail(br.text) > 0 {
		r.mend(br)
		if br.finite != nil {
			return r.chooseFinite(ctx, br)
		}
	}
	if !utf8.Valid(br.text) {
		msg := fmt.Sprintf("the output holds invalid UTF-8 at byte %d, which a server's JSON API cannot carry, and no answer finished the character", invalidAt(br.text))
		if br.con != nil {
			msg += r.refusalNote(br) + "; expected " + br.con.Expected()
		}
		return errors.New(msg)
	}
	left := r.opts.MaxTokens - len(br.gen)
	want := left
	first := br.con != nil && r.opts.Prefill == "" && len(br.text) == 0 && len(br.need) == 0 && br.usage.Requests == 0 && len(br.schema) > 0
	if br.con != nil && !r.caps.Stream && !first {
		want = min(left, br.chunk)
	}
	banned := br.con != nil && len(br.ban) > 0 && br.banAt == len(br.text) && len(br.need) == 0
	if banned {
		want = 1 // the bans hold at this position only
	}
	w := &walk{want: want}
	req := TextRequest{Prompt: r.prompt, Output: r.opts.Prefill + string(br.text), MaxTokens: want, TopLogprobs: r.topK, Sampling: r.opts.Sampling,
		Watch: func(t Token) bool { return r.see(br, w, t) }}
	req.Sampling.Seed = br.seed + uint64(br.usage.Requests)
	if banned {
		req.Bias = br.ban
		br.usage.Banned++
	}
	if br.con == nil {
		req.Stop = r.opts.Stop // the server leaves them out; under a constraint reins looks for them itself
	} else if first {
		// The server keeps to the schema itself: the whole output may
		// come in this one answer.
		req.JSONSchema = br.schema
	}
	resp, err := r.b.Continue(ctx, req)
	br.usage.Requests++
	if err != nil && req.JSONSchema != nil && w.seen == 0 && ctx.Err() == nil {
		// The server would not take the schema: ask without it.
		req.JSONSchema = nil
		resp, err = r.b.Continue(ctx, req)
		br.usage.Requests++
	}
	if w.err != nil {
		return w.err
	}
	if err != nil {
		if resp == nil || w.seen == 0 || ctx.Err() != nil {
			return fmt.Errorf("request %d: %w", br.usage.Requests, err)
		}
		// The answer broke off: keep what came, ask again.
		br.usage.Broken++
		resp.FinishReason = FinishLength
	}
	if len(resp.Tokens) > want {
		return fmt.Errorf("the server returned %d tokens, %d were asked for", len(resp.Tokens), want)
	}
	if w.seen < len(resp.Tokens) {
		// A backend that ignored Watch: walk what it returned.
		for _, t := range resp.Tokens[w.seen:] {
			if !r.see(br, w, t) {
				break
			}
		}
		if w.err != nil {
			return w.err
		}
	}
	if req.JSONSchema != nil {
		br.usage.SchemaTokens += w.seen
	}
	if !br.done && !w.stopped {
		r.answerEnded(br, w, resp)
	}
	if br.done {
		return nil
	}
	switch {
	case br.con == nil:
	case w.refused:
		br.chunk = max(minTextChunk, br.chunk/2)
	case w.seen == want:
		br.chunk = min(maxTextChunk, 2*br.chunk)
	}
	if len(br.gen) >= r.opts.MaxTokens {
		br.finishWith(FinishLength)
		return nil
	}
	if br.con == nil {
		if w.seen == 0 {
			return errors.New("the server returned no tokens and did not say it had finished")
		}
		// Tokens with no text (control tokens shown as "") are seen but
		// not kept: answers of nothing else would be asked for forever.
		if len(br.text) > br.reach {
			br.reach, br.stalls = len(br.text), 0
		} else if br.stalls++; br.stalls >= maxStalls {
			return fmt.Errorf("the server's answers took the output no further than %d bytes %d times in a row: their tokens had no text", br.reach, br.stalls)
		}
		return nil
	}
	if len(br.need) == 0 && br.con.CanEnd() && !r.canGoOn(br) {
		br.finishWith(FinishStop) // complete, and nothing may follow
		return nil
	}
	if extent := len(br.text) + len(br.need); extent > br.reach {
		br.reach = extent
		br.stalls = 0
	} else if br.stalls++; br.stalls >= maxStalls && br.finite == nil { // texts set aside to score are the way on
		return r.stalled(br)
	}
	r.commit(br)
	return nil
}

// answerEnded handles an answer the walk did not cut off: the server
// ended it by itself, or it ran to MaxTokens.
func (r *textRun) answerEnded(br *textBranch, w *walk, resp *TextResponse) {
	if resp.FinishReason != FinishStop || w.seen >= w.want {
		return // cut at MaxTokens: ask again
	}
	// The server ended the output by itself.
	if br.con == nil {
		br.finishWith(FinishStop)
		return
	}
	// Before it spelled what healing took back, maybe: put that back.
	r.putBack(br)
	switch {
	case br.con.CanEnd():
		br.finishWith(FinishStop)
	default:
		// The language needs more than the model wanted to say.
		if f := br.con.Forced(); len(f) > 0 {
			r.keepUnscored(br, f, pieceForced)
		} else {
			r.backtrack(br)
		}
	}
}

// see walks one token of an answer; it returns whether the walk wants
// more.
func (r *textRun) see(br *textBranch, w *walk, t Token) bool {
	if w.stopped || w.err != nil {
		return false
	}
	w.seen++
	br.usage.Generated++
	if w.seen > w.want {
		w.err = fmt.Errorf("the server returned more than the %d tokens asked for", w.want)
		return false
	}
	if err := checkToken(t); err != nil {
		w.err = err
		return false
	}
	if len(t.Bytes) == 0 {
		return true // nothing to keep (a control token shown as "")
	}
	if br.con == nil {
		r.keep(br, t, 0, pieceServer, t.TopLogprobs, false)
		w.stopped = br.done
		return !w.stopped
	}
	if tok, mark, ok := r.allowed(br, t); ok {
		r.keep(br, tok, mark, pieceServer, t.TopLogprobs, false)
		w.stopped = br.done
		return !w.stopped
	}
	w.refused, w.stopped = true, true
	br.usage.Refused++
	r.recover(br, t)
	return false
}

// checkToken refuses a token whose text and bytes disagree, whose
// log-probabilities are not log-probabilities, which lists an
// alternative twice, or whose own entry among its alternatives (the same
// ID) gives it another log-probability.
func checkToken(t Token) error {
	if t.Token != string(t.Bytes) {
		return fmt.Errorf("the server's token %q does not match its bytes %v", t.Token, []byte(t.Bytes))
	}
	if math.IsNaN(t.Logprob) || t.Logprob > 1e-6 {
		return fmt.Errorf("the server's token %q has log-probability %v", t.Token, t.Logprob)
	}
	for i, a := range t.TopLogprobs {
		if a.Token != string(a.Bytes) {
			return fmt.Errorf("the server's alternative %q does not match its bytes %v", a.Token, []byte(a.Bytes))
		}
		if math.IsNaN(a.Logprob) || a.Logprob > 1e-6 {
			return fmt.Errorf("the server's alternative %q has log-probability %v", a.Token, a.Logprob)
		}
		// Two tokens may spell the same bytes (a byte token beside a
		// piece), but one token listed twice would be counted twice.
		for _, b := range t.TopLogprobs[:i] {
			if b.ID == a.ID && string(b.Bytes) == string(a.Bytes) && (a.ID >= 0 || b.Logprob == a.Logprob) {
				return fmt.Errorf("the server lists the alternative %q to %q twice", a.Token, t.Token)
			}
		}
		// The token itself, named by its ID, with another probability:
		// the server contradicts itself. (Without IDs an alternative of
		// the same bytes may be another token, or the one a server's
		// map of alternatives by text kept: renormalise uses t's own.)
		if a.ID >= 0 && a.ID == t.ID && string(a.Bytes) == string(t.Bytes) && !closeLogprobs(a.Logprob, t.Logprob) {
			return fmt.Errorf("the server's token %q has log-probability %v, but %v among its alternatives", t.Token, t.Logprob, a.Logprob)
		}
	}
	return nil
}

// sameToken reports whether alternative a may be token t: the same
// bytes, and the same ID where the server gives both.
func sameToken(a TopLogprob, t Token) bool {
	return string(a.Bytes) == string(t.Bytes) && (a.ID < 0 || t.ID < 0 || a.ID == t.ID)
}

// closeLogprobs reports whether two log-probabilities a server gives of
// one token agree, up to how it rounds them.
func closeLogprobs(a, b float64) bool {
	return math.Abs(a-b) <= 1e-3+1e-3*math.Abs(b)
}

// fits reports whether b may come next: it agrees with what healing
// needs, and the constraint accepts it (which it then has consumed).
func (br *textBranch) fits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	n := min(len(b), len(br.need))
	if !bytes.Equal(b[:n], br.need[:n]) {
		return false
	}
	return br.con.Accept(b)
}

// allowed advances br's constraint by t when t fits, and returns t with
// its constrained log-probabilities and the constraint's mark before it.
func (r *textRun) allowed(br *textBranch, t Token) (Token, int, bool) {
	alts := r.allowedAlternatives(br, t.TopLogprobs)
	mark := br.con.Mark()
	if !br.fits(t.Bytes) {
		return t, mark, false
	}
	t.Constrained = renormalise(t, alts)
	return t, mark, true
}

// allowedAlternatives returns the alternatives that fit at the
// current position.
func (r *textRun) allowedAlternatives(br *textBranch, alts []TopLogprob) []TopLogprob {
	var out []TopLogprob
	for _, a := range alts {
		mark := br.con.Mark()
		if br.fits(a.Bytes) {
			out = append(out, a)
		}
		br.con.Undo(mark)
	}
	return out
}

// recover handles refused token t: it keeps the likeliest allowed
// alternative; failing that it puts back what healing took, or appends
// the bytes the constraint forces, or ends the output where it may end,
// or, where the rest of the language is a few short texts and the
// server scores given texts, has them scored (planFinite), or bans the
// refused tokens, or keeps the allowed beginning of the likeliest token
// that has one, or takes the next alternative at the previous position.
func (r *textRun) recover(br *textBranch, t Token) {
	br.last = &refusal{at: len(br.text) + len(br.need), token: t.Token}
	for _, a := range t.TopLogprobs {
		br.last.alts = append(br.last.alts, a.Token)
	}
	alts := r.allowedAlternatives(br, t.TopLogprobs)
	mark := br.con.Mark()
	if best := likeliest(alts); best >= 0 && br.fits(alts[best].Bytes) {
		a := alts[best]
		tok := Token{ID: a.ID, Token: a.Token, Bytes: a.Bytes, Logprob: a.Logprob, TopLogprobs: t.TopLogprobs}
		tok.Constrained = renormalise(tok, alts)
		short := bytes.HasPrefix(t.Bytes, a.Bytes) && len(t.Bytes) > len(a.Bytes)
		for _, o := range t.TopLogprobs {
			short = short || (len(o.Bytes) > len(a.Bytes) && bytes.HasPrefix(o.Bytes, a.Bytes))
		}
		br.usage.Alternative++
		r.keep(br, tok, mark, pieceAlt, t.TopLogprobs, short)
		return
	}
	switch {
	case len(br.need) > 0:
		r.putBack(br)
	case len(br.con.Forced()) > 0:
		r.keepUnscored(br, br.con.Forced(), pieceForced)
	case r.keepPastSpace(br):
	case br.con.CanEnd():
		// The model wanted more than the language allows, and the
		// output may end here: it ends.
		br.finishWith(FinishStop)
	case r.planFinite(br):
	case r.banRefused(br, t):
	case r.keepBeginning(br, t):
	default:
		r.backtrack(br)
	}
}

// keepPastSpace appends, as forced, the one byte other than whitespace
// that may come next, when whitespace is all else that may (a JSON
// layout that allows spaces between tokens), and what it forces: the
// loose layout would otherwise leave nothing forced where the compact
// one forces "," or ":".
func (r *textRun) keepPastSpace(br *textBranch) bool {
	only, n := byte(0), 0
	for b := range 256 {
		c := byte(b)
		mark := br.con.Mark()
		if br.con.Accept([]byte{c}) {
			br.con.Undo(mark)
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				continue
			}
			only, n = c, n+1
			if n > 1 {
				return false
			}
		}
	}
	if n != 1 {
		return false
	}
	mark := br.con.Mark()
	br.con.Accept([]byte{only})
	f := append([]byte{only}, br.con.Forced()...)
	br.con.Undo(mark)
	r.keepUnscored(br, f, pieceForced)
	return true
}

// canGoOn reports whether any byte may follow the output.
func (r *textRun) canGoOn(br *textBranch) bool {
	for b := range 256 {
		mark := br.con.Mark()
		if br.con.Accept([]byte{byte(b)}) {
			br.con.Undo(mark)
			return true
		}
	}
	return false
}

// maxBanRounds bounds the requests, at one position, that ban the
// tokens refused there.
const maxBanRounds = 3

// banRefused asks, on a server that takes logit biases and says token
// ids, for one more token at this position with every refused token
// (t and its alternatives, none of which is allowed) banned: its next
// answer shows the tokens below them.
func (r *textRun) banRefused(br *textBranch, t Token) bool {
	if !r.caps.Bias || t.ID < 0 {
		return false
	}
	if br.banAt != len(br.text) {
		br.ban, br.banAt, br.bans = nil, len(br.text), 0
	}
	if br.bans >= maxBanRounds {
		return false
	}
	if br.ban == nil {
		br.ban = map[int]float64{}
	}
	br.ban[t.ID] = -100
	for _, a := range t.TopLogprobs {
		if a.ID < 0 {
			return false // ids unknown: a ban could not name them
		}
		br.ban[a.ID] = -100
	}
	br.bans++
	return true
}

// likeliest returns the index of the most probable alternative, or -1.
func likeliest(alts []TopLogprob) int {
	best := -1
	for i, a := range alts {
		if best < 0 || a.Logprob > alts[best].Logprob {
			best = i
		}
	}
	return best
}

// keepBeginning keeps the longest allowed beginning of the likeliest of
// t and its alternatives that has one (a tight bound: "abcd" where two
// letters are left), unscored; the next request heals it.
func (r *textRun) keepBeginning(br *textBranch, t Token) bool {
	cands := append([]TopLogprob{{ID: t.ID, Token: t.Token, Bytes: t.Bytes, Logprob: t.Logprob}}, t.TopLogprobs...)
	slices.SortStableFunc(cands, func(a, b TopLogprob) int { return cmp.Compare(b.Logprob, a.Logprob) })
	for _, c := range cands {
		mark := br.con.Mark()
		n := 0
		for n < len(c.Bytes) && br.con.Accept(c.Bytes[n:n+1]) {
			n++
		}
		br.con.Undo(mark)
		// End on a whole character where one can.
		k := n
		for k > 0 && !utf8.FullRune(c.Bytes[lastRuneStart(c.Bytes[:k]):k]) {
			k = lastRuneStart(c.Bytes[:k])
		}
		if k > 0 {
			n = k
		}
		if n > 0 {
			r.keepUnscored(br, c.Bytes[:n], pieceCut)
			return true
		}
	}
	return false
}

// lastRuneStart returns where the last character of b begins.
func lastRuneStart(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			return i
		}
	}
	return max(0, len(b)-1)
}

// backtrack replaces the output's last token, when the server chose it,
// by the next allowed alternative at its position (one step back, at
// most maxBacktracks times per output).
func (r *textRun) backtrack(br *textBranch) bool {
	if br.backtracks >= maxBacktracks || len(br.gen) == 0 || len(br.need) > 0 {
		return false
	}
	i := len(br.gen) - 1
	p, cur := br.pieces[i], br.gen[i]
	if p.kind == pieceForced || p.kind == pieceCut || len(p.alts) == 0 || br.taken > i {
		return false
	}
	r.pop(br)
	alts := r.allowedAlternatives(br, p.alts)
	slices.SortStableFunc(alts, func(a, b TopLogprob) int { return cmp.Compare(b.Logprob, a.Logprob) })
	next := -1
	if j := slices.IndexFunc(alts, func(a TopLogprob) bool { return bytes.Equal(a.Bytes, cur.Bytes) }); j >= 0 {
		if j+1 < len(alts) {
			next = j + 1
		}
	} else {
		next = slices.IndexFunc(alts, func(a TopLogprob) bool { return a.Logprob <= cur.Logprob })
	}
	mark := br.con.Mark()
	if next < 0 || !br.fits(alts[next].Bytes) {
		br.con.Accept(cur.Bytes) // it was allowed here before
		p.mark = mark
		r.push(br, cur, p)
		return false
	}
	a := alts[next]
	tok := Token{ID: a.ID, Token: a.Token, Bytes: a.Bytes, Logprob: a.Logprob, TopLogprobs: p.alts}
	tok.Constrained = renormalise(tok, alts)
	br.backtracks++
	br.usage.Backtracked++
	r.keep(br, tok, mark, pieceAlt, p.alts, false)
	return true
}

// takeBack starts healing before a request: it takes back from the
// output's end what the server should spell again with its own tokens,
// which the answer must then begin with. That is a character cut in
// two (a request cannot carry it), the last character of forced text,
// a cut token's beginning, and an alternative that a longer token at
// its position begins (a lone space after a refused word): sent as
// they are, they leave the server re-tokenizing a boundary its model
// never saw, and its top tokens often hold nothing allowed.
func (r *textRun) takeBack(br *textBranch) {
	if len(br.need) > 0 || len(br.gen) == 0 || br.noHealAt == len(br.text) {
		return
	}
	last := br.pieces[len(br.gen)-1]
	from := -1
	if k := partialTail(br.text); k > 0 {
		from = len(br.text) - k
	} else {
		switch last.kind {
		case pieceForced:
			from = last.start + lastRuneStart(br.text[last.start:])
		case pieceCut:
			from = last.start
		case pieceAlt:
			if last.short {
				from = last.start
			}
		}
	}
	if from < 0 {
		return
	}
	first := len(br.gen) - 1
	for first > 0 && br.pieces[first].start > from {
		first--
	}
	if first < br.taken {
		return // released to a stream: not ours to change (hold keeps this from happening)
	}
	h := &healing{at: len(br.text)}
	h.saved = slices.Clone(br.gen[first:])
	h.pieces = slices.Clone(br.pieces[first:])
	for len(br.gen) > first {
		r.pop(br)
	}
	if head := from - h.pieces[0].start; head > 0 {
		// Forced text is split: its head stays.
		h.split = true
		r.keepUnscored(br, h.saved[0].Bytes[:head], h.pieces[0].kind)
	}
	br.heal = h
	br.need = bytes.Clone(h.saved[0].Bytes[from-h.pieces[0].start:])
	for _, t := range h.saved[1:] {
		br.need = append(br.need, t.Bytes...)
	}
}

// putBack ends a healing the server would not do: what was taken back
// returns as it was (or, when the server spelled part of it, the rest
// returns as unscored text), and this boundary is not healed again.
func (r *textRun) putBack(br *textBranch) {
	h := br.heal
	if h == nil || len(br.need) == 0 {
		br.heal, br.need = nil, nil
		return
	}
	need := br.need
	br.heal, br.need = nil, nil
	if !h.touched {
		if h.split {
			r.pop(br)
		}
		for i, t := range h.saved {
			p := h.pieces[i]
			p.mark = br.con.Mark()
			if !br.con.Accept(t.Bytes) {
				panic("decode: a token taken back for healing no longer fits")
			}
			r.push(br, t, p)
		}
	} else {
		kind := pieceCut
		if h.pieces[0].kind == pieceForced {
			kind = pieceForced
		}
		r.keepUnscored(br, need, kind)
	}
	br.noHealAt = len(br.text)
}

// mend finishes a character the output ends inside of, which a request
// cannot carry, when the server would not: with the bytes the
// constraint forces, else by taking the next alternative for its last
// token.
func (r *textRun) mend(br *textBranch) {
	if f := br.con.Forced(); len(f) > 0 {
		r.keepUnscored(br, f, pieceForced)
	}
	for range maxBacktracks {
		if partialTail(br.text) == 0 || !r.backtrack(br) {
			break
		}
	}
	// Else, where the ways on from before the cut character are a few
	// short texts, take the character's pieces back and have them
	// scored (planFinite).
	if partialTail(br.text) == 0 {
		return
	}
	n := len(br.gen)
	for n > br.taken && n > 0 && br.pieces[n-1].start >= len(br.text)-partialTail(br.text) {
		n--
	}
	if n == len(br.gen) || br.pieces[n].start != len(br.text)-partialTail(br.text) {
		return // the cut character began inside a token, or was handed to a stream
	}
	saved, pieces := slices.Clone(br.gen[n:]), slices.Clone(br.pieces[n:])
	for len(br.gen) > n {
		r.pop(br)
	}
	if !r.planFinite(br) {
		for i, t := range saved { // put them back: the error will say where
			mark := br.con.Mark()
			br.con.Accept(t.Bytes)
			p := pieces[i]
			p.mark = mark
			r.push(br, t, p)
		}
	}
}

// partialTail returns how many bytes at the end of b begin a character
// that is not complete.
func partialTail(b []byte) int {
	i := lastRuneStart(b)
	if i < len(b) && !utf8.FullRune(b[i:]) && utf8.RuneStart(b[i]) && b[i] >= 0xC0 {
		return len(b) - i
	}
	return 0
}

func invalidAt(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// renormalise gives token t's constrained log-probabilities: over the
// allowed alternatives the server returned (and t itself).
//
// One alternative that may be t itself (sameToken; the nearest in
// log-probability where several spell t, as a byte token beside a piece
// may) is t, and counts with t's own log-probability, once: a server
// whose entry for the token disagrees with it (checkToken refuses that
// where IDs tell) cannot make t's constrained log-probability positive.
func renormalise(t Token, allowed []TopLogprob) *Logprobs {
	allowed = slices.Clone(allowed)
	self := -1
	for i, a := range allowed {
		if sameToken(a, t) && (self < 0 || math.Abs(a.Logprob-t.Logprob) < math.Abs(allowed[self].Logprob-t.Logprob)) {
			self = i
		}
	}
	z := t.Logprob
	for i, a := range allowed {
		if i == self {
			allowed[i].Logprob = t.Logprob
			continue
		}
		z = logspace.Add(z, a.Logprob)
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
	out.Unseen = max(0, 1-mass)
	for _, a := range allowed {
		a.Logprob -= z
		out.TopLogprobs = append(out.TopLogprobs, a)
	}
	slices.SortStableFunc(out.TopLogprobs, func(a, b TopLogprob) int { return cmp.Compare(b.Logprob, a.Logprob) })
	return out
}

// keep appends token t, which the constraint has consumed from mark, to
// br's output; alts are all the alternatives at its position.
func (r *textRun) keep(br *textBranch, t Token, mark int, kind pieceKind, alts []TopLogprob, short bool) {
	if len(br.need) > 0 {
		br.need = br.need[min(len(br.need), len(t.Bytes)):]
		br.heal.touched = true
		if len(br.need) == 0 {
			br.usage.Healed++
			if len(br.text)+len(t.Bytes) == br.heal.at {
				// Spelled again as it was, and no further: healing this
				// boundary again would go round in circles.
				br.noHealAt = br.heal.at
			}
			br.heal = nil
		}
	}
	t.TopLogprobs = trim(t.TopLogprobs, r.opts.TopLogprobs)
	if t.Constrained != nil {
		c := *t.Constrained
		c.TopLogprobs = trim(c.TopLogprobs, r.opts.TopLogprobs)
		t.Constrained = &c
	}
	r.push(br, t, piece{mark: mark, kind: kind, alts: alts, short: short})
}

// trim keeps the first n alternatives (the server's, most probable
// first), as many as the caller asked for.
func trim(alts []TopLogprob, n int) []TopLogprob {
	if len(alts) <= n {
		return alts
	}
	if n == 0 {
		return nil
	}
	return alts[:n:n]
}

// keepUnscored appends text the server was not asked about, which the
// constraint has not consumed yet.
func (r *textRun) keepUnscored(br *textBranch, f []byte, kind pieceKind) {
	mark := br.con.Mark()
	if !br.con.Accept(f) {
		panic("decode: forced or allowed bytes refused")
	}
	t := Token{ID: -1, Token: string(f), Bytes: Bytes(bytes.Clone(f)), Unscored: true}
	if kind == pieceForced {
		t.Forced = true
		t.Constrained = &Logprobs{Logprob: 0}
	}
	r.push(br, t, piece{mark: mark, kind: kind})
}

// push appends t to the output, which the constraint has consumed, and
// looks for a stop string.
func (r *textRun) push(br *textBranch, t Token, p piece) {
	p.start = len(br.text)
	br.pieces = append(br.pieces, p)
	br.text = append(br.text, t.Bytes...)
	br.gen = append(br.gen, t)
	if len(r.opts.Stop) == 0 || br.cut >= 0 {
		return
	}
	from := max(0, len(br.text)-len(t.Bytes)-r.maxStop+1)
	for _, s := range r.opts.Stop {
		if i := strings.Index(string(br.text[from:]), s); i >= 0 && (br.cut < 0 || from+i < br.cut) {
			br.cut = from + i
		}
	}
	if br.cut >= 0 {
		keep := len(br.gen)
		for keep > 0 && br.pieces[keep-1].start >= br.cut {
			keep--
		}
		br.gen, br.pieces = br.gen[:keep], br.pieces[:keep]
		br.finishWith(FinishStop)
	}
}

// pop takes the output's last token back, and the constraint with it.
func (r *textRun) pop(br *textBranch) {
	i := len(br.gen) - 1
	p := br.pieces[i]
	br.con.Undo(p.mark)
	br.text = br.text[:p.start]
	br.gen, br.pieces = br.gen[:i], br.pieces[:i]
}

// commit lets the constraint forget what can no longer change: all but
// the tokens a healing or a backtrack may take back.
func (r *textRun) commit(br *textBranch) {
	if i := r.hold(br); i < len(br.gen) && i > 0 {
		br.con.Commit(br.pieces[i].mark)
	}
}

// hold returns the index of the first token that may still change: the
// last token (healing, backtracking), and any that hold a character the
// output has not finished.
func (r *textRun) hold(br *textBranch) int {
	if br.con == nil || br.done {
		return len(br.gen)
	}
	i := max(0, len(br.gen)-1)
	if k := partialTail(br.text); k > 0 {
		for i > 0 && br.pieces[i].start > len(br.text)-k {
			i--
		}
	}
	return i
}

func (br *textBranch) finishWith(reason string) {
	br.done, br.finish = true, reason
}

// stalled is the error of a branch whose round trips no longer take it
// further.
func (r *textRun) stalled(br *textBranch) error {
	msg := fmt.Sprintf("the server's answers took the output no further than %d bytes %d times in a row", br.reach, br.stalls)
	return fmt.Errorf("%s%s; expected %s", msg, r.refusalNote(br), br.con.Expected())
}

// refusalNote says what the server offered at the last refusal, if any.
func (r *textRun) refusalNote(br *textBranch) string {
	l := br.last
	if l == nil {
		return ""
	}
	alts := l.alts
	if len(alts) > 8 {
		alts = append(alts[:8:8], "...")
	}
	return fmt.Sprintf("; at byte %d it offered %q (alternatives %q), none of which the constraint allows, and nothing was forced", l.at, l.token, alts)
}

func (r *textRun) completions() []*Completion {
	out := make([]*Completion, len(r.branches))
	for i, br := range r.branches {
		text := br.text
		if br.cut >= 0 {
			text = text[:br.cut]
		}
		usage := br.usage
		usage.Kept, usage.Forced, usage.Cut = 0, 0, 0
		for _, p := range br.pieces {
			switch p.kind {
			case pieceForced:
				usage.Forced++
			case pieceCut:
				usage.Cut++
			default:
				usage.Kept++
			}
		}
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
// but those that may still change (see hold) and a tail that might
// begin a stop string.
func (r *textRun) released(i int) []Token {
	br := r.branches[i]
	end := len(br.gen)
	if !br.done {
		end = r.hold(br)
		if r.maxStop > 0 {
			for end > br.taken && br.pieces[end-1].start+len(br.gen[end-1].Bytes) > len(br.text)-r.maxStop+1 {
				end--
			}
		}
	}
	if end <= br.taken {
		return nil
	}
	out := br.gen[br.taken:end]
	br.taken = end
	return out
}
