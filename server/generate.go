package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/vocab"
)

// job is one choice to generate: a prompt, the options, and what to
// report.
type job struct {
	index       int
	prompt      string
	chat        bool // tokenize the chat format's markers as special tokens
	promptToks  int  // counted before the job was queued
	maxTokens   int  // 0: score only (echo) or nothing
	echo        bool // score the prompt's tokens
	topLogprobs int
	opts        decode.Options
	con         *reins.Constraint
	conParam    string // the request field that gave con
	started     time.Time
	// echoed is set by run once the prompt is scored (echo), before
	// the first token is emitted.
	echoed *decode.ScoreResult
}

// result is one generated choice.
type result struct {
	text         string
	tokens       []decode.Token
	finish       string
	promptTokens int
	echoed       *decode.ScoreResult
	// unfinished says why a constrained output was cut (the budget ran
	// out before it could finish); the finish reason is then "length".
	unfinished string
}

// emitFunc receives each token as it is generated; an error stops the
// generation (the client went away or stopped reading).
type emitFunc func(t decode.Token) error

// errEmit wraps an emit failure, which ends a choice without an error
// response (nobody is listening).
type errEmit struct{ err error }

func (e errEmit) Error() string { return "write to client: " + e.err.Error() }
func (e errEmit) Unwrap() error { return e.err }

// tokenize tokenizes a prompt as a slot will (chat markers as special
// tokens when chat is set), to count its tokens before it is queued.
func (s *Server) countTokens(param, prompt string, chat bool) (int, *apiError) {
	// A prompt too long for the context whatever its tokens is refused
	// before it is tokenized, which holds the lock decoding needs (a
	// megabyte took 0.7 s, every stream waiting).
	if c, least := s.cfg.Backend.ContextSize(), (len(prompt)+s.longestToken-1)/max(1, s.longestToken); s.longestToken > 0 && least >= c {
		return 0, withCode(badRequest(param, fmt.Sprintf("the prompt is %d bytes, at least %d tokens; the model's context holds %d, with room for at least one more", len(prompt), least, c)), "context_length_exceeded")
	}
	v := &view{bt: s.bt}
	if chat {
		v.markers = s.markers
	}
	toks, err := v.Tokenize(prompt, true)
	if err != nil {
		return 0, badRequest(param, "cannot tokenize: "+err.Error())
	}
	if n, c := len(toks), s.cfg.Backend.ContextSize(); n >= c {
		return 0, withCode(badRequest(param, fmt.Sprintf("the prompt is %d tokens; the model's context holds %d, with room for at least one more", n, c)), "context_length_exceeded")
	}
	return len(toks), nil
}

// run generates one choice on a slot. It runs on a goroutine of its
// own, so a panic below is recovered here as an error: the server keeps
// serving the others.
func (s *Server) run(ctx context.Context, j *job, emit emitFunc) (res *result, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic in generation", "panic", p, "stack", string(debug.Stack()))
			res, err = nil, fmt.Errorf("internal error (a bug in reins): %v", p)
		}
	}()
	v, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer s.release(v)
	if j.chat {
		v.markers = s.markers
	}
	res = &result{promptTokens: j.promptToks, finish: decode.FinishLength}
	s.metrics.tokens.WithLabelValues("prompt").Add(float64(j.promptToks))
	if j.echo {
		sr, err := decode.Score(ctx, v, j.prompt, decode.ScoreOptions{TopLogprobs: j.topLogprobs})
		if err != nil {
			return nil, err
		}
		res.echoed, j.echoed = sr, sr
		s.metrics.tokens.WithLabelValues("scored").Add(float64(len(sr.Tokens)))
	}
	if j.maxTokens == 0 {
		return res, nil
	}
	st := decode.Generate(ctx, v, j.prompt, j.opts)
	var emitErr error
	first := true
	for t := range st.Tokens() {
		if first {
			first = false
			s.metrics.ttft.Observe(time.Since(j.started).Seconds())
		}
		if emit != nil {
			if emitErr = emit(t); emitErr != nil {
				break
			}
		}
	}
	c := st.Completion()
	if c != nil {
		s.metrics.tokens.WithLabelValues("completion").Add(float64(len(c.Tokens)))
	}
	if emitErr != nil {
		return nil, errEmit{emitErr}
	}
	err = st.Err()
	var u *decode.UnfinishedError
	switch {
	case err == nil:
	case errors.As(err, &u) && u.Reason == decode.FinishLength && ctx.Err() == nil:
		// The budget or the context could not hold a complete output:
		// OpenAI's "length", with the partial text, and a note.
		if c == nil {
			c = u.Completion
		}
		res.unfinished = u.Detail
	case errors.Is(err, reins.ErrWorkBudget) && j.con != nil:
		// The request's constraint is too costly to follow: a grammar
		// that waits for thousands of token terminals, or is ambiguous.
		return nil, withCode(badRequest(j.conParam, "the constraint is too costly to follow at this point of the output: "+err.Error()), "constraint_too_costly")
	default:
		return nil, err
	}
	if c == nil {
		return nil, errors.New("the generation ended without a completion")
	}
	res.text, res.tokens, res.finish = c.Text, c.Tokens, c.FinishReason
	if j.con != nil && res.unfinished == "" && !j.con.HasTokenTerminals() {
		if err := j.con.Match([]byte(c.Text)); err != nil {
			if len(j.opts.Stop) > 0 && c.FinishReason == decode.FinishStop {
				res.unfinished = "a stop string cut the constrained output: " + err.Error()
			} else {
				return nil, fmt.Errorf("reins bug: the constrained output fails its constraint: %w", err)
			}
		}
	}
	if res.unfinished != "" {
		// Not "stop": a client reads that as a complete output.
		res.finish = decode.FinishLength
	}
	return res, nil
}

// runAll runs the jobs concurrently, each on its own slot, and returns
// their results in order, or the first error.
func (s *Server) runAll(ctx context.Context, jobs []*job, emit func(j *job) emitFunc) ([]*result, error) {
	out := make([]*result, len(jobs))
	errs := make([]error, len(jobs))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			var e emitFunc
			if emit != nil {
				e = emit(j)
			}
			out[i], errs[i] = s.run(ctx, j, e)
			if errs[i] != nil {
				cancel() // one failed: the response fails
			}
		})
	}
	wg.Wait()
	// The first error that is not a cancellation caused by another's.
	var first error
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
		if first == nil {
			first = err
		}
	}
	return out, first
}

// runError turns an error of run into the response: nil when the client
// is gone (nothing to answer).
func (s *Server) runError(r *http.Request, err error) *apiError {
	var ae *apiError
	var oe *decode.OptionError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, new(errEmit)), r.Context().Err() != nil:
		return nil
	case errors.As(err, &oe):
		return badRequest(oe.Field, oe.Value+": "+oe.Want)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Message: "the server is shutting down", retryAfter: 1}
	}
	s.log.Error("generation failed", "path", r.URL.Path, "err", err)
	return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: err.Error()}
}

// utf8Split returns the longest prefix of b that ends on a whole
// character (or on bytes that no continuation can make one) and the
// rest, which waits for the next token.
func utf8Split(b []byte) (whole, rest []byte) {
	for k := 1; k <= min(3, len(b)); k++ {
		c := b[len(b)-k]
		if c < 0x80 {
			break // ASCII: everything before is whole
		}
		if c >= 0xC0 { // the start of the last character
			if !utf8.FullRune(b[len(b)-k:]) {
				return b[:len(b)-k], b[len(b)-k:]
			}
			break
		}
	}
	return b, nil
}

// tokenText returns a token's bytes as text, for the legacy logprobs
// arrays: the exact bytes are in the entries' "bytes".
func tokenText(t decode.Token) string { return t.Token }

// unscoredText returns the texts of the unscored prompt tokens a client
// would see (not BOS or other control tokens).
func unscoredText(v *vocab.Vocab, ids []int) []string {
	var out []string
	for _, id := range ids {
		if id < 0 || id >= v.Len() {
			continue
		}
		switch v.Kind(id) {
		case vocab.KindControl, vocab.KindUnused:
			continue
		}
		out = append(out, string(v.Bytes(id)))
	}
	return out
}
