package reins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/vocab"
)

// Token is one generated or scored token: its id, exact bytes,
// log-probability and top alternatives, in the shape of an entry of
// OpenAI's logprobs.content[], and under a constraint the same for the
// constrained distribution.
type Token = decode.Token

// Options configures a generation. The zero value generates up to
// DefaultMaxTokens tokens greedily, with no constraint.
type Options struct {
	// Constraint, when set, keeps the output in its language: a complete
	// output comes back, or an error (*UnfinishedError when the budget,
	// the context or a cancellation cut it first). Under a Choice the
	// output is one whole option, scored in full rather than generated:
	// Temperature, TopK, TopP, MinP and Seed pick among the options'
	// probabilities (Completion.Options), MaxTokens does not apply,
	// Stop, Prefill and Sampler are refused, and the tokens carry the
	// model's log-probabilities only (Constrained is nil).
	Constraint *Constraint
	// MaxTokens caps the generated tokens; 0 means DefaultMaxTokens.
	// Under a constraint, the tokens near the end of the budget are
	// chosen so that the output can still finish within it.
	MaxTokens int
	// Temperature 0 is greedy; above 0 samples. TopK, TopP and MinP
	// filter the tokens sampled from (0: off); Seed seeds the sampler
	// (the same seed gives the same output).
	Temperature float64
	TopK        int
	TopP        float64
	MinP        float64
	Seed        uint64
	// Sampler, when set, replaces the built-in sampler: it sees the
	// whole (constrained) log-probability vector.
	Sampler decode.Sampler
	// Stop ends the output at the first of these strings (not
	// included), which may straddle tokens.
	Stop []string
	// TopLogprobs is how many alternatives each token reports (any
	// number up to the vocabulary size).
	TopLogprobs int
	// Heal takes the prompt's last token back when it is text, and lets
	// the output spell it again with whatever tokens the model and the
	// constraint choose (token healing): a prompt that ends "is: " does
	// not force the output to start after a lone space token. The bytes
	// taken back are Completion.Healed; Text is what follows them, while
	// the first tokens spell both. Healing is itself a constraint (the
	// output must begin with the healed bytes), so the tokens report
	// Constrained also when Constraint is nil. A prompt is not healed
	// where a stop string could begin in the bytes taken back. The
	// tokens that start within the healed bytes do not count against
	// MaxTokens (see decode.Options.HealedBytes), however many the
	// model spells them in. Local
	// models only (a server tokenizes the prompt itself; there Heal does
	// nothing), and not Stream.
	Heal bool
	// Prefill is the beginning of the output, decided before the
	// generation (an assistant prefix, or a value chosen by other
	// means): the model continues prompt+Prefill, the constraint starts
	// past it, and Completion.Text and Tokens are what follows it, while
	// the whole output Prefill+Text is what is checked and parsed. A
	// Prefill no output of the constraint begins with is an
	// *OptionError. Not with Heal, nor under a Choice.
	Prefill string
}

// DefaultMaxTokens is the token budget when Options.MaxTokens is 0.
const DefaultMaxTokens = decode.DefaultMaxTokens

// Completion is one generated output.
type Completion struct {
	decode.Completion
	// Healed is what Options.Heal took back from the prompt: the
	// completion's tokens spell Healed, then Text.
	Healed string `json:"healed,omitempty"`
	// Prefill is Options.Prefill: the output is Prefill, then Text.
	Prefill string `json:"prefill,omitempty"`
	// Value is the parsed output under a JSON constraint (numbers as
	// json.Number).
	Value any `json:"value,omitempty"`
	// Options is, under a Choice constraint, every option with its
	// probability, in the order given.
	Options []Option `json:"options,omitempty"`
}

// Generate generates one output after prompt.
func (m *Model) Generate(ctx context.Context, prompt string, opts Options) (*Completion, error) {
	cs, err := m.GenerateN(ctx, prompt, 1, opts)
	if len(cs) == 1 {
		return cs[0], err
	}
	return nil, err
}

// GenerateN generates n outputs after prompt, output i sampled with
// seed opts.Seed+i. The prompt is evaluated once; branches run together
// as far as the backend has free sequences, in groups beyond. The
// outputs come back with the error, also when it is an *UnfinishedError
// (one per unfinished output, joined; Branch says which).
func (m *Model) GenerateN(ctx context.Context, prompt string, n int, opts Options) ([]*Completion, error) {
	if n < 1 {
		return nil, &OptionError{Field: "n", Value: fmt.Sprint(n), Want: "want at least 1 output"}
	}
	leave, err := m.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	if c := opts.Constraint; c != nil && c.options != nil {
		return m.chooseN(ctx, prompt, c.options, n, opts)
	}
	if opts.Prefill != "" {
		if opts.Heal {
			return nil, &OptionError{Field: "Prefill", Value: fmt.Sprintf("%q", opts.Prefill), Want: "not with Heal"}
		}
	}
	run := opts // what generates: opts, or after healing
	healed := ""
	if opts.Heal && m.logits != nil {
		var err error
		if prompt, healed, err = m.healPoint(prompt); err != nil {
			return nil, err
		}
		if stopsInHealed(healed, opts.Stop) {
			prompt, healed = prompt+healed, ""
		}
		if healed != "" {
			base := opts.Constraint
			if base == nil {
				if base, err = m.anyTextConstraint(); err != nil {
					return nil, err
				}
			}
			if run.Constraint, err = base.after([]byte(healed)); err != nil {
				return nil, err
			}
		}
	}
	dopts, err := m.decodeOptions(run)
	if err != nil {
		return nil, err
	}
	dopts.HealedBytes = len(healed) // the tokens that spell them again are not the caller's
	var out []*Completion
	var errs []error
	for len(out) < n {
		var cs []*decode.Completion
		if m.text != nil {
			cs, err = decode.CompleteN(ctx, m.text, prompt, n, dopts)
		} else {
			l, lerr := m.lease(ctx, n-len(out))
			if lerr != nil {
				return out, lerr
			}
			o := dopts
			o.Sampling.Seed += uint64(len(out))
			cs, err = decode.CompleteN(ctx, l, prompt, len(l.seqs), o)
			l.release()
		}
		for _, c := range cs {
			c.Text = strings.TrimPrefix(c.Text, healed) // the healing grammar starts every output with it
		}
		if len(cs) == 0 || (err != nil && !errors.Is(err, ErrUnfinished)) {
			return append(out, wrap(cs, healed)...), err
		}
		base := len(out)
		cut := map[int]bool{}
		for _, e := range unwrapAll(err) {
			var u *UnfinishedError
			if errors.As(e, &u) {
				cut[u.Branch] = true
				u.Branch += base
				if u.Completion != nil && u.Completion != cs[u.Branch-base] {
					u.Completion.Text = strings.TrimPrefix(u.Completion.Text, healed)
				}
				errs = append(errs, u)
			}
		}
		for i, c := range cs {
			done, err := m.checked(opts, c, base+i, cut[i])
			done.Healed = healed
			out = append(out, done)
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return out, errors.Join(errs...)
}

// wrap turns decode's completions into this package's.
func wrap(cs []*decode.Completion, healed string) []*Completion {
	out := make([]*Completion, len(cs))
	for i, c := range cs {
		out[i] = &Completion{Completion: *c, Healed: healed}
	}
	return out
}

// healPoint returns prompt without its last token, and that token's
// bytes, when the token is text and something is left before it; else
// the prompt as it is and "".
func (m *Model) healPoint(prompt string) (string, string, error) {
	m.mu.Lock()
	toks, err := m.logits.Tokenize(prompt, true)
	m.mu.Unlock()
	if err != nil {
		return "", "", fmt.Errorf("tokenize prompt: %w", err)
	}
	v := m.logits.Vocab()
	if len(toks) == 0 {
		return prompt, "", nil
	}
	last := toks[len(toks)-1]
	switch v.Kind(last) {
	case vocab.KindNormal, vocab.KindByte, vocab.KindUserDefined:
	default:
		return prompt, "", nil
	}
	p := string(v.Bytes(last))
	if p == "" || !strings.HasSuffix(prompt, p) || len(p) == len(prompt) {
		return prompt, "", nil
	}
	return prompt[:len(prompt)-len(p)], p, nil
}

// stopsInHealed reports whether a stop string could begin in healed,
// the bytes healing takes back: the output, which spells healed first,
// would be cut there before it begins, so such a prompt is not healed.
func stopsInHealed(healed string, stops []string) bool {
	for k := range len(healed) {
		for _, s := range stops {
			if t := healed[k:]; strings.HasPrefix(s, t) || strings.Contains(t, s) {
				return true
			}
		}
	}
	return false
}

// unwrapAll returns the errors joined in err (or err alone).
func unwrapAll(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// decodeOptions turns opts into the generation loop's, binding the
// constraint to the model's vocabulary.
func (m *Model) decodeOptions(opts Options) (decode.Options, error) {
	d := decode.Options{
		MaxTokens:   opts.MaxTokens,
		Stop:        opts.Stop,
		TopLogprobs: opts.TopLogprobs,
		Sampler:     opts.Sampler,
		Prefill:     opts.Prefill,
		Sampling: decode.SamplingOptions{Temperature: opts.Temperature, TopK: opts.TopK, TopP: opts.TopP,
			MinP: opts.MinP, Seed: opts.Seed},
	}
	prefill := []byte(opts.Prefill)
	switch c := opts.Constraint; {
	case c == nil:
	case m.text != nil:
		if len(prefill) > 0 && !c.textMatcher().Accept(prefill) {
			return d, &OptionError{Field: "Prefill", Value: fmt.Sprintf("%q", opts.Prefill), Want: "the beginning of an output of the " + c.desc}
		}
		d.TextConstraint = func() decode.TextConstraint {
			t := c.textMatcher()
			t.Accept(prefill)
			return t
		}
	default:
		a, err := c.automaton(m)
		if err != nil {
			return d, err
		}
		if _, err := a.NewMatcherAfter(prefill); err != nil {
			return d, &OptionError{Field: "Prefill", Value: fmt.Sprintf("%q", opts.Prefill), Want: "the beginning of an output of the " + c.desc + ": " + err.Error()}
		}
		d.Constraint = func() decode.Constraint {
			mt, _ := a.NewMatcherAfter(prefill) // checked above
			return mt
		}
	}
	return d, nil
}

// checked finishes a completion: under a constraint, a complete output
// is checked against the language (and parsed and validated, for JSON).
// skip is set when the generation already reported this output
// unfinished.
func (m *Model) checked(opts Options, c *decode.Completion, branch int, skip bool) (*Completion, error) {
	out := &Completion{Completion: *c, Prefill: opts.Prefill}
	con := opts.Constraint
	if con == nil || skip || con.HasTokenTerminals() {
		return out, nil
	}
	whole := opts.Prefill + c.Text
	switch err := con.Match([]byte(whole)); {
	case err == nil:
	case errors.As(err, new(*RejectError)) && len(opts.Stop) > 0:
		return out, &UnfinishedError{Branch: branch, Reason: decode.FinishStop, Detail: "a stop string cut the output: " + err.Error(), Completion: c}
	case errors.As(err, new(*RejectError)):
		return out, fmt.Errorf("reins bug: the constrained output leaves the %s: %w", con.desc, err)
	default:
		return out, err
	}
	if con.json != nil {
		if d := jsonDepth([]byte(whole)); d > MaxValidateDepth {
			return out, fmt.Errorf("the output nests arrays and objects more than %d deep (MaxValidateDepth), deeper than encoding/json decodes: Value is unset", MaxValidateDepth)
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(whole)))
		dec.UseNumber()
		if err := dec.Decode(&out.Value); err != nil {
			return out, fmt.Errorf("reins bug: the constrained output is not JSON: %w", err)
		}
	}
	return out, nil
}

// Stream is one generation in progress; see Model.Stream.
type Stream struct {
	m      *Model
	ctx    context.Context
	prompt string
	opts   Options
	err    error
	c      *Completion
	ran    bool
}

// Stream starts a generation whose tokens come as they are made:
//
//	s := m.Stream(ctx, prompt, opts)
//	for tok := range s.Tokens() {
//		fmt.Print(tok.Token)
//	}
//	if err := s.Err(); err != nil { ... }
//	fmt.Println(s.Completion().FinishReason)
//
// Nothing runs until Tokens is ranged over. Under a constraint the
// complete output is checked once it has ended.
func (m *Model) Stream(ctx context.Context, prompt string, opts Options) *Stream {
	return &Stream{m: m, ctx: ctx, prompt: prompt, opts: opts}
}

// Tokens yields the tokens as they are generated (a token that might
// begin a stop string is held back until it cannot). It can be ranged
// over once. When Model.Close begins in another goroutine, the stream
// ends after the token being yielded, with ErrClosed. Do not call Close
// inside the loop: Close waits for the stream, which waits for the
// loop's body.
func (s *Stream) Tokens() iter.Seq[Token] {
	return func(yield func(Token) bool) {
		if s.ran {
			return
		}
		s.ran = true
		leave, err := s.m.enter()
		if err != nil {
			s.err = err
			return
		}
		defer leave()
		if s.opts.Heal {
			s.err = &OptionError{Field: "Heal", Value: "true", Want: "not with Stream: use Generate"}
			return
		}
		if c := s.opts.Constraint; c != nil && c.options != nil {
			cs, err := s.m.chooseN(s.ctx, s.prompt, c.options, 1, s.opts)
			if s.err = err; err == nil {
				s.c = cs[0]
				for _, t := range s.c.Tokens {
					if !yield(t) || s.closed() {
						return
					}
				}
			}
			return
		}
		dopts, err := s.m.decodeOptions(s.opts)
		if err != nil {
			s.err = err
			return
		}
		var b decode.Backend = s.m.text
		if s.m.text == nil {
			l, err := s.m.lease(s.ctx, 1)
			if err != nil {
				s.err = err
				return
			}
			defer l.release()
			b = l
		}
		ds := decode.Generate(s.ctx, b, s.prompt, dopts)
		for t := range ds.Tokens() {
			if !yield(t) || s.closed() {
				return
			}
		}
		s.err = ds.Err()
		if c := ds.Completion(); c != nil {
			var err error
			s.c, err = s.m.checked(s.opts, c, 0, s.err != nil)
			if s.err == nil {
				s.err = err
			}
		}
	}
}

// closed reports whether Close has begun, and if so ends the stream
// with ErrClosed, so that Close, which waits for the stream, need not
// wait for the rest of the generation.
func (s *Stream) closed() bool {
	select {
	case <-s.m.closing:
		s.err, s.c = ErrClosed, nil
		return true
	default:
		return false
	}
}

// Err returns the error that ended the stream, once Tokens has ended:
// nil for a normal end, an *UnfinishedError when a constrained output
// was cut before it was complete.
func (s *Stream) Err() error { return s.err }

// Completion returns the whole output once Tokens has run to its end
// (nil before, or when the generation could not start): its text,
// tokens and finish reason ("stop" or "length"; see FinishReason).
func (s *Stream) Completion() *Completion { return s.c }
