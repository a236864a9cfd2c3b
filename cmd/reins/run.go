package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/chat"
	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/program"
	"github.com/reins-go/reins/view"
)

// varFlag collects --var name=value; a name given more than once is a
// list (for {{#each name}}).
type varFlag struct {
	order []string
	vals  map[string][]string
}

func (v *varFlag) String() string { return "" }

func (v *varFlag) Set(s string) error {
	name, val, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("want name=value, got %q", s)
	}
	if v.vals == nil {
		v.vals = map[string][]string{}
	}
	if _, seen := v.vals[name]; !seen {
		v.order = append(v.order, name)
	}
	v.vals[name] = append(v.vals[name], val)
	return nil
}

// vars returns the variables for program.RunOptions: a string for a name
// given once, a list for one given more than once.
func (v *varFlag) vars(lists map[string]bool) map[string]any {
	out := map[string]any{}
	for name, vals := range v.vals {
		if len(vals) == 1 && !lists[name] {
			out[name] = vals[0]
		} else {
			out[name] = vals
		}
	}
	return out
}

// listVars returns the names {{#each}} loops over in nodes.
func listVars(nodes []program.Node, out map[string]bool) {
	for _, n := range nodes {
		switch n := n.(type) {
		case *program.Each:
			out[n.List] = true
			listVars(n.Body, out)
		case *program.Role:
			listVars(n.Body, out)
		}
	}
}

func cmdRun(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var mf modelFlags
	mf.register(fs)
	mf.registerRawServer(fs)
	var vars varFlag
	fs.Var(&vars, "var", "an input variable, name=value (repeat a name for a list, for {{#each name}})")
	asJSON := fs.Bool("json", false, `print {"text": ..., "captures": {"name": {"value", "logprob", "prob", "tokens", ...}}}`)
	temp := fs.Float64("temperature", 0, "temperature of the holes that set none (0: greedy)")
	seed := fs.Uint64("seed", 0, "random seed (hole i samples with seed+i)")
	topLogprobs := fs.Int("top-logprobs", 0, "alternatives to report per captured token")
	chatName := fs.String("chat", "", "chat format of role blocks: plain, chatml, llama3, gemma or phi3 (default: the model's)")
	noHeal := fs.Bool("no-heal", false, "do not heal the token boundary before each hole")
	html := htmlFlag(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: reins run [flags] TEMPLATE_FILE\nRuns a program: prints the filled text, then each capture with its probability.")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("run takes one TEMPLATE_FILE argument, got %d", len(pos))
	}
	if *topLogprobs < 0 {
		return usagef("--top-logprobs %d: want a count ≥ 0", *topLogprobs)
	}
	if *temp < 0 || *temp > 100 {
		return usagef("--temperature %g: want 0 to 100", *temp)
	}
	p, err := program.ParseFile(pos[0])
	if err != nil {
		return usageError{err.Error()} // a template that does not parse, or a file it names that cannot be read
	}
	lists := map[string]bool{}
	listVars(p.Nodes(), lists)
	opts := &program.RunOptions{Vars: vars.vars(lists), Temperature: *temp, Seed: *seed, TopLogprobs: *topLogprobs, NoHeal: *noHeal}
	if *chatName != "" {
		if opts.Chat, err = chat.Known(*chatName); err != nil {
			return usagef("--chat: %v", err)
		}
	}
	m, err := runModel(&mf, p, opts)
	if err != nil {
		return err
	}
	defer m.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := p.Run(ctx, m, opts)
	if err != nil {
		var pe *program.Error
		if errors.As(err, &pe) && pe.Kind != program.KindRun {
			return usageError{err.Error()}
		}
		return unfinished(flagError(err))
	}
	if err := writeHTML(*html, view.FromProgram(pos[0], res), stderr); err != nil {
		return err
	}
	if *asJSON {
		return writeRunJSON(stdout, res)
	}
	fmt.Fprintln(stdout, res.Text)
	fmt.Fprintln(stdout, "---")
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "capture\tvalue\tprob\tlogprob\tconstrained\ttokens")
	for _, c := range res.Captures {
		fmt.Fprintf(w, "%s\t%s\t%.4f\t%.4f\t%.4f\t%d\n", c.Name, shorten(strconv.Quote(c.Value), 60), c.Prob, c.Logprob, c.Constrained, len(c.Tokens))
		for _, o := range c.Options {
			fmt.Fprintf(w, "\t  %s\t%.4f\t%.4f\t\t%d\n", shorten(strconv.Quote(o.Text), 58), o.Prob, o.Logprob, len(o.Tokens))
		}
	}
	return w.Flush()
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// captureJSON is one capture in run's --json output.
type captureJSON struct {
	Kind        string        `json:"kind"`
	Value       any           `json:"value"`
	Logprob     float64       `json:"logprob"`
	Constrained float64       `json:"constrained_logprob"`
	Prob        float64       `json:"prob"`
	Healed      string        `json:"healed,omitempty"`
	Tokens      []reins.Token `json:"tokens"`
	Options     []optionJSON  `json:"options,omitempty"`
}

type optionJSON struct {
	Text    string  `json:"text"`
	Logprob float64 `json:"logprob"`
	Prob    float64 `json:"prob"`
	// TopK and Bound: the option's score comes from a server's top
	// alternatives, and is only a bound when it left them.
	TopK  bool `json:"top_k,omitempty"`
	Bound bool `json:"bound,omitempty"`
}

// writeRunJSON writes {"text": ..., "captures": {...}} with the captures
// in the order they were made.
func writeRunJSON(w io.Writer, res *program.Result) error {
	var b bytes.Buffer
	text, err := json.Marshal(res.Text)
	if err != nil {
		return err
	}
	b.WriteString(`{"text":`)
	b.Write(text)
	b.WriteString(`,"captures":{`)
	for i, c := range res.Captures {
		if i > 0 {
			b.WriteByte(',')
		}
		cj := captureJSON{Kind: c.Kind, Value: c.Value, Logprob: c.Logprob, Constrained: c.Constrained, Prob: c.Prob,
			Healed: c.Healed, Tokens: c.Tokens}
		if c.JSON != nil {
			cj.Value = c.JSON
		}
		if cj.Tokens == nil {
			cj.Tokens = []reins.Token{}
		}
		for _, o := range c.Options {
			cj.Options = append(cj.Options, optionJSON{o.Text, o.Logprob, o.Prob, o.TopK, o.Bound})
		}
		name, _ := json.Marshal(c.Name)
		val, err := json.Marshal(cj)
		if err != nil {
			return err
		}
		b.Write(name)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteString("}}\n")
	_, err = w.Write(b.Bytes())
	return err
}

// runModel loads the model a program runs on. On a model in process, a
// program with role blocks takes the model's chat format unless --chat
// names one, and a format's special markers go in as their tokens; on a
// server the markers go as text, which the server tokenizes.
func runModel(mf *modelFlags, p *program.Program, opts *program.RunOptions) (*reins.Model, error) {
	if mf.remote.remote() {
		if p.Roles() && opts.Chat == nil {
			return nil, usagef("the template has role blocks: name its chat format with --chat on a server (--backend %s)", mf.remote.backend)
		}
		return mf.load(1)
	}
	lm, err := mf.loadLlama(1)
	if err != nil {
		return nil, err
	}
	var b decode.LogitsBackend = lm
	if p.Roles() {
		if opts.Chat == nil {
			if opts.Chat, err = chat.For(lm); err != nil {
				lm.Close()
				return nil, err
			}
		}
		if opts.Chat.Special {
			b = chat.SpecialTokens(lm, opts.Chat.Markers()...)
		}
	}
	return reins.New(b), nil
}
