package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/reins-go/reins"
)

// chooseJSON is choose's --json output.
type chooseJSON struct {
	Choice string `json:"choice"`
	// Healed is what --heal took back from the prompt.
	Healed  string         `json:"healed,omitempty"`
	Options []chosenOption `json:"options"`
}

type chosenOption struct {
	Text    string  `json:"text"`
	Logprob float64 `json:"logprob"`
	Prob    float64 `json:"prob"`
	// TopK and Bound: scored on a server through its top alternatives
	// (approximate); Logprob an upper bound (see reins.Option).
	TopK  bool `json:"top_k,omitempty"`
	Bound bool `json:"bound,omitempty"`
	// Tokens are the option's tokens with their logprobs (and
	// --top-logprobs alternatives).
	Tokens []reins.Token `json:"tokens"`
}

func cmdChoose(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("choose", flag.ContinueOnError)
	var mf modelFlags
	mf.register(fs)
	mf.registerServer(fs)
	var options listFlag
	fs.Var(&options, "option", "an option (repeat for each; at least one)")
	then := fs.String("then", "", "text that follows every option and is scored with it")
	temp := fs.Float64("temperature", 0, "0 picks the most probable option; above 0 samples one")
	seed := fs.Uint64("seed", 0, "random seed for --temperature")
	topLogprobs := fs.Int("top-logprobs", 0, "alternatives to report per option token (with --json)")
	heal := fs.Bool("heal", false, "take the prompt's last token back and score it spelled again with each option (a prompt ending in a space)")
	asJSON := fs.Bool("json", false, `print {"choice": ..., "options": [{"text", "logprob", "prob", "tokens"}]}`)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: reins choose [flags] --option A --option B ... PROMPT\nEvery option is scored in full after PROMPT; the table lists them most probable first, the chosen one marked *.")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("choose takes one PROMPT argument, got %d (quote the prompt)", len(pos))
	}
	if len(options) == 0 {
		return usagef("choose needs options: --option A --option B ...")
	}
	if *topLogprobs < 0 {
		return usagef("--top-logprobs %d: want a count ≥ 0", *topLogprobs)
	}
	if *heal && mf.remote.remote() {
		return usagef("--heal is for a model in process: a server (--backend %s) tokenizes the prompt itself", mf.remote.backend)
	}
	if _, err := reins.Choice(options...); err != nil {
		return optionFlagError(err)
	}
	m, err := mf.load(1)
	if err != nil {
		return err
	}
	defer m.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sel, err := m.Choose(ctx, pos[0], options, reins.ChooseOptions{Temperature: *temp, Seed: *seed, Then: *then,
		TopLogprobs: *topLogprobs, Heal: *heal})
	if err != nil {
		return flagError(err)
	}
	order := make([]int, len(sel.Options))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(sel.Options[b].Prob, sel.Options[a].Prob) })
	if *asJSON {
		out := chooseJSON{Choice: sel.Choice, Healed: sel.Healed}
		for _, i := range order {
			o := sel.Options[i]
			out.Options = append(out.Options, chosenOption{o.Text, o.Logprob, o.Prob, o.TopK, o.Bound, o.Tokens})
		}
		return json.NewEncoder(stdout).Encode(out)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\toption\tprob\tlogprob\ttokens")
	topK := false
	for _, i := range order {
		o := sel.Options[i]
		mark := ""
		if i == sel.Index {
			mark = "*"
		}
		bound := ""
		if o.Bound {
			bound = "≤"
		}
		topK = topK || o.TopK
		fmt.Fprintf(w, "%s\t%s\t%.4f\t%s%.4f\t%d\n", mark, strconv.Quote(o.Text), o.Prob, bound, o.Logprob, len(o.Tokens))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if topK {
		fmt.Fprintln(stderr, "reins: the server returns only its top alternatives: each option was followed through them (approximate); ≤ marks an option that left them, its logprob an upper bound")
	}
	return nil
}

// optionFlagError turns the library's refusal of an option list
// (options[i] empty, or a repeat) into a usage error about --option.
func optionFlagError(err error) error {
	var oe *reins.OptionError
	if !errors.As(err, &oe) || !strings.HasPrefix(oe.Field, "options") {
		return err
	}
	return usagef("--option %s: %s", oe.Value, strings.ReplaceAll(strings.ReplaceAll(oe.Want, "options[", "--option #"), "]", ""))
}
