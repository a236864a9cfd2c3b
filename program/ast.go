package program

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/reins-go/reins/chat"
	"github.com/reins-go/reins/grammar"
)

// Pos is a position in a template: its name, and line and column (in
// characters), both from 1. A node built in Go has Line 0 and Col its
// index among the nodes the Builder added, from 1.
type Pos struct {
	File      string
	Line, Col int
}

// String returns "file:line:col", "file: node N" for a node built in
// Go, or "file" for the whole template (Line and Col 0).
func (p Pos) String() string {
	f := p.File
	if f == "" {
		f = "template"
	}
	if p.Line == 0 && p.Col == 0 {
		return f
	}
	if p.Line == 0 {
		return fmt.Sprintf("%s: node %d", f, p.Col)
	}
	return fmt.Sprintf("%s:%d:%d", f, p.Line, p.Col)
}

// Node is one node of a program: *Text, *Var, *Gen, *Select, *Role or
// *Each.
type Node interface {
	Position() Pos
	dump(b *strings.Builder)
}

// Text is literal text. It is passed to the model as prompt text, never
// sampled.
type Text struct {
	Pos  Pos
	Text string
}

// Var inserts an input variable or an earlier capture: {{name}}. Inside
// an {{#each}} loop, {{this}} is the current item and {{@index}} its
// index (from 0).
type Var struct {
	Pos  Pos
	Name string
}

// Gen is a hole the model fills, captured under Name:
// {{gen "name" regex="..." max_tokens=8 stop="\n" temperature=0.7}}.
type Gen struct {
	Pos  Pos
	Name string
	GenOptions
	args map[string]Pos // where each argument was written, for errors
}

// GenOptions configures a gen hole. At most one constraint may be set
// (Regex, GBNF, GrammarFile, Grammar, Schema, SchemaFile, JSON); without
// one the hole is free text that ends at a Stop string, the model's end
// of generation or MaxTokens. The zero value is a free hole with the
// default budget.
type GenOptions struct {
	// Regex: the value matches this regular expression in full (Go
	// syntax).
	Regex string
	// GBNF is a grammar in llama.cpp's GBNF, given as source;
	// GrammarFile names a GBNF file in the template's folder.
	GBNF        string
	GrammarFile string
	// Grammar is a grammar built in Go (package grammar), or combined
	// from the front ends' grammars. It must not change afterwards.
	Grammar *grammar.Grammar
	// Schema is a JSON Schema; SchemaFile names one in the template's
	// folder (its $refs load only files there). JSON: any JSON value.
	// The value is compact JSON, validated against the schema.
	Schema     []byte
	SchemaFile string
	JSON       bool

	// MaxTokens is the hole's token budget (0: DefaultGenTokens). The
	// tokens that spell again the prompt token healed before it
	// (reins.Options.Heal) do not count, and one of them may run on into
	// the value; the generation gets a token more for the start of the
	// literal text after a constrained hole, which ends it.
	MaxTokens int
	// Stop ends a free hole at the first of these strings, which is left
	// out of the value (a constrained hole ends where its language does).
	Stop []string
	// Temperature 0 is greedy (unless RunOptions.Temperature sets
	// another default); TopK, TopP and MinP filter the sampled tokens.
	Temperature *float64
	TopK        int
	TopP        float64
	MinP        float64
}

// Select is a choice among options, each scored in full in context:
// {{select "name" options=["yes", "no"]}}.
type Select struct {
	Pos     Pos
	Name    string
	Options []string
	// Temperature 0 (or nil, unless RunOptions.Temperature sets another
	// default) picks the most probable option; above 0 samples one.
	Temperature *float64
	args        map[string]Pos
}

// argPos returns where argument key was written, or the tag's position.
func argPos(args map[string]Pos, key string, tag Pos) Pos {
	if p, ok := args[key]; ok {
		return p
	}
	return tag
}

// Role is a chat turn: {{#system}}...{{/system}}, {{#user}}...{{/user}},
// {{#assistant}}...{{/assistant}}. Its body is wrapped in the chat
// format's markers for the role.
type Role struct {
	Pos  Pos
	Role string // "system", "user" or "assistant"
	Body []Node
}

// Each repeats its body once per item of the list variable List:
// {{#each items}}...{{/each}}. Inside, {{this}} is the item and
// {{@index}} its index; a capture named x in the body is captured as
// x[0], x[1], ... (and {{x}} inside the body is the current one).
type Each struct {
	Pos  Pos
	List string
	Body []Node
}

func (n *Text) Position() Pos   { return n.Pos }
func (n *Var) Position() Pos    { return n.Pos }
func (n *Gen) Position() Pos    { return n.Pos }
func (n *Select) Position() Pos { return n.Pos }
func (n *Role) Position() Pos   { return n.Pos }
func (n *Each) Position() Pos   { return n.Pos }

// isRole reports whether a Role block may name s (chat.RoleNames).
func isRole(s string) bool { return chat.Role(s) >= 0 }

// Dumps, for tests and the fuzzer: text{"..."} var{x} gen{x regex="..."}
// select{x ["a" "b"]} role{user ...} each{items ...}.

func (n *Text) dump(b *strings.Builder) { fmt.Fprintf(b, "text{%s}", strconv.Quote(n.Text)) }
func (n *Var) dump(b *strings.Builder)  { fmt.Fprintf(b, "var{%s}", n.Name) }

func (n *Gen) dump(b *strings.Builder) {
	b.WriteString("gen{" + n.Name)
	o := &n.GenOptions
	str := func(k, v string) {
		if v != "" {
			fmt.Fprintf(b, " %s=%s", k, strconv.Quote(v))
		}
	}
	str("regex", o.Regex)
	str("gbnf", o.GBNF)
	str("grammar", o.GrammarFile)
	if o.Grammar != nil {
		b.WriteString(" grammar=<go>")
	}
	str("schema_source", string(o.Schema))
	str("schema", o.SchemaFile)
	if o.JSON {
		b.WriteString(" json=true")
	}
	if o.MaxTokens != 0 {
		fmt.Fprintf(b, " max_tokens=%d", o.MaxTokens)
	}
	for _, s := range o.Stop {
		str("stop", s)
	}
	if o.Temperature != nil {
		fmt.Fprintf(b, " temperature=%g", *o.Temperature)
	}
	if o.TopK != 0 {
		fmt.Fprintf(b, " top_k=%d", o.TopK)
	}
	if o.TopP != 0 {
		fmt.Fprintf(b, " top_p=%g", o.TopP)
	}
	if o.MinP != 0 {
		fmt.Fprintf(b, " min_p=%g", o.MinP)
	}
	b.WriteString("}")
}

func (n *Select) dump(b *strings.Builder) {
	b.WriteString("select{" + n.Name + " [")
	for i, o := range n.Options {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(strconv.Quote(o))
	}
	b.WriteString("]")
	if n.Temperature != nil {
		fmt.Fprintf(b, " temperature=%g", *n.Temperature)
	}
	b.WriteString("}")
}

func (n *Role) dump(b *strings.Builder) {
	b.WriteString("role{" + n.Role)
	dumpBody(b, n.Body)
	b.WriteString("}")
}

func (n *Each) dump(b *strings.Builder) {
	b.WriteString("each{" + n.List)
	dumpBody(b, n.Body)
	b.WriteString("}")
}

func dumpBody(b *strings.Builder, body []Node) {
	for _, n := range body {
		b.WriteString(" ")
		n.dump(b)
	}
}

// Dump returns a compact, deterministic dump of nodes, one per line at
// the top level.
func Dump(nodes []Node) string {
	var b strings.Builder
	for _, n := range nodes {
		n.dump(&b)
		b.WriteString("\n")
	}
	return b.String()
}
