package main

import (
	"flag"
	"fmt"
	"io"
	"os"

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
	// generating bounds what the schema leaves open (jsonschema's
	// Bounded), so that an output ends by itself.
	generating bool
}

func (c *constraintFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.grammarFile, "grammar", "", "constrain output to this GBNF grammar file")
	fs.StringVar(&c.regex, "regex", "", "constrain output to match this regular expression (whole output)")
	fs.StringVar(&c.schemaFile, "schema", "", "constrain output to JSON valid under this JSON Schema file")
	fs.BoolVar(&c.jsonValue, "json-value", false, "constrain output to any JSON value (JSON mode)")
	fs.IntVar(&c.maxWS, "max-whitespace", 1, "with --schema or --json-value: longest run of whitespace between JSON tokens (0: none)")
}

func (c *constraintFlags) set() bool {
	return c.grammarFile != "" || c.regex != "" || c.schemaFile != "" || c.jsonValue
}

// grammarError is a bad grammar or regex; check exits with status 2 on it.
type grammarError struct{ err error }

func (e grammarError) Error() string { return e.err.Error() }
func (e grammarError) Unwrap() error { return e.err }

func (c *constraintFlags) jsonOptions() jsonschema.Options {
	if c.maxWS <= 0 {
		return jsonschema.Options{Compact: true, Bounded: c.generating}
	}
	return jsonschema.Options{MaxWhitespace: c.maxWS, Bounded: c.generating}
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
	case c.schemaFile != "":
		src, rerr := os.ReadFile(c.schemaFile)
		if rerr != nil {
			return nil, grammarError{rerr}
		}
		g, err = jsonschema.Compile(src, c.jsonOptions())
		if err != nil {
			err = fmt.Errorf("%s: %w", c.schemaFile, err)
		}
	case c.jsonValue:
		g = jsonschema.JSON(c.jsonOptions())
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
