package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/gbnf"
	"github.com/reins-go/reins/grammar/jsonschema"
	"github.com/reins-go/reins/grammar/regex"
)

// constraintFlags are --grammar and --regex.
type constraintFlags struct {
	grammarFile string
	regex       string
	schemaFile  string
	jsonValue   bool
	maxWS       int
	indent      int
	relax       listFlag
	// generating bounds what the schema leaves open (jsonschema's
	// Bounded), so that an output ends by itself.
	generating bool
	// validator checks outputs under --schema or --json-value; prog
	// sets it.
	validator *jsonschema.Validator
	// stops tells checkJSON that stop strings may cut a JSON value.
	stops bool
}

func (c *constraintFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.grammarFile, "grammar", "", "constrain output to this GBNF grammar file")
	fs.StringVar(&c.regex, "regex", "", "constrain output to match this regular expression (whole output)")
	fs.StringVar(&c.schemaFile, "schema", "", "constrain output to JSON valid under this JSON Schema file")
	fs.BoolVar(&c.jsonValue, "json-value", false, "constrain output to any JSON value (JSON mode)")
	fs.IntVar(&c.maxWS, "max-whitespace", 1, "with --schema or --json-value: longest run of whitespace between JSON tokens (0: none)")
	fs.IntVar(&c.indent, "indent", 0, "with --schema or --json-value: write the JSON indented by this many spaces per level, as json.MarshalIndent does (0: off)")
	fs.Var(&c.relax, "relax", "with --schema: compile this keyword as if absent, where reins would refuse it (repeatable: uniqueItems, contains, not, if, multipleOf, minProperties, maxProperties); outputs are still validated")
}

func (c *constraintFlags) set() bool {
	return c.grammarFile != "" || c.regex != "" || c.schemaFile != "" || c.jsonValue
}

// grammarError is a bad grammar or regex; check exits with status 2 on it.
type grammarError struct{ err error }

func (e grammarError) Error() string { return e.err.Error() }
func (e grammarError) Unwrap() error { return e.err }

func (c *constraintFlags) jsonOptions() (jsonschema.Options, error) {
	opts := jsonschema.Options{MaxWhitespace: c.maxWS, Bounded: c.generating, Relax: c.relax, Loader: loadFile}
	switch {
	case c.indent > 0:
		opts.Indent = strings.Repeat(" ", c.indent)
	case c.maxWS <= 0:
		opts.Compact, opts.MaxWhitespace = true, 0
	}
	if c.schemaFile != "" {
		abs, err := filepath.Abs(c.schemaFile)
		if err != nil {
			return opts, err
		}
		opts.BaseURI = (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	}
	return opts, nil
}

// loadFile is the command's jsonschema.Loader: a $ref may name another
// schema file (relative to the schema's own); reins fetches nothing from
// the network.
func loadFile(ref string) ([]byte, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "file" {
		return nil, fmt.Errorf("reins reads $refs to files only, not %s: save the schema and refer to the file", ref)
	}
	return os.ReadFile(filepath.FromSlash(u.Path))
}

// checkJSON parses and validates an output under --schema or
// --json-value, and returns its value (nil without those flags, or for
// an output that did not finish).
func (c *constraintFlags) checkJSON(text, finish string) (any, error) {
	if c.validator == nil || finish != decode.FinishStop {
		return nil, nil
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		if c.stops {
			return nil, nil // a stop string may end the value early
		}
		return nil, fmt.Errorf("reins bug: the constrained output is not JSON: %w", err)
	}
	if err := c.validator.Validate([]byte(text)); err != nil {
		if len(c.relax) > 0 {
			return nil, fmt.Errorf("the output fails the schema, whose keywords %v the grammar did not enforce (--relax): %w", []string(c.relax), err)
		}
		return nil, fmt.Errorf("reins bug: the constrained output fails the schema: %w", err)
	}
	return v, nil
}

// prog compiles the constraint the flags name, or returns nil when none.
func (c *constraintFlags) prog(stderr io.Writer) (*grammar.Prog, error) {
	n := 0
	for _, on := range []bool{c.grammarFile != "", c.regex != "", c.schemaFile != "", c.jsonValue} {
		if on {
			n++
		}
	}
	if n > 1 {
		return nil, usagef("give one of --grammar, --regex, --schema and --json-value")
	}
	var g *grammar.Grammar
	var err error
	switch {
	case c.grammarFile != "":
		src, rerr := os.ReadFile(c.grammarFile)
		if rerr != nil {
			return nil, grammarError{rerr}
		}
		g, err = gbnf.Parse(c.grammarFile, string(src))
	case c.regex != "":
		g, err = regex.Parse(c.regex)
	case c.schemaFile != "" || c.jsonValue:
		src := []byte(`{}`)
		if c.schemaFile != "" {
			var rerr error
			if src, rerr = os.ReadFile(c.schemaFile); rerr != nil {
				return nil, grammarError{rerr}
			}
		}
		opts, oerr := c.jsonOptions()
		if oerr != nil {
			return nil, grammarError{oerr}
		}
		if g, err = jsonschema.Compile(src, opts); err == nil {
			c.validator, err = jsonschema.NewValidator(src, opts)
		}
		if err != nil && c.schemaFile != "" {
			err = fmt.Errorf("%s: %w", c.schemaFile, err)
		}
	default:
		return nil, nil
	}
	if err != nil {
		return nil, grammarError{err}
	}
	p, err := grammar.Compile(g)
	if err != nil {
		return nil, grammarError{fmt.Errorf("%s: %w", c.grammarFile, err)}
	}
	for _, w := range g.Warnings {
		fmt.Fprintf(stderr, "reins: warning: %s\n", w)
	}
	return p, nil
}

// automaton binds the flags' constraint to a vocabulary.
func (c *constraintFlags) automaton(v *decode.Vocab, stderr io.Writer) (*decode.Automaton, error) {
	p, err := c.prog(stderr)
	if err != nil || p == nil {
		return nil, err
	}
	return bind(p, v)
}

// bind binds a compiled grammar to a vocabulary; a token terminal that
// names no token of it is a grammar error.
func bind(p *grammar.Prog, v *decode.Vocab) (*decode.Automaton, error) {
	a, err := decode.NewAutomaton(p, v, decode.NewTokenTrie(v))
	if err != nil {
		return nil, grammarError{err}
	}
	return a, nil
}
