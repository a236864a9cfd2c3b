package reins

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/logspace"
)

// Option is one option of a choice, with its probability.
type Option struct {
	Text string `json:"text"`
	// Logprob is the log-probability, under the model, of the option's
	// tokens (and of ChooseOptions.Then's) after the prompt.
	Logprob float64 `json:"logprob"`
	// Prob is the option's probability among the options: e^Logprob
	// normalised over them, so the options' Probs sum to 1.
	Prob float64 `json:"prob"`
	// Tokens are the option's tokens (then Then's), each with its
	// log-probability.
	Tokens []Token `json:"tokens"`
	// TopK: the option was scored on a server through the alternatives
	// it returns at each position (the tokenization followed may not be
	// the model's own). Bound: the option left those alternatives, and
	// Logprob is an upper bound (the probability outside them).
	TopK  bool `json:"top_k,omitempty"`
	Bound bool `json:"bound,omitempty"`
}

// Selection is what Choose returns: the chosen option and every option
// with its probability, in the order given.
type Selection struct {
	Choice  string   `json:"choice"`
	Index   int      `json:"index"`
	Options []Option `json:"options"`
	// Healed is what ChooseOptions.Heal took back from the prompt: each
	// option was scored spelled after it.
	Healed string `json:"healed,omitempty"`
}

// ChooseOptions configures Choose. The zero value picks the most
// probable option.
type ChooseOptions struct {
	// Temperature 0 picks the most probable option; above 0 samples an
	// option with probability proportional to Prob^(1/Temperature),
	// seeded by Seed.
	Temperature float64
	Seed        uint64
	// Then is text that follows every option and is scored with it (a
	// newline, a closing quote): an option whose own text is a prefix of
	// a likelier continuation is then not favoured by stopping early.
	Then string
	// TopLogprobs is how many alternatives each option token reports.
	TopLogprobs int
	// Heal scores each option after the prompt's last token taken back
	// and spelled again with the option (see Options.Heal), so that a
	// prompt ending in a space does not penalise options that begin with
	// one word token. Local models only.
	Heal bool
}

// Choose scores every option as a continuation of prompt and returns
// them all with their probabilities, and the chosen one. The scores are
// exact: each option is scored in full in the prompt's context, token by
// token, byte for byte (see decode.Continuation); options that share a
// prefix share its evaluation.
func (m *Model) Choose(ctx context.Context, prompt string, options []string, opts ChooseOptions) (*Selection, error) {
	if err := checkOptions(options); err != nil {
		return nil, err
	}
	leave, err := m.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	scored, healed, err := m.scoreOptions(ctx, prompt, options, opts.Then, opts.TopLogprobs, opts.Heal)
	if err != nil {
		return nil, err
	}
	i, err := pick(scored, decode.SamplingOptions{Temperature: opts.Temperature, Seed: opts.Seed})
	if err != nil {
		return nil, err
	}
	return &Selection{Choice: options[i], Index: i, Options: scored, Healed: healed}, nil
}

// chooseN is Generate under a Choice: n picks among the scored options.
func (m *Model) chooseN(ctx context.Context, prompt string, options []string, n int, opts Options) ([]*Completion, error) {
	if err := checkChoiceOptions(opts); err != nil {
		return nil, err
	}
	scored, healed, err := m.scoreOptions(ctx, prompt, options, "", opts.TopLogprobs, opts.Heal)
	if err != nil {
		return nil, err
	}
	out := make([]*Completion, n)
	for k := range out {
		i, err := pick(scored, decode.SamplingOptions{Temperature: opts.Temperature, TopK: opts.TopK, TopP: opts.TopP,
			MinP: opts.MinP, Seed: opts.Seed + uint64(k)})
		if err != nil {
			return nil, err
		}
		out[k] = &Completion{
			Completion: decode.Completion{Text: options[i], Tokens: slices.Clone(scored[i].Tokens), FinishReason: decode.FinishStop},
			Healed:     healed,
			Options:    slices.Clone(scored),
		}
	}
	return out, nil
}

// checkChoiceOptions refuses the options that mean nothing when the
// output is one whole option, scored rather than generated.
func checkChoiceOptions(opts Options) error {
	const want = "not under a Choice: the output is one whole option"
	switch {
	case opts.Prefill != "":
		return &OptionError{Field: "Prefill", Value: fmt.Sprintf("%q", opts.Prefill), Want: want}
	case len(opts.Stop) > 0:
		return &OptionError{Field: "Stop", Value: fmt.Sprintf("%q", opts.Stop), Want: want}
	case opts.Sampler != nil:
		return &OptionError{Field: "Sampler", Value: "set", Want: want + ", picked by Temperature, TopK, TopP, MinP and Seed"}
	}
	return nil
}

// scoreOptions scores each option (followed by then) after prompt and
// normalises their probabilities. With heal, the prompt's last token is
// taken back (the healed text, returned) and spelled again before each
// option; the options' tokens then spell healed+option.
func (m *Model) scoreOptions(ctx context.Context, prompt string, options []string, then string, topN int, heal bool) ([]Option, string, error) {
	if heal && m.logits != nil {
		cut, healed, err := m.healPoint(prompt)
		if err != nil {
			return nil, "", err
		}
		spelled := make([]string, len(options))
		for i, o := range options {
			spelled[i] = healed + o
		}
		out, _, err := m.scoreOptions(ctx, cut, spelled, then, topN, false)
		for i := range out {
			out[i].Text = options[i]
		}
		return out, healed, err
	}
	var out []Option
	var err error
	if m.text != nil {
		out, err = m.scoreOptionsText(ctx, prompt, options, then, topN)
	} else {
		out, err = m.scoreOptionsLogits(ctx, prompt, options, then, topN)
	}
	if err != nil {
		return nil, "", err
	}
	normalise(out)
	return out, "", nil
}

// scoreOptionsText scores options on a server: exactly when it scores a
// given text, else through its top alternatives.
func (m *Model) scoreOptionsText(ctx context.Context, prompt string, options []string, then string, topN int) ([]Option, error) {
	ps, ok := m.text.(decode.PromptScorer)
	if !ok || !m.text.Capabilities().Echo {
		return m.scoreOptionsTopK(ctx, prompt, options, then)
	}
	out := make([]Option, len(options))
	for i, o := range options {
		res, err := ps.ScorePrompt(ctx, prompt, o+then, topN)
		if err != nil {
			return nil, optionErr(i, o, err)
		}
		out[i] = Option{Text: o, Logprob: res.Sum, Tokens: res.Tokens}
	}
	return out, nil
}

// scoreOptionsLogits scores options exactly on a local model.
func (m *Model) scoreOptionsLogits(ctx context.Context, prompt string, options []string, then string, topN int) ([]Option, error) {
	l, err := m.lease(ctx, 1)
	if err != nil {
		return nil, err
	}
	defer l.release()
	type job struct {
		i      int
		prefix []int
		toks   []int
	}
	jobs := make([]job, len(options))
	for i, o := range options {
		prefix, toks, err := decode.Continuation(l, prompt, o+then)
		if err != nil {
			return nil, optionErr(i, o, err)
		}
		jobs[i] = job{i, prefix, toks}
	}
	// In token order, each option evaluates only what it does not share
	// with the one before (the backend keeps the common prefix).
	slices.SortFunc(jobs, func(a, b job) int { return cmp.Or(slices.Compare(a.prefix, b.prefix), slices.Compare(a.toks, b.toks)) })
	out := make([]Option, len(options))
	for _, j := range jobs {
		res, err := decode.ScoreTokens(ctx, l, j.prefix, j.toks, topN)
		if err != nil {
			return nil, optionErr(j.i, options[j.i], err)
		}
		out[j.i] = Option{Text: options[j.i], Logprob: res.Sum, Tokens: res.Tokens}
	}
	return out, nil
}

// optionErr says which option (by index, and its first 40 characters)
// err met.
func optionErr(i int, option string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("option %d %.40q: %w", i, option, err)
}

// normalise sets the options' probabilities: e^Logprob over their sum.
func normalise(out []Option) {
	z := math.Inf(-1)
	for _, o := range out {
		z = logspace.Add(z, o.Logprob)
	}
	for i := range out {
		out[i].Prob = math.Exp(out[i].Logprob - z)
	}
}

// pick chooses an option: the most probable at temperature 0, else a
// draw from the options' distribution tempered by temperature.
func pick(options []Option, sampling decode.SamplingOptions) (int, error) {
	s, err := decode.NewSampler(sampling)
	if err != nil {
		return 0, err
	}
	lp := make([]float32, len(options))
	for i, o := range options {
		lp[i] = float32(math.Log(o.Prob))
	}
	return s.Sample(lp)
}
