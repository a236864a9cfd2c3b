package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/reins-go/reins"
)

// constraintFlags are --grammar, --regex, --schema and --json-value, with
// the JSON layout flags.
type constraintFlags struct {
	grammarFile string
	regex       string
	schemaFile  string
	jsonValue   bool
	maxWS       int
	indent      int
	relax       listFlag
	formatAnno  bool
	// checking is set for commands that judge given text (check, mask):
	// JSON is then unbounded and whitespace free, as a writer's may be.
	checking bool
	// given lists the constraint flags on the command line, empty
	// values included.
	given []string
	// server is set when the model is a server, which may lay JSON out
	// its own way: JSON then allows reins.ServerWhitespace between
	// tokens unless --max-whitespace is given.
	server  bool
	wsGiven bool
}

func (c *constraintFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.grammarFile, "grammar", "", "constrain output to this GBNF grammar file")
	fs.StringVar(&c.regex, "regex", "", "constrain output to match this regular expression (the whole output; for the empty output write ^$)")
	fs.StringVar(&c.schemaFile, "schema", "", "constrain output to JSON valid under this JSON Schema file")
	fs.BoolVar(&c.jsonValue, "json-value", false, "constrain output to any JSON value (JSON mode)")
	ws, wsHelp := 0, "with --schema or --json-value: longest run of whitespace between JSON tokens (0: none, compact; on a server --backend, "+fmt.Sprint(reins.ServerWhitespace)+" unless given, as the server lays JSON out its own way)"
	if c.checking {
		ws, wsHelp = checkWhitespace, "with --schema or --json-value: longest run of whitespace allowed between JSON tokens"
	}
	fs.IntVar(&c.maxWS, "max-whitespace", ws, wsHelp)
	fs.IntVar(&c.indent, "indent", 0, "with --schema or --json-value: write the JSON indented by this many spaces per level, as json.MarshalIndent does (0: off)")
	fs.Var(&c.relax, "relax", "with --schema: compile this keyword as if absent, where reins would refuse it (repeatable: uniqueItems, contains, not, if, multipleOf, minProperties, maxProperties); outputs are still validated")
	fs.BoolVar(&c.formatAnno, "format-annotation", false, "with --schema: take format as an annotation only, as JSON Schema 2019-09 and later do by default (default: strings keep to their format in every draft)")
}

// seen records which constraint flags the command line gave; call it
// after parsing.
func (c *constraintFlags) seen(fs *flag.FlagSet) {
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "grammar", "regex", "schema", "json-value":
			c.given = append(c.given, f.Name)
		case "max-whitespace":
			c.wsGiven = true
		}
	})
}

func (c *constraintFlags) set() bool { return len(c.given) > 0 }

// grammarError is a constraint that does not compile; it exits with the
// usage status.
type grammarError struct{ err error }

func (e grammarError) Error() string { return e.err.Error() }
func (e grammarError) Unwrap() error { return e.err }

// maxIndent and maxWhitespace bound the JSON layout flags;
// checkWhitespace is check's and mask's default.
const (
	maxIndent       = 16
	maxWhitespace   = 64
	checkWhitespace = 16
)

// constraint compiles the constraint the flags name, or returns nil when
// none.
func (c *constraintFlags) constraint(stderr io.Writer) (*reins.Constraint, error) {
	switch {
	case len(c.given) > 1:
		return nil, usagef("give one of --grammar, --regex, --schema and --json-value, not %s", strings.Join(c.given, " and "))
	case len(c.given) == 0:
		return nil, nil
	case c.indent < 0 || c.indent > maxIndent:
		return nil, usagef("--indent %d: want 0 to %d spaces", c.indent, maxIndent)
	case c.maxWS < 0 || c.maxWS > maxWhitespace:
		return nil, usagef("--max-whitespace %d: want 0 to %d", c.maxWS, maxWhitespace)
	}
	var con *reins.Constraint
	var err error
	switch c.given[0] {
	case "grammar":
		if c.grammarFile == "" {
			return nil, usagef("--grammar is empty: give a GBNF file")
		}
		con, err = reins.GrammarFile(c.grammarFile)
	case "regex":
		if c.regex == "" {
			return nil, usagef("--regex is empty: give an expression (for the empty output, ^$)")
		}
		con, err = reins.Regex(c.regex)
	case "schema":
		if c.schemaFile == "" {
			return nil, usagef("--schema is empty: give a JSON Schema file")
		}
		con, err = reins.JSONSchemaFile(c.schemaFile, c.jsonOptions())
	case "json-value":
		con, err = reins.JSONSchema([]byte(`{}`), c.jsonOptions())
	}
	if err != nil {
		return nil, grammarError{err}
	}
	for _, w := range con.Warnings() {
		fmt.Fprintf(stderr, "reins: warning: %s\n", w)
	}
	return con, nil
}

func (c *constraintFlags) jsonOptions() *reins.JSONOptions {
	ws := c.maxWS
	if c.server && !c.wsGiven && c.indent == 0 {
		ws = reins.ServerWhitespace
	}
	return &reins.JSONOptions{Indent: strings.Repeat(" ", c.indent), Whitespace: ws, Relax: c.relax, Unbounded: c.checking,
		FormatAnnotation: c.formatAnno}
}
