package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"unicode"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/decode"
)

// listFlag collects a repeated flag (--stop, --relax, --option).
type listFlag []string

func (s *listFlag) String() string     { return strings.Join(*s, ",") }
func (s *listFlag) Set(v string) error { *s = append(*s, v); return nil }

// choiceJSON is one completion in --json output, in OpenAI's shape.
type choiceJSON struct {
	Index int    `json:"index"`
	Text  string `json:"text"`
	// Healed and Prefill: with --heal, the bytes taken back from the
	// prompt that the tokens spell first; with --prefill, the output's
	// given beginning, before Text.
	Healed       string `json:"healed,omitempty"`
	Prefill      string `json:"prefill,omitempty"`
	FinishReason string `json:"finish_reason"`
	Logprobs     struct {
		Content []reins.Token `json:"content"`
	} `json:"logprobs"`
	// Value is the parsed JSON value, with --schema or --json-value.
	Value any `json:"value,omitempty"`
	// Usage is what the output cost on a server (--backend).
	Usage *decode.Usage `json:"usage,omitempty"`
}

// Bounds on the sizes generate's flags ask for.
const (
	maxGenTokens = 1 << 20
	maxBranches  = 1024
	// maxGenRecords bounds the token records one run may keep, each
	// with its alternatives: --n × tokens × (1 + --top-logprobs), where
	// tokens is --max-tokens or the context, the smaller. A record of an
	// alternative takes about 100 bytes with its JSON, so this is some
	// 400 MB: 8 continuations of 4,096 tokens with 100 alternatives each
	// fit, 1,024 of 100,000 tokens with 265 (gigabytes) do not.
	maxGenRecords = 1 << 22
)

func cmdGenerate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	var mf modelFlags
	mf.register(fs)
	mf.registerServer(fs)
	maxTokens := fs.Int("max-tokens", reins.DefaultMaxTokens, "most tokens to generate")
	temp := fs.Float64("temperature", 0, "sampling temperature (0: greedy)")
	topP := fs.Float64("top-p", 0, "nucleus sampling: keep the most likely tokens up to this probability (0: off)")
	topK := fs.Int("top-k", 0, "keep only the k most likely tokens (0: off)")
	minP := fs.Float64("min-p", 0, "keep tokens at least this fraction as likely as the best (0: off)")
	seed := fs.Uint64("seed", 0, "random seed; the same seed gives the same output")
	topLogprobs := fs.Int("top-logprobs", 0, "alternatives to report per token")
	n := fs.Int("n", 1, "number of continuations, sharing the prompt")
	asJSON := fs.Bool("json", false, "print one JSON object with text and logprobs")
	html := htmlFlag(fs)
	heal := fs.Bool("heal", false, "take the prompt's last token back and let the output spell it again (a prompt ending in a space)")
	prefill := fs.String("prefill", "", "the output's beginning: the model continues it, the constraint starts past it, and it is printed first")
	var stops listFlag
	fs.Var(&stops, "stop", "stop at this string (repeatable); it is left out of the text")
	var cf constraintFlags
	cf.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: reins generate [flags] PROMPT\nUnder a constraint, only a complete output is printed; an output the budget cut is an error (exit status 1).")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	cf.seen(fs)
	if len(pos) != 1 {
		return usagef("generate takes one PROMPT argument, got %d (quote the prompt)", len(pos))
	}
	if pos[0] == "" {
		return usagef("generate: PROMPT is empty: give at least one character")
	}
	switch {
	case *topLogprobs < 0:
		return usagef("--top-logprobs %d: want a count ≥ 0", *topLogprobs)
	case *n < 1 || *n > maxBranches:
		return usagef("--n %d: want 1 to %d", *n, maxBranches)
	case *maxTokens < 1 || *maxTokens > maxGenTokens:
		return usagef("--max-tokens %d: want 1 to %d", *maxTokens, maxGenTokens)
	case *heal && mf.remote.remote():
		return usagef("--heal is for a model in process: a server (--backend %s) tokenizes the prompt itself", mf.remote.backend)
	}
	opts := reins.Options{
		MaxTokens: *maxTokens, Stop: stops, TopLogprobs: *topLogprobs, Heal: *heal, Prefill: *prefill,
		Temperature: *temp, TopK: *topK, TopP: *topP, MinP: *minP, Seed: *seed,
	}
	if err := (decode.SamplingOptions{Temperature: *temp, TopK: *topK, TopP: *topP, MinP: *minP}).Validate(); err != nil {
		return flagError(err)
	}
	cf.server = mf.remote.remote()
	if opts.Constraint, err = cf.constraint(stderr); err != nil {
		return err
	}
	m, err := mf.load(min(*n, 8))
	if err != nil {
		return err
	}
	defer m.Close()
	tokens := *maxTokens
	if lb, ok := m.Backend().(decode.LogitsBackend); ok {
		tokens = min(tokens, lb.ContextSize())
	}
	if records := int64(*n) * int64(tokens) * int64(1+*topLogprobs); records > maxGenRecords {
		return usagef("--n %d × %d tokens × (1 + --top-logprobs %d) is %d token records to keep: want at most %d (fewer continuations, tokens or alternatives)", *n, tokens, *topLogprobs, records, maxGenRecords)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	prompt := pos[0]

	if !*asJSON && *n == 1 && opts.Constraint == nil && !opts.Heal {
		// Stream the text as it comes.
		// The prefill is printed with the first token (or at a clean
		// end): a generation refused before it starts prints nothing.
		s := m.Stream(ctx, prompt, opts)
		started := false
		for tok := range s.Tokens() {
			if !started {
				fmt.Fprint(stdout, opts.Prefill)
				started = true
			}
			fmt.Fprint(stdout, tok.Token)
		}
		if !started && s.Err() == nil {
			fmt.Fprint(stdout, opts.Prefill)
			started = true
		}
		if started {
			fmt.Fprintln(stdout)
		}
		if err := writeHTML(*html, completionsPage(prompt, prompt, s.Completion()), stderr); err != nil {
			return err
		}
		return flagError(s.Err())
	}
	// Under a constraint nothing is printed until the output is known to
	// be complete (and valid, for JSON).
	cs, err := m.GenerateN(ctx, prompt, *n, opts)
	if err != nil {
		return unfinished(flagError(err))
	}
	// The output comes first: a page that cannot be written loses
	// nothing but itself.
	if err := printCompletions(stdout, cs, *asJSON); err != nil {
		return err
	}
	return writeHTML(*html, completionsPage(prompt, prompt, cs...), stderr)
}

// printCompletions prints generate's output: the text of one
// completion, each of several under a header, or with --json their
// text and tokens.
func printCompletions(stdout io.Writer, cs []*reins.Completion, asJSON bool) error {
	if !asJSON {
		if len(cs) == 1 {
			fmt.Fprintln(stdout, cs[0].Prefill+cs[0].Text)
			return nil
		}
		for i, c := range cs {
			fmt.Fprintf(stdout, "--- %d (%s, logprob %.3f)\n%s\n", i, c.FinishReason, c.Logprob(), c.Prefill+c.Text)
		}
		return nil
	}
	choices := make([]choiceJSON, len(cs))
	for i, c := range cs {
		choices[i] = choiceJSON{Index: i, Text: c.Text, Healed: c.Healed, Prefill: c.Prefill, FinishReason: c.FinishReason, Value: c.Value, Usage: c.Usage}
		choices[i].Logprobs.Content = c.Tokens
		if choices[i].Logprobs.Content == nil {
			choices[i].Logprobs.Content = []reins.Token{}
		}
	}
	enc := json.NewEncoder(stdout)
	if len(cs) == 1 {
		return enc.Encode(choices[0])
	}
	return enc.Encode(map[string]any{"choices": choices})
}

// flagError turns a library *OptionError into a usage error that names
// the flag (TopP is --top-p).
func flagError(err error) error {
	var oe *decode.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	var flag []rune
	for i, r := range oe.Field {
		if unicode.IsUpper(r) {
			if i > 0 {
				flag = append(flag, '-')
			}
			r = unicode.ToLower(r)
		}
		flag = append(flag, r)
	}
	return usagef("--%s %s: %s", string(flag), oe.Value, oe.Want)
}

// unfinished adds to an error for unfinished outputs how far each got,
// and words an output that broke a --relax keyword for the command line.
func unfinished(err error) error {
	var inv *reins.InvalidOutputError
	if errors.As(err, &inv) && len(inv.Relaxed) > 0 {
		return fmt.Errorf("the output fails the schema's keywords %v, which --relax left out of the grammar (nothing printed): %w", inv.Relaxed, inv.Err)
	}
	var u *reins.UnfinishedError
	if !errors.As(err, &u) || u.Completion == nil || len(u.Completion.Tokens) == 0 {
		return err
	}
	text := u.Completion.Text
	if len(text) > 200 {
		text = text[:200] + "..."
	}
	return fmt.Errorf("%w (nothing printed; the partial output, %d tokens: %q)", err, len(u.Completion.Tokens), text)
}
