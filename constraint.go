package reins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/gbnf"
	"github.com/reins-go/reins/grammar/jsonschema"
	"github.com/reins-go/reins/grammar/regex"
	"github.com/reins-go/reins/internal/earley"
	"github.com/reins-go/reins/internal/fileread"
	"github.com/reins-go/reins/vocab"
)

// MaxSourceBytes bounds a grammar or schema file that GrammarFile and
// JSONSchemaFile read, and a document a schema's $ref loads.
const MaxSourceBytes = 16 << 20

// Constraint is a language that outputs must belong to: a regular
// expression, a GBNF grammar, a JSON Schema or a list of options. It is
// compiled once when made, bound to each model's vocabulary on first use
// (and cached), and safe to share across goroutines and models.
type Constraint struct {
	desc    string // what it is, for messages
	g       *grammar.Grammar
	prog    *grammar.Prog
	json    *jsonschema.Validator // JSON constraints: outputs are parsed and validated
	schema  []byte                // a JSON Schema's source, for a server that keeps to it too
	relaxed []string              // keywords the JSON grammar does not enforce
	options []string              // a Choice's options

	mu      sync.Mutex
	bound   map[*vocab.Vocab]*automaton.Automaton
	binding map[*vocab.Vocab]*pendingBind // Binds in progress
	healed  map[string]*Constraint        // after(prefix), by prefix, at most maxHealed
	// healedOrder holds healed's prefixes, the least recently used first.
	healedOrder []string
}

// maxHealed bounds how many healed copies of a constraint (one per
// prefix a prompt's last token gives back) it keeps: each is a whole
// compiled grammar, and a long-lived program meets many prefixes.
const maxHealed = 16

// Bytes returns about the memory the constraint holds: its compiled
// program, a JSON schema's validator, and, per vocabulary it is bound
// to, the automaton's caches (Automaton.CacheBytes), which grow as it is
// used up to their bounds.
// A program that keeps many constraints can bound them together by it,
// as reins serve does.
func (c *Constraint) Bytes() int64 {
	n := int64(cap(c.prog.Inst))*int64(unsafe.Sizeof(grammar.Inst{})) + int64(len(c.schema))
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.bound {
		n += a.CacheBytes()
	}
	for _, h := range c.healed {
		n += h.Bytes()
	}
	if c.json != nil {
		n += c.json.Bytes()
	}
	return n
}

// Warnings are what compiling the constraint noticed but did not refuse
// (a GBNF rule that matches nothing, say).
func (c *Constraint) Warnings() []string { return c.prog.Warnings }

// HasTokenTerminals reports whether the constraint names tokens (a
// GBNF <[id]> or <name>): Match and Check judge text, which cannot show
// which token spelled it, so they refuse such a language's outputs, and
// only the token-level masks of a generation keep to it.
func (c *Constraint) HasTokenTerminals() bool { return len(c.prog.TokenSets) > 0 }

// Schema returns the JSON Schema a JSONSchema or JSONSchemaFile
// constraint was compiled from, as given (a copy); nil for others.
func (c *Constraint) Schema() json.RawMessage { return bytes.Clone(c.schema) }

// String says what the constraint is.
func (c *Constraint) String() string { return c.desc }

// Regex returns the constraint that the whole output matches expr (Go's
// regexp syntax, implicitly anchored at both ends). An error is a
// *grammar.Error with the position in expr.
func Regex(expr string) (*Constraint, error) {
	if expr == "" {
		return nil, &grammar.Error{File: "regex", Msg: "empty regular expression (for the empty output, write ^$)"}
	}
	g, err := regex.Parse(expr)
	if err != nil {
		return nil, err
	}
	return compile(fmt.Sprintf("regex %q", expr), g)
}

// Grammar returns the constraint of a GBNF grammar (llama.cpp's syntax;
// the start rule is root). An error is a *grammar.Error with its
// line:column.
func Grammar(gbnfSource string) (*Constraint, error) {
	return parseGrammar("grammar", gbnfSource)
}

// GrammarFile reads a GBNF grammar from path (at most MaxSourceBytes);
// errors name the file.
func GrammarFile(path string) (*Constraint, error) {
	src, err := readSource(path)
	if err != nil {
		return nil, err
	}
	return parseGrammar(path, string(src))
}

func parseGrammar(name, src string) (*Constraint, error) {
	if strings.TrimSpace(src) == "" {
		return nil, &grammar.Error{File: name, Msg: "empty grammar (a root rule is needed)"}
	}
	g, err := gbnf.Parse(name, src)
	if err != nil {
		return nil, err
	}
	return compile("grammar "+name, g)
}

// Choice returns the constraint that the output is one of options,
// byte for byte. Generate under a Choice scores every option in full
// and picks among them (see Model.Choose), rather than going token by
// token.
func Choice(options ...string) (*Constraint, error) {
	if err := checkOptions(options); err != nil {
		return nil, err
	}
	c, err := compile(fmt.Sprintf("choice of %d options", len(options)), grammar.Choice(options...))
	if err != nil {
		return nil, err
	}
	c.options = append([]string(nil), options...)
	return c, nil
}

// checkOptions refuses an empty list, an empty option and duplicates,
// with an *OptionError.
func checkOptions(options []string) error {
	if len(options) == 0 {
		return &OptionError{Field: "options", Value: "[]", Want: "at least one option to choose from"}
	}
	seen := make(map[string]int, len(options))
	for i, o := range options {
		if o == "" {
			return &OptionError{Field: fmt.Sprintf("options[%d]", i), Value: `""`, Want: "a non-empty option"}
		}
		if j, dup := seen[o]; dup {
			return &OptionError{Field: fmt.Sprintf("options[%d]", i), Value: fmt.Sprintf("%q", o), Want: fmt.Sprintf("an option different from options[%d]", j)}
		}
		seen[o] = i
	}
	return nil
}

// JSONOptions configures JSON constraints. The zero value (or nil) is
// what generation wants: compact output, every open-ended part bounded
// so that an output ends by itself.
type JSONOptions struct {
	// Indent, when not "", lays the output out exactly as Go's
	// json.MarshalIndent(v, "", Indent) does; spaces and tabs only.
	Indent string
	// Whitespace allows up to this many whitespace characters between
	// JSON tokens; 0 allows none (compact). On a server that keeps its
	// output to a schema itself (Capabilities().JSONSchema: Ollama's
	// format, OpenAI's response_format), use ServerWhitespace: the server
	// lays the JSON out its own way, and a compact constraint refuses it.
	Whitespace int
	// Unbounded leaves what the schema leaves open unbounded (strings
	// without maxLength, arrays without maxItems, ...), for checking;
	// a generation may then run until its budget. See jsonschema.Options.
	Unbounded bool
	// Relax lists keywords to compile as if absent where reins would
	// refuse them (uniqueItems, contains, not, if, multipleOf,
	// minProperties, maxProperties). Outputs are still validated, and
	// one that breaks a relaxed keyword is an *InvalidOutputError.
	Relax []string
	// FormatAnnotation makes "format" an annotation only, as JSON Schema
	// 2019-09 and 2020-12 read it by default: the output need not be of
	// the format (the rest of the schema still holds) and is validated
	// without it. By default reins keeps strings to their format in
	// every draft, so that a generated date is a date. See
	// jsonschema.Options.FormatAnnotation.
	FormatAnnotation bool
	// Loader loads the documents $refs outside the schema name; without
	// one such a $ref is an error. JSONSchemaFile sets one that reads
	// files beside the schema file.
	Loader jsonschema.Loader
	// BaseURI is where the schema was read from, for relative $refs.
	BaseURI string
}

// ServerWhitespace is the Whitespace a JSON constraint wants on a server
// that keeps outputs to a schema itself: llama.cpp's schema grammar,
// behind Ollama's format, allows up to 22 whitespace characters between
// JSON tokens.
const ServerWhitespace = 24

func (o *JSONOptions) compileOptions() jsonschema.Options {
	if o == nil {
		o = &JSONOptions{}
	}
	opts := jsonschema.Options{Indent: o.Indent, MaxWhitespace: o.Whitespace, Bounded: !o.Unbounded,
		Relax: o.Relax, Loader: o.Loader, BaseURI: o.BaseURI, FormatAnnotation: o.FormatAnnotation}
	if o.Indent == "" && o.Whitespace <= 0 {
		opts.Compact, opts.MaxWhitespace = true, 0
	}
	return opts
}

// JSON returns the constraint of any JSON value (JSON mode), with
// default options.
func JSON() *Constraint {
	c, err := JSONSchema([]byte(`{}`), nil)
	if err != nil {
		panic("reins: the empty schema must compile: " + err.Error())
	}
	return c
}

// JSONSchema returns the constraint that the output is a JSON value
// valid against schema (drafts 4 to 2020-12; see grammar/jsonschema for
// what compiles). Every output is parsed and validated; Completion.Value
// holds it. opts may be nil. A keyword reins cannot compile exactly is
// an error (a *jsonschema.Error with its JSON pointer), never ignored.
func JSONSchema(schema []byte, opts *JSONOptions) (*Constraint, error) {
	if opts != nil && opts.Whitespace < 0 {
		return nil, &OptionError{Field: "Whitespace", Value: fmt.Sprint(opts.Whitespace), Want: "a count ≥ 0"}
	}
	o := opts.compileOptions()
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil, &jsonschema.Error{Pointer: "#", Msg: "empty JSON schema (for any JSON value, use JSON() or {})"}
	}
	g, p, err := jsonschema.CompileProg(schema, o)
	// grammar.Compile's errors are *grammar.Error itself (not errors.As:
	// a schema's *jsonschema.Error may wrap a pattern's *grammar.Error).
	if _, fromProgram := err.(*grammar.Error); err != nil && !fromProgram {
		return nil, err
	}
	// The validator's objections come before the program's
	// (grammar.Compile's *grammar.Error: a grammar that matches nothing,
	// say), as when the program was compiled after it: they name the
	// schema's own fault.
	v, verr := jsonschema.NewValidator(schema, o)
	if verr != nil {
		return nil, verr
	}
	if err != nil {
		return nil, err
	}
	return &Constraint{desc: "JSON schema", g: g, prog: p, json: v, relaxed: o.Relax, schema: bytes.Clone(schema)}, nil
}

// JSONSchemaFile reads a JSON Schema from path (at most MaxSourceBytes).
// A $ref to another file loads it only from path's folder or below (a
// regular file of at most jsonschema.MaxSchemaBytes), unless opts sets a
// Loader.
func JSONSchemaFile(path string, opts *JSONOptions) (*Constraint, error) {
	src, err := readSource(path)
	if err != nil {
		return nil, err
	}
	o := JSONOptions{}
	if opts != nil {
		o = *opts
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if o.BaseURI == "" {
		o.BaseURI = (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	}
	if o.Loader == nil {
		o.Loader = jsonschema.DirLoader(filepath.Dir(abs), jsonschema.MaxSchemaBytes)
	}
	c, err := JSONSchema(src, &o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.desc = "JSON schema " + path
	return c, nil
}

// readSource reads a grammar or schema file the caller named: a regular
// file of at most MaxSourceBytes.
func readSource(path string) ([]byte, error) {
	src, err := fileread.Read(path, MaxSourceBytes)
	if err != nil {
		return nil, fmt.Errorf("reins: %w", err)
	}
	return src, nil
}

func compile(desc string, g *grammar.Grammar) (*Constraint, error) {
	p, err := grammar.Compile(g)
	if err != nil {
		return nil, err
	}
	return &Constraint{desc: desc, g: g, prog: p}, nil
}

// FromGrammar returns the constraint of a grammar built in Go
// (grammar.Seq, grammar.Lit, grammar.Class, ...), or combined from the
// front ends' grammars. g must not change afterwards.
func FromGrammar(g *grammar.Grammar) (*Constraint, error) {
	if g == nil {
		return nil, errors.New("reins: nil grammar")
	}
	return compile("grammar", g)
}

// anyText is the constraint of any valid UTF-8 text, which healing puts
// after the bytes it takes back when there is no other constraint.
func anyText() (*Constraint, error) {
	return FromGrammar(&grammar.Grammar{Start: "root", Rules: []grammar.Rule{
		{Name: "root", Body: grammar.Repeat(grammar.Class(0, 0x10FFFF), 0, -1)},
	}})
}

// anyText returns anyText's constraint, compiled once per model.
func (m *Model) anyTextConstraint() (*Constraint, error) {
	m.anyTextOnce.Do(func() { m.anyText, m.anyTextErr = anyText() })
	return m.anyText, m.anyTextErr
}

// healedStart names the start rule of a constraint after a prefix.
const healedStart = "reins.healed"

// after returns the constraint of prefix followed by a text of c's
// language, compiled once per prefix.
func (c *Constraint) after(prefix []byte) (*Constraint, error) {
	c.mu.Lock()
	if h, ok := c.healed[string(prefix)]; ok {
		i := slices.Index(c.healedOrder, string(prefix))
		c.healedOrder = append(slices.Delete(c.healedOrder, i, i+1), string(prefix))
		c.mu.Unlock()
		return h, nil
	}
	c.mu.Unlock()
	// Compiled without the lock, which Bytes and Bind take too.
	g := &grammar.Grammar{Start: healedStart, Rules: append([]grammar.Rule{{Name: healedStart,
		Body: grammar.Seq(&grammar.Node{Op: grammar.OpBytes, Leaf: &grammar.Leaf{Bytes: prefix}}, grammar.Ref(c.g.Start))}}, c.g.Rules...)}
	h, err := compile(c.desc+" after healing", g)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if other, ok := c.healed[string(prefix)]; ok { // compiled meanwhile
		return other, nil
	}
	if c.healed == nil {
		c.healed = map[string]*Constraint{}
	}
	if len(c.healedOrder) == maxHealed {
		delete(c.healed, c.healedOrder[0])
		c.healedOrder = slices.Delete(c.healedOrder, 0, 1)
	}
	c.healed[string(prefix)] = h
	c.healedOrder = append(c.healedOrder, string(prefix))
	return h, nil
}

// automaton returns c bound to model m's vocabulary, binding it on
// first use.
func (c *Constraint) automaton(m *Model) (*automaton.Automaton, error) {
	return c.Bind(m.Vocab(), m.tokenTrie())
}

// Bind returns the constraint bound to vocabulary v, whose token trie is
// t (automaton.NewTrie(v), built once per vocabulary): the token-level
// automaton for a generation loop of one's own. It is cached per
// vocabulary.
func (c *Constraint) Bind(v *vocab.Vocab, t *automaton.Trie) (*automaton.Automaton, error) {
	c.mu.Lock()
	if a, ok := c.bound[v]; ok {
		c.mu.Unlock()
		return a, nil
	}
	if b, ok := c.binding[v]; ok { // another goroutine binds it: wait for its result
		c.mu.Unlock()
		<-b.done
		return b.a, b.err
	}
	b := &pendingBind{done: make(chan struct{})}
	if c.binding == nil {
		c.binding = map[*vocab.Vocab]*pendingBind{}
	}
	c.binding[v] = b
	c.mu.Unlock()
	defer func() {
		if p := recover(); p != nil { // a bug: those waiting fail too, and the next may try again
			b.a, b.err = nil, fmt.Errorf("reins: %s: binding failed: %v", c.desc, p)
			c.mu.Lock()
			delete(c.binding, v)
			c.mu.Unlock()
			close(b.done)
			panic(p)
		}
	}()
	// Bound without the lock, which Bytes takes too: a grammar of many
	// token terminals takes a while.
	b.a, b.err = automaton.New(c.prog, v, t)
	if b.err != nil {
		b.a, b.err = nil, fmt.Errorf("reins: %s: %w", c.desc, b.err)
	}
	c.mu.Lock()
	delete(c.binding, v)
	if b.err == nil {
		if c.bound == nil {
			c.bound = map[*vocab.Vocab]*automaton.Automaton{}
		}
		c.bound[v] = b.a
	}
	c.mu.Unlock()
	close(b.done)
	return b.a, b.err
}

// pendingBind is a Bind in progress, which others binding the same
// vocabulary wait for instead of binding again.
type pendingBind struct {
	done chan struct{} // closed when a and err are set
	a    *automaton.Automaton
	err  error
}

// Match reports whether text is in the language: nil, or a
// *RejectError saying where it leaves it. For a JSON constraint the text
// must also be valid against the schema (else an *InvalidOutputError).
func (c *Constraint) Match(text []byte) error {
	return c.Check(bytes.NewReader(text))
}

// MaxValidateBytes bounds the text Check keeps to validate against a
// JSON schema; a longer one is judged by the grammar alone, which is
// exact for every schema that compiles without JSONOptions.Relax. So is
// a text that nests arrays and objects deeper than MaxValidateDepth, or
// holds more than MaxValidateValues values. For a schema compiled with
// keywords relaxed, such a text is an error (no verdict) instead: the
// grammar does not enforce those keywords.
const MaxValidateBytes = 64 << 20

// MaxValidateDepth is the deepest nesting of arrays and objects the
// validator decodes (encoding/json's limit).
const MaxValidateDepth = 10000

// MaxValidateValues bounds the arrays' items and objects' members of a
// text the validator decodes: each takes about a hundred bytes decoded,
// and 30 MB of small numbers had taken 2.4 GB.
const MaxValidateValues = 1 << 20

// jsonDepth returns how deeply text nests arrays and objects, counting
// brackets outside strings; it stops counting past MaxValidateDepth.
func jsonDepth(text []byte) int {
	depth, _ := jsonShape(text)
	return depth
}

// jsonShape returns how deeply text nests arrays and objects (counting
// stops past MaxValidateDepth) and about how many values they hold
// (opening brackets and commas outside strings).
func jsonShape(text []byte) (deepest, values int) {
	depth := 0
	inString, escaped := false, false
	for _, b := range text {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '[' || b == '{':
			depth++
			values++
			if depth > deepest {
				deepest = depth
				if deepest > MaxValidateDepth {
					return deepest, values
				}
			}
		case b == ']' || b == '}':
			depth--
		case b == ',':
			values++
		}
	}
	return deepest, values
}

// Check reads text from r and reports whether it is in the language, as
// Match does. Its memory is bounded by the parse's live state (and, for
// a JSON schema, the text up to MaxValidateBytes), not by the text's
// length, and its work by a budget proportional to the text's length:
// a grammar too ambiguous to parse the text in reasonable time is an
// error wrapping ErrWorkBudget, not a verdict.
func (c *Constraint) Check(r io.Reader) error {
	var kept limitedBuffer // the text, for the JSON validator
	if c.json != nil {
		r = io.TeeReader(r, &kept)
	}
	err := earley.Check(c.prog, r, earley.CheckOptions{})
	var rej *earley.RejectError
	if errors.As(err, &rej) {
		return &RejectError{Offset: int(rej.Offset), Line: rej.Line, Col: rej.Col, Got: rej.Got, EOF: rej.EOF, Expected: rej.Expected}
	}
	if err != nil {
		return err
	}
	if c.json == nil {
		return nil
	}
	depth, values := jsonShape(kept.b)
	switch {
	case !kept.over && depth <= MaxValidateDepth && values <= MaxValidateValues:
		if err := c.json.Validate(kept.b); err != nil {
			return &InvalidOutputError{Constraint: c.desc, Relaxed: c.relaxed, Err: err}
		}
	case len(c.relaxed) > 0:
		return fmt.Errorf("%w: the text is in the grammar, but too large to validate against the keywords it does not enforce (%s): more than %d bytes (MaxValidateBytes), %d deep (MaxValidateDepth) or %d values (MaxValidateValues)",
			ErrValidateLimit, strings.Join(c.relaxed, ", "), MaxValidateBytes, MaxValidateDepth, MaxValidateValues)
	}
	return nil
}

// ErrValidateLimit is wrapped by Check's error for a JSON text past the
// validator's bounds under a schema compiled with relaxed keywords: no
// verdict, since the grammar alone does not enforce those keywords.
var ErrValidateLimit = errors.New("past the validator's bounds")

// limitedBuffer keeps what is written to it up to MaxValidateBytes, and
// then nothing.
type limitedBuffer struct {
	b    []byte
	over bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if !l.over {
		if len(l.b)+len(p) > MaxValidateBytes {
			l.over, l.b = true, nil
		} else {
			l.b = append(l.b, p...)
		}
	}
	return len(p), nil
}

// ErrWorkBudget is wrapped by the error of a parse that took more work
// than its budget: a grammar too ambiguous for the text (see Check).
var ErrWorkBudget = earley.ErrWorkBudget

// RejectError is a text that leaves a constraint's language.
type RejectError struct {
	Offset    int    // byte offset of the refused byte, or the text's length
	Line, Col int    // line and column (in characters) of Offset, from 1
	Got       string // what was refused: a character ('é') or a byte (\xff); "" at the end
	EOF       bool   // the text ended too early
	Expected  string // what the constraint allowed there
}

func (e *RejectError) Error() string {
	if e.EOF {
		return fmt.Sprintf("rejected at byte %d (line %d, column %d): the text ends too early; expected %s", e.Offset, e.Line, e.Col, e.Expected)
	}
	return fmt.Sprintf("rejected at byte %d (line %d, column %d): %s is not allowed; expected %s", e.Offset, e.Line, e.Col, e.Got, e.Expected)
}
