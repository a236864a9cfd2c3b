package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/reins-go/reins/decode"
)

// listFlag collects a repeated flag (--stop, --relax).
type listFlag []string

func (s *listFlag) String() string     { return strings.Join(*s, ",") }
func (s *listFlag) Set(v string) error { *s = append(*s, v); return nil }

// choiceJSON is one completion in --json output, in OpenAI's shape.
type choiceJSON struct {
	Index        int    `json:"index"`
	Text         string `json:"text"`
	FinishReason string `json:"finish_reason"`
	Logprobs     struct {
		Content []decode.Token `json:"content"`
	} `json:"logprobs"`
	// Value is the parsed JSON value, with --schema or --json-value.
	Value any `json:"value,omitempty"`
}

func cmdGenerate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	var mf modelFlags
	mf.register(fs)
	maxTokens := fs.Int("max-tokens", 128, "most tokens to generate")
	temp := fs.Float64("temperature", 0, "sampling temperature (0: greedy)")
	topP := fs.Float64("top-p", 0, "nucleus sampling: keep the most likely tokens up to this probability (0: off)")
	topK := fs.Int("top-k", 0, "keep only the k most likely tokens (0: off)")
	minP := fs.Float64("min-p", 0, "keep tokens at least this fraction as likely as the best (0: off)")
	seed := fs.Uint64("seed", 0, "random seed; the same seed gives the same output")
	topLogprobs := fs.Int("top-logprobs", 0, "alternatives to report per token")
	n := fs.Int("n", 1, "number of continuations, sharing the prompt")
	asJSON := fs.Bool("json", false, "print one JSON object with text and logprobs")
	var stops listFlag
	fs.Var(&stops, "stop", "stop at this string (repeatable); it is left out of the text")
	cf := constraintFlags{generating: true}
	cf.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: reins generate [flags] PROMPT")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("generate takes one PROMPT argument, got %d (quote the prompt)", len(pos))
	}
	switch {
	case *topLogprobs < 0:
		return usagef("--top-logprobs %d: want a count ≥ 0", *topLogprobs)
	case *n < 1:
		return usagef("--n %d: want at least 1", *n)
	case *maxTokens < 1:
		return usagef("--max-tokens %d: want at least 1", *maxTokens)
	}
	opts := decode.Options{
		MaxTokens:   *maxTokens,
		Stop:        stops,
		TopLogprobs: *topLogprobs,
		Sampling:    decode.SamplingOptions{Temperature: *temp, TopK: *topK, TopP: *topP, MinP: *minP, Seed: *seed},
	}
	if err := opts.Sampling.Validate(); err != nil {
		return usagef("%v", err)
	}
	cf.stops = len(stops) > 0
	prog, err := cf.prog(stderr)
	if err != nil {
		return err
	}
	m, err := mf.load(*n)
	if err != nil {
		return err
	}
	defer m.Close()
	if prog != nil {
		a, err := bind(prog, m.Vocab())
		if err != nil {
			return err
		}
		opts.Constraint = a.NewMatcher()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	prompt := pos[0]

	if !*asJSON && *n == 1 {
		// Stream the text as it comes.
		printed := false
		var text strings.Builder
		finish, count := decode.FinishStop, 0
		for tok, err := range decode.Generate(ctx, m, prompt, opts) {
			if err != nil {
				if printed {
					fmt.Fprintln(stdout)
				}
				return err
			}
			fmt.Fprint(stdout, tok.Token)
			text.WriteString(tok.Token)
			printed = true
			count++
		}
		if count >= *maxTokens {
			finish = decode.FinishLength // perhaps unfinished: not checked
		}
		fmt.Fprintln(stdout)
		_, err := cf.checkJSON(text.String(), finish)
		return err
	}
	cs, err := decode.CompleteN(ctx, m, prompt, *n, opts)
	if err != nil {
		return err
	}
	values := make([]any, len(cs))
	for i, c := range cs {
		if values[i], err = cf.checkJSON(c.Text, c.FinishReason); err != nil {
			return fmt.Errorf("completion %d: %w", i, err)
		}
	}
	if !*asJSON {
		for i, c := range cs {
			fmt.Fprintf(stdout, "--- %d (%s, logprob %.3f)\n%s\n", i, c.FinishReason, c.Logprob(), c.Text)
		}
		return nil
	}
	choices := make([]choiceJSON, len(cs))
	for i, c := range cs {
		choices[i] = choiceJSON{Index: i, Text: c.Text, FinishReason: c.FinishReason, Value: values[i]}
		choices[i].Logprobs.Content = c.Tokens
		if choices[i].Logprobs.Content == nil {
			choices[i].Logprobs.Content = []decode.Token{}
		}
	}
	enc := json.NewEncoder(stdout)
	if *n == 1 {
		return enc.Encode(choices[0])
	}
	return enc.Encode(map[string]any{"choices": choices})
}
