package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/view"
)

func cmdScore(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("score", flag.ContinueOnError)
	var mf modelFlags
	mf.register(fs)
	mf.registerServer(fs)
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	html := htmlFlag(fs)
	prompt := fs.String("context", "", "text that conditions TEXT and is not scored (TEXT is scored exactly, byte for byte)")
	topLogprobs := fs.Int("top-logprobs", 1, "alternatives to report per token (the table shows the best)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: reins score [flags] TEXT")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("score takes one TEXT argument, got %d (quote the text)", len(pos))
	}
	if pos[0] == "" {
		return usagef("score: TEXT is empty: nothing to score")
	}
	if *topLogprobs < 0 {
		return usagef("--top-logprobs %d: want a count ≥ 0", *topLogprobs)
	}
	m, err := mf.load(1)
	if err != nil {
		return err
	}
	defer m.Close()
	res, err := m.Score(context.Background(), pos[0], reins.ScoreOptions{Context: *prompt, TopLogprobs: *topLogprobs})
	if err != nil {
		return flagError(err)
	}
	if err := writeHTML(*html, view.FromScore(pos[0], *prompt, res), stderr); err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "token\tlogprob\tprob\tbest alternative")
	for _, t := range res.Tokens {
		alt := ""
		if len(t.TopLogprobs) > 0 {
			b := t.TopLogprobs[0]
			alt = fmt.Sprintf("%s (%.3f)", strconv.Quote(b.Token), b.Logprob)
			if b.ID == t.ID {
				alt = "(this one)"
			}
		}
		fmt.Fprintf(w, "%s\t%.4f\t%.4f\t%s\n", strconv.Quote(t.Token), t.Logprob, math.Exp(t.Logprob), alt)
	}
	fmt.Fprintf(w, "sum\t%.4f\t%.3g\t\n", res.Sum, math.Exp(res.Sum))
	fmt.Fprintf(w, "mean\t%.4f\t\t%d tokens\n", res.Mean, len(res.Tokens))
	return w.Flush()
}
