package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"

	santhosh "github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/internal/jsonptr"
)

// Options configures Compile. The zero value is flexible whitespace with
// runs of at most 16.
type Options struct {
	// Compact allows no whitespace at all between tokens.
	Compact bool
	// MaxWhitespace bounds each run of whitespace in flexible mode, so a
	// model cannot loop on spaces; 0 means 16.
	MaxWhitespace int
	// Indent, when not "", writes the output exactly as Go's
	// json.MarshalIndent(v, "", Indent) does: each member and item on a
	// line of its own, indented by one Indent per level, ": " after keys,
	// empty objects and arrays as {} and []. Values nested deeper than
	// 16 levels are written compact. Indent holds spaces and tabs only.
	Indent string
	// Bounded gives every part of the output that the schema leaves
	// unbounded a bound, so that a generation ends by itself: strings
	// without maxLength (and additional property names) hold at most
	// BoundedLength characters, arrays without maxItems at most
	// BoundedItems items, integer and fraction parts of numbers at most
	// BoundedDigits digits, and free JSON values (where the schema says
	// nothing) nest at most BoundedDepth deep. Objects that list
	// properties take no others; objects that list none take at most
	// BoundedItems. The output still satisfies the schema. Patterns and
	// formats keep their own shape.
	Bounded bool
	// BaseURI is the absolute URI the schema document was read from:
	// relative $refs and $ids resolve against it. "" means
	// DefaultBaseURI. A root $id overrides it, as the specification says.
	BaseURI string
	// Loader fetches the documents that $refs outside the schema name.
	// Without one, such a reference is an *Error. DirLoader reads schema
	// files under one folder, and nothing else.
	Loader Loader
	// Relax lists keywords to compile as if they were absent, for a
	// caller who wants output even where reins would refuse a keyword it
	// cannot compile exactly: "uniqueItems", "contains" (with minContains
	// and maxContains), "not", "if" (with then and else), "multipleOf",
	// "minProperties", "maxProperties". The grammar is then wider than
	// the schema: validate the output (decode.JSONSchema does, and
	// reports a failure as such).
	Relax []string
	// FormatAnnotation makes "format" an annotation only: the grammar
	// compiles every format keyword as if it were absent (the rest of
	// the schema still applies, so {"type": "string", "format": "email"}
	// allows any string), and NewValidator accepts a string whatever its
	// format. By default reins asserts the formats it knows in every
	// draft, so that a generated date is a valid date; JSON Schema
	// 2019-09 and 2020-12 make format an annotation by default, which
	// this option follows. Pass the same Options to Compile and
	// NewValidator so that the two agree.
	FormatAnnotation bool
}

// relaxable are the keywords Options.Relax may name, with the keywords
// that go with each.
var relaxable = map[string][]string{
	"uniqueItems": {"uniqueItems"}, "contains": {"contains", "minContains", "maxContains"}, "not": {"not"},
	"if": {"if", "then", "else"}, "multipleOf": {"multipleOf"}, "minProperties": {"minProperties"},
	"maxProperties": {"maxProperties"},
}

func (o Options) baseURI() string {
	if o.BaseURI == "" {
		return DefaultBaseURI
	}
	return o.BaseURI
}

// The bounds of Options.Bounded.
const (
	BoundedLength = 32
	BoundedItems  = 4
	BoundedDigits = 12
	BoundedDepth  = 3
)

// Error is a schema that cannot be compiled, at a JSON pointer. Every
// error Compile returns about the schema is one (errors.As finds it);
// only bad Options are not.
type Error struct {
	// Pointer is the JSON pointer of the schema object at fault: "#" for
	// the root, "#/properties/a", or "URL#/..." in a document a Loader
	// returned.
	Pointer string
	Keyword string // the keyword at fault, or ""
	Msg     string
	// Empty marks a schema that no value satisfies (false, an enum none
	// of whose values fit, ...): not a failure where the value is
	// optional (a property, an anyOf branch, further array items).
	Empty bool
	// Limit names the limit the schema exceeds ("MaxDepth", ...; see the
	// constants), or is "".
	Limit string
	// Err is the cause, if any: a Loader's error, the validator's.
	Err error
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// isEmpty reports whether err is a schema no value satisfies.
func isEmpty(err error) bool {
	e, ok := errors.AsType[*Error](err) // no allocation, unlike errors.As: compiling asks this of every subschema
	return ok && e.Empty
}

func (e *Error) Error() string {
	if e.Keyword != "" {
		return fmt.Sprintf("%s/%s: %s", e.Pointer, e.Keyword, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Pointer, e.Msg)
}

// Compile compiles a JSON Schema document (drafts 4 to 2020-12; santhosh-
// tekuri/jsonschema checks it first; keywords as the draft its $schema
// names reads them). It supports, exactly or within the subset the
// package documentation describes:
//
//   - boolean schemas; type (one or several); nullable (OpenAPI);
//   - enum and const (values checked against the rest of the schema;
//     written as the schema writes them, numbers with trailing zeros
//     too, small objects' members in any order);
//   - properties, required, additionalProperties, patternProperties
//     (keys split by pattern with an automaton: the other keys take
//     additionalProperties), propertyNames (by automaton),
//     minProperties and maxProperties (counted as members are written),
//     dependentRequired, dependentSchemas (and draft 4-7's
//     dependencies), unevaluatedProperties (where the schemas applied
//     in place are known once combinators are distributed);
//   - items (a schema, or an array in older drafts), prefixItems,
//     additionalItems, minItems, maxItems, unevaluatedItems, contains
//     with minContains and maxContains (items counted), uniqueItems over
//     items of at most 8 values (an enum, booleans, null);
//   - minLength and maxLength (code points); pattern (ECMAScript,
//     unanchored as the specification says; \s is taken as Go's space
//     and \S as not ECMAScript's, so both readings agree), with length
//     bounds, other patterns and a format by automaton;
//   - format: date-time, date, time, duration, email, hostname, ipv4, ipv6,
//     uuid, uri, uri-reference (see formats); formats the validator does
//     not know are annotations, and every format is one with
//     Options.FormatAnnotation;
//   - minimum, maximum, exclusiveMinimum, exclusiveMaximum (draft 4's
//     boolean forms too) for integers and numbers, exact; multipleOf
//     (a range with at most so many fraction digits, the multiples
//     written out, or an automaton of remainders);
//   - allOf and the siblings of $ref and of combinators, intersected;
//     anyOf; oneOf, each branch taken without the values of the
//     branches it may overlap (proved exclusive by type, enum values or
//     tags where it can be, negated where not); not; if, then and else
//     (if and then, or not if and else) — negation covers every keyword
//     but multipleOf, uniqueItems, additionalProperties,
//     patternProperties, propertyNames, oneOf and formats;
//   - $ref to JSON pointers, $ids (draft 4's id) and anchors, within the
//     document or, through Options.Loader, in others; recursion allowed;
//   - the annotations (title, description, default, ...).
//
// A subschema no value satisfies drops the optional property or anyOf
// branch it belongs to. Any other keyword, and any of these where reins
// cannot be exact (see limits.go for the bounds of the constructions),
// is an *Error naming it and its JSON pointer, unless Options.Relax
// names it.
//
// Compile's time and memory grow polynomially, and slowly, with the
// schema's size: see the limits (MaxSchemaBytes and the others), past
// which a schema is an *Error naming the limit.
func Compile(schema []byte, opts Options) (*grammar.Grammar, error) {
	_, g, err := lower(schema, opts, true)
	return g, err
}

// CompileProg is Compile and then grammar.Compile of its grammar: the
// schema's grammar and its program, or the error of either. Compile
// measures the grammar, to refuse one past grammar.MaxInst with the JSON
// pointer of the part too large, and grammar.Compile measures it again;
// CompileProg leaves the first measure out (a few percent of a compile,
// up to about a tenth for large schemas of many objects) and takes it
// only when grammar.Compile fails, preferring its error then, so that
// the errors are Compile's and grammar.Compile's as they come in that
// order. A schema refused for its size takes longer to refuse (about
// twice), grammar.Compile's walks coming first.
func CompileProg(schema []byte, opts Options) (*grammar.Grammar, *grammar.Prog, error) {
	c, g, err := lower(schema, opts, false)
	if err != nil {
		return nil, nil, err
	}
	p, err := grammar.Compile(g)
	if err != nil {
		if sizeErr := c.checkSizeSafely(); sizeErr != nil {
			return nil, nil, sizeErr
		}
		return nil, nil, err
	}
	return g, p, nil
}

// checkSizeSafely is checkSize, a panic in it (a bug) an *Error.
func (c *compiler) checkSizeSafely() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &Error{Pointer: "#", Msg: fmt.Sprintf("internal error measuring the schema's grammar (a bug in reins): %v", r)}
		}
	}()
	return c.checkSize()
}

// lower is Compile; with measure false, it does not measure the grammar
// against grammar.MaxInst (see CompileProg).
func lower(schema []byte, opts Options, measure bool) (c *compiler, g *grammar.Grammar, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(errTooManyNodes); ok && c != nil {
				if e.ptr == "" { // before the root's lowering set it
					e.ptr = "#"
				}
				c, g, err = nil, nil, c.limitf(e.ptr, "", limitGrammar, "building the grammar made more than %d nodes (allOf distributed over many anyOf or oneOf, nested not, many if/then/else, or wide numeric ranges?): its grammar would pass grammar.MaxInst (%d instructions)", maxGrammarNodes, grammar.MaxInst)
				return
			}
			c, g, err = nil, nil, &Error{Pointer: "#", Msg: fmt.Sprintf("internal error compiling the schema (a bug in reins): %v", r)}
		}
	}()
	if opts.MaxWhitespace == 0 {
		opts.MaxWhitespace = 16
	}
	if opts.MaxWhitespace < 0 {
		return nil, nil, fmt.Errorf("jsonschema: MaxWhitespace %d: want ≥ 0", opts.MaxWhitespace)
	}
	if strings.Trim(opts.Indent, " \t") != "" || (opts.Indent != "" && opts.Compact) {
		return nil, nil, fmt.Errorf("jsonschema: Indent %q: want spaces and tabs, without Compact", opts.Indent)
	}
	for _, kw := range opts.Relax {
		if _, ok := relaxable[kw]; !ok {
			return nil, nil, fmt.Errorf("jsonschema: Relax %q: want one of uniqueItems, contains, not, if, multipleOf, minProperties, maxProperties", kw)
		}
	}
	doc, order, err := decodeSchema(schema, false)
	if err != nil {
		return nil, nil, err
	}
	if err := checkSchema(doc, schema, opts); err != nil { // a valid schema, first
		return nil, nil, err
	}
	refs, err := newRefs(doc, order, len(schema), opts.baseURI(), opts.Loader)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("jsonschema: Options.BaseURI: %w", err) // the only other error
	}
	c = newCompiler(opts, refs, draftOf(doc))
	root, err := c.p.at(doc, "#")
	if err != nil {
		return nil, nil, err
	}
	body, err := c.conj(root)
	if err != nil {
		return nil, nil, err
	}
	if err := c.fanOut(root); err != nil {
		return nil, nil, err
	}
	if opts.Indent != "" {
		c.g.Rules[0].Body = body
	} else {
		c.g.Rules[0].Body = c.nodes.seq(c.ws(), body, c.ws())
	}
	if measure {
		if err := c.checkSize(); err != nil {
			return nil, nil, err
		}
	}
	return c, c.g, nil
}

// JSON returns the grammar of any JSON value (JSON mode).
func JSON(opts Options) *grammar.Grammar {
	g, err := Compile([]byte(`{}`), opts)
	if err != nil {
		panic("jsonschema: the empty schema must compile: " + err.Error())
	}
	return g
}

// Validator checks JSON texts against one schema with santhosh-tekuri/
// jsonschema (formats asserted in every draft unless
// Options.FormatAnnotation, remote references refused): reins validates
// its own output with it. It is safe for concurrent use.
type Validator struct {
	s     *santhosh.Schema
	src   []byte // the schema, for Bytes
	size  sync.Once
	bytes int64
}

// Bytes returns about the memory the validator holds: its compiled
// schema, some 8 bytes a byte of the schema's JSON, and its patterns
// compiled with Go's regexp, some 64 bytes a character they match one
// by one (patternChars; 45 to 70 measured). It is reckoned on the
// first call.
func (v *Validator) Bytes() int64 {
	v.size.Do(func() {
		v.bytes = 9 * int64(len(v.src)) // the source kept, and what it compiles to
		var doc any
		if json.Unmarshal(v.src, &doc) != nil {
			return
		}
		var path []string
		walkPatterns(doc, &path, func(p string) error {
			n, ok := patternChars(p)
			if !ok {
				n = len(p)
			}
			v.bytes += 64 * int64(n)
			return nil
		})
	})
	return v.bytes
}

// NewValidator compiles schema, which also checks that it is a valid
// schema. Of opts, only BaseURI, Loader and FormatAnnotation count:
// they resolve references and read formats as Compile does.
func NewValidator(schema []byte, opts Options) (*Validator, error) {
	c := santhosh.NewCompiler()
	c.AssertFormat = !opts.FormatAnnotation // formats are assertions for reins, in every draft, unless annotations
	if opts.FormatAnnotation {
		// The validator asserts formats in drafts 4 to 7 (and where a
		// metaschema asks for format-assertion) whatever AssertFormat
		// says: its formats, for this compiler only, accept anything.
		for name := range santhosh.Formats {
			c.Formats[name] = anyFormat
		}
	}
	c.LoadURL = func(url string) (io.ReadCloser, error) {
		if opts.Loader == nil {
			return nil, fmt.Errorf("remote $ref %s refused: no Options.Loader", url)
		}
		data, err := opts.Loader(url)
		if err != nil {
			return nil, err
		}
		return io.NopCloser(bytes.NewReader(data)), nil
	}
	base := opts.baseURI()
	if err := c.AddResource(base, bytes.NewReader(schema)); err != nil {
		return nil, fmt.Errorf("jsonschema: %w", err)
	}
	s, err := c.Compile(base)
	if err != nil {
		return nil, fmt.Errorf("jsonschema: invalid schema: %w", err)
	}
	return &Validator{s: s, src: bytes.Clone(schema)}, nil
}

// anyFormat is a format checker that accepts every value.
func anyFormat(any) bool { return true }

// Validate reports whether the JSON text instance is valid.
func (v *Validator) Validate(instance []byte) error {
	x, err := decodeJSON(instance)
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return v.s.Validate(x)
}

// decodeJSON decodes one JSON text, numbers as json.Number; anything
// after the value but whitespace is an error.
func decodeJSON(data []byte) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the value, at byte %d", dec.InputOffset())
	}
	return v, nil
}

// Validate reports whether the JSON text instance is valid under schema
// (see Validator; compile one to check many instances). References
// outside the schema are refused.
func Validate(schema, instance []byte) error {
	v, err := NewValidator(schema, Options{})
	if err != nil {
		return err
	}
	return v.Validate(instance)
}

// compiler holds the stages of one compilation: the parser (with the
// references), the normalizer, the evaluator, and the grammar being
// written.
type compiler struct {
	nodes nodeSlab // makes the grammar's nodes
	// rangeInsts counts the instructions of the numeric ranges built (see
	// countRange).
	rangeInsts int
	opts       Options
	g          *grammar.Grammar
	rules      map[string]string // key → rule name: conjunctions through $refs, shared pieces
	refs       *refs             // $ref targets; object keys in schema order
	p          *parser
	z          *normalizer
	ev         *evaluator
	neg        *negator
	// lowered counts the Nodes lowered (maxLowered); distributed is how
	// deeply combinators are being distributed (maxDistribute), branches
	// how many branches were (maxDistributions).
	lowered, distributed, branches int
	depth                          int      // how deep in objects and arrays the schema compiling sits (see layout)
	ptr                            string   // the schema being compiled
	rulePtrs                       []string // the schema each rule was made for, by index ("" unknown)
	// propertyRank is each property name's first appearance in the
	// documents' properties (see propertyOrder), found on first use.
	propertyRank map[string]int
	// schemaNodes are the grammars of the schemas compiled, inner ones
	// first, for checkSize to name one too large.
	schemaNodes []schemaNode
	// literalBytes counts the JSON text of the enum and const values
	// compiled (MaxLiteralBytes).
	literalBytes int
	// anyNumber is numberNode's node, made once.
	anyNumber *grammar.Node
	// anyIntegers is integer's node of every integer, made once, by
	// whether it takes a zero fraction.
	anyIntegers map[bool]*grammar.Node
	// sharedRefs are the references shared returns, one per rule.
	sharedRefs map[string]*grammar.Node
	// layouts caches layout by depth (flexible and compact layouts do not
	// depend on it: key -1).
	layouts map[int]layout
	// distributions caches branch by the intersection it compiles.
	distributions map[string]distribution
	// regexDFAs caches regexDFA by pattern (and search).
	regexDFAs map[string]*dfa
	// strDFAs caches strDFA by its patterns, formats and bounds, and
	// oneStrs oneStr by its pattern or format and bounds.
	strDFAs map[string]*grammar.Node
	oneStrs map[oneStrKey]*grammar.Node
	// keysNotIn caches keyNotIn by its set of names.
	keysNotIn map[string]*grammar.Node
	// canonicalChars caches canonicalChar by its excepted runes.
	canonicalChars map[string]*grammar.Node
	// keyRunes, keyDeviates and keyDeviates1 (a single rune) cache the
	// nodes of key tries (see keyRune, keyDeviate).
	keyRunes     map[rune]*grammar.Node
	keyDeviates  map[string]*grammar.Node
	keyDeviates1 map[rune]*grammar.Node
	// keyTails caches the tries of one name's rest by that rest (see
	// buildKeyNotIn).
	keyTails map[string]*grammar.Node
	// encodedClasses caches encodedClass by the class's ranges.
	encodedClasses map[string]*grammar.Node
	classKey       []byte // encodedClass's scratch
}

func newCompiler(opts Options, r *refs, d draft) *compiler {
	p := newParser(r, d, opts.Relax)
	p.formatAnnotation = opts.FormatAnnotation
	c := &compiler{opts: opts, rules: map[string]string{}, refs: r, ptr: "#", p: p,
		z: &normalizer{p: p}, ev: &evaluator{p: p}, neg: &negator{p: p}}
	c.g = &grammar.Grammar{Start: "root"}
	c.g.Rules = append(c.g.Rules, grammar.Rule{Name: "root"})
	c.nodes.at = &c.ptr
	return c
}

// limitOf is the limit err exceeds, or "".
func limitOf(err error) string {
	var l *limitError
	if errors.As(err, &l) {
		return l.limit
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Limit
	}
	return ""
}

func (c *compiler) errorf(ptr, kw, format string, args ...any) error {
	return &Error{Pointer: ptr, Keyword: kw, Msg: fmt.Sprintf(format, args...)}
}

// wrapf is an error at ptr and kw caused by err: its message, and its
// limit when err is an *Error past one.
func (c *compiler) wrapf(ptr, kw string, err error) error {
	return wrapError(ptr, kw, err)
}

func wrapError(ptr, kw string, err error) error {
	e := &Error{Pointer: ptr, Keyword: kw, Msg: err.Error(), Err: err}
	var inner *Error
	var limit *limitError
	switch {
	case errors.As(err, &inner):
		e.Limit, e.Empty = inner.Limit, inner.Empty
	case errors.As(err, &limit):
		e.Limit = limit.limit
	}
	return e
}

// limitError is an error, without a pointer yet, for a schema past the
// limit named limit.
type limitError struct {
	limit string
	msg   string
}

func (e *limitError) Error() string { return e.msg }

func limitErrorf(limit, format string, args ...any) error {
	return &limitError{limit: limit, msg: fmt.Sprintf(format, args...)}
}

// limitf is an error at ptr and kw for a schema past the limit named
// limit.
func (c *compiler) limitf(ptr, kw, limit, format string, args ...any) error {
	return &Error{Pointer: ptr, Keyword: kw, Limit: limit, Msg: fmt.Sprintf(format, args...)}
}

// emptyf is errorf for a schema that no value satisfies.
func (c *compiler) emptyf(ptr, kw, format string, args ...any) error {
	return &Error{Pointer: ptr, Keyword: kw, Msg: fmt.Sprintf(format, args...), Empty: true}
}

// ws is optional whitespace between tokens.
func (c *compiler) ws() *grammar.Node {
	if c.opts.Compact {
		return &grammar.Node{Op: grammar.OpEmpty}
	}
	return c.shared("_ws", func() *grammar.Node {
		return c.nodes.repeat(grammar.Class(' ', ' ', '\t', '\t', '\n', '\n', '\r', '\r'), 0, c.opts.MaxWhitespace)
	})
}

// shared returns a reference to the rule name, built once by body: the
// pieces every schema repeats (whitespace, string characters) are one
// rule each instead of a copy at every use.
func (c *compiler) shared(name string, body func() *grammar.Node) *grammar.Node {
	if ref, ok := c.sharedRefs[name]; ok {
		return ref // one node for every reference: nodes are never changed once built
	}
	if _, ok := c.rules[name]; !ok {
		c.rules[name] = name
		c.g.Rules = append(c.g.Rules, grammar.Rule{Name: name, Body: body()})
	}
	if c.sharedRefs == nil {
		c.sharedRefs = map[string]*grammar.Node{}
	}
	ref := c.nodes.ref(name)
	c.sharedRefs[name] = ref
	return ref
}

// lit is a literal of the bytes of s, for code that makes nodes without a
// compiler (see nodeSlab.bytes).
func lit(s string) *grammar.Node {
	return &grammar.Node{Op: grammar.OpBytes, Leaf: &grammar.Leaf{Bytes: []byte(s)}}
}

// setRulePtr records that rule i was made for the schema at ptr.
func (c *compiler) setRulePtr(i int, ptr string) {
	for len(c.rulePtrs) <= i {
		c.rulePtrs = append(c.rulePtrs, "")
	}
	c.rulePtrs[i] = ptr
}

// canonical returns the canonical JSON text of a decoded scalar (null,
// boolean, number as written, string); false for anything else.
func canonical(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "null", true
	case bool:
		return strconv.FormatBool(x), true
	case json.Number:
		return x.String(), true
	case string:
		return quote(x), true
	}
	return "", false
}

// quote is the canonical JSON encoding of s.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		b.WriteString(escapeRune(r))
	}
	b.WriteByte('"')
	return b.String()
}

// escapeRune is the canonical JSON spelling of r inside a string.
func escapeRune(r rune) string {
	switch r {
	case '"':
		return `\"`
	case '\\':
		return `\\`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	}
	if r < 0x20 {
		const hex = "0123456789abcdef"
		return `\u00` + hex[r>>4:][:1] + hex[r&15:][:1]
	}
	return string(r)
}

// literal compiles one enum value as the schema at ptr writes it:
// scalars in canonical text, object keys in the schema's order (the same
// value with keys in another order is refused, a narrower subset of the
// valid texts), flexible whitespace between tokens.
func (c *compiler) literal(v any, ptr string) (*grammar.Node, error) {
	l := c.layout()
	var open, close string
	var items []*grammar.Node
	switch x := v.(type) {
	case map[string]any:
		open, close = "{", "}"
		keys := c.refs.order[ptr]
		if len(keys) != len(x) {
			keys = slices.Sorted(maps.Keys(x))
		}
		for _, k := range keys {
			n, err := c.nested(func() (*grammar.Node, error) { return c.literal(x[k], ptr+"/"+jsonptr.Escape(k)) })
			if err != nil {
				return nil, err
			}
			items = append(items, c.nodes.seq(c.nodes.bytes(quote(k)), l.colon, n))
		}
		if len(items) > 1 && len(items) <= anyOrderMax {
			// Its members in any order, each once.
			required := map[string]bool{}
			for _, k := range keys {
				required[k] = true
			}
			return c.anyOrder(objectShape{names: keys, members: items, required: required, once: true, maxProps: -1}, ptr, l)
		}
	case []any:
		open, close = "[", "]"
		for i, e := range x {
			n, err := c.nested(func() (*grammar.Node, error) { return c.literal(e, fmt.Sprintf("%s/%d", ptr, i)) })
			if err != nil {
				return nil, err
			}
			items = append(items, n)
		}
	case json.Number:
		// The same value written with trailing zeros, or as written.
		if r, err := parseNumber(x); err == nil {
			if g, err := decRange(&numBound{v: r}, &numBound{v: r}, false); err == nil && g != nil {
				return c.nodes.alt(c.nodes.bytes(x.String()), g), nil
			}
		}
		return c.nodes.bytes(x.String()), nil
	default:
		text, ok := canonical(v)
		if !ok {
			return nil, fmt.Errorf("unexpected value %T", v)
		}
		return c.nodes.bytes(text), nil
	}
	if len(items) == 0 {
		return c.wrap(l, open, close, nil, false), nil
	}
	subs := []*grammar.Node{items[0]}
	for _, n := range items[1:] {
		subs = append(subs, l.comma, n)
	}
	return c.wrap(l, open, close, c.nodes.seq(subs...), false), nil
}

// anyValue is any JSON value (at the current depth, when indenting).
func (c *compiler) anyValue() *grammar.Node {
	if c.opts.Bounded {
		return c.boundedValue(BoundedDepth)
	}
	key := "any" + c.level()
	if name, ok := c.rules[key]; ok {
		return c.nodes.ref(name)
	}
	name := "value" + c.level()
	c.rules[key] = name
	at := len(c.g.Rules)
	c.g.Rules = append(c.g.Rules, grammar.Rule{Name: name})
	l := c.layout()
	c.g.Rules[at].Body = c.valueBody(l, c.deeper(c.anyValue))
	return c.nodes.ref(name)
}

// valueBody is any JSON value laid out by l whose members and items are
// v.
func (c *compiler) valueBody(l layout, v *grammar.Node) *grammar.Node {
	items := -1
	if c.opts.Bounded {
		items = BoundedItems - 1
	}
	member := c.nodes.seq(c.stringNode(0, -1), l.colon, v)
	obj := c.wrap(l, "{", "}", c.nodes.seq(member, c.nodes.repeat(c.nodes.seq(l.comma, member), 0, items)), true)
	arr := c.wrap(l, "[", "]", c.nodes.seq(v, c.nodes.repeat(c.nodes.seq(l.comma, v), 0, items)), true)
	return c.nodes.alt(c.nodes.bytes("null"), c.nodes.bytes("true"), c.nodes.bytes("false"), c.numberNode(), c.stringNode(0, -1), obj, arr)
}

// boundedValue is any JSON value nested at most depth deep.
func (c *compiler) boundedValue(depth int) *grammar.Node {
	name := fmt.Sprintf("_value%d%s", depth, c.level())
	return c.shared(name, func() *grammar.Node {
		if depth == 0 {
			return c.nodes.alt(c.nodes.bytes("null"), c.nodes.bytes("true"), c.nodes.bytes("false"), c.numberNode(), c.stringNode(0, -1), c.nodes.bytes("{}"), c.nodes.bytes("[]"))
		}
		l := c.layout()
		return c.valueBody(l, c.deeper(func() *grammar.Node { return c.boundedValue(depth - 1) }))
	})
}

func (c *compiler) numberNode() *grammar.Node {
	if c.anyNumber == nil {
		c.anyNumber = c.buildNumberNode()
	}
	return c.anyNumber
}

// buildNumberNode makes numberNode's node.
func (c *compiler) buildNumberNode() *grammar.Node {
	more, expDigits := -1, -1
	if c.opts.Bounded {
		more, expDigits = BoundedDigits-1, 2
	}
	digits := c.nodes.repeat(grammar.Class('0', '9'), 1, more+1)
	if more < 0 {
		digits = c.nodes.repeat(grammar.Class('0', '9'), 1, -1)
	}
	intPart := c.nodes.alt(c.nodes.bytes("0"), c.nodes.seq(grammar.Class('1', '9'), c.nodes.repeat(grammar.Class('0', '9'), 0, more)))
	expPart := c.nodes.repeat(grammar.Class('0', '9'), 1, expDigits)
	return c.nodes.seq(c.nodes.repeat(c.nodes.bytes("-"), 0, 1), intPart,
		c.nodes.repeat(c.nodes.seq(c.nodes.bytes("."), digits), 0, 1),
		c.nodes.repeat(c.nodes.seq(grammar.Class('e', 'e', 'E', 'E'), c.nodes.repeat(grammar.Class('+', '+', '-', '-'), 0, 1), expPart), 0, 1))
}

// stringChar is one character of a JSON string in canonical form, or
// any escape. With noSurrogates, \u escapes of surrogates are left out,
// so that each unit is exactly one code point (for length bounds).
func stringChar(noSurrogates bool) *grammar.Node {
	plain := &grammar.Node{Op: grammar.OpClass, Leaf: &grammar.Leaf{Runes: grammar.NegateRanges([]rune{0, 0x1f, '"', '"', '\\', '\\'})}}
	hex := grammar.Class('0', '9', 'a', 'f', 'A', 'F')
	u := grammar.Seq(lit("u"), hex, hex, hex, hex)
	if noSurrogates {
		u = grammar.Seq(lit("u"), grammar.Alt(
			grammar.Seq(grammar.Class('0', '9', 'a', 'c', 'A', 'C', 'e', 'f', 'E', 'F'), hex, hex, hex),
			grammar.Seq(grammar.Class('d', 'd', 'D', 'D'), grammar.Class('0', '7'), hex, hex)))
	}
	esc := grammar.Seq(lit(`\`), grammar.Alt(grammar.Class('"', '"', '\\', '\\', '/', '/', 'b', 'b', 'f', 'f', 'n', 'n', 'r', 'r', 't', 't'), u))
	return grammar.Alt(plain, esc)
}

// stringNode is a JSON string of min to max code points (max -1: any).
func (c *compiler) stringNode(min, max int) *grammar.Node {
	if c.opts.Bounded && max < 0 {
		max = min + BoundedLength
	}
	bounded := min > 0 || max >= 0
	char := c.shared("_char", func() *grammar.Node { return stringChar(false) })
	if bounded {
		char = c.shared("_char1", func() *grammar.Node { return stringChar(true) })
	}
	switch {
	case min > longRepeat:
		return c.nodes.seq(c.nodes.bytes(`"`), c.logRepeat(char, "_char1", min, max), c.nodes.bytes(`"`))
	case max > longRepeat:
		// Up to longRepeat characters unrolled in place, as usual; only a
		// longer string goes on into the doubling rules, whose ends a
		// local view cannot see past.
		short := c.nodes.repeat(char, min, longRepeat)
		long := c.nodes.seq(c.nodes.repeat(char, longRepeat+1, longRepeat+1), c.logRepeat(char, "_char1", 0, max-longRepeat-1))
		return c.nodes.seq(c.nodes.bytes(`"`), c.nodes.alt(short, long), c.nodes.bytes(`"`))
	}
	return c.nodes.seq(c.nodes.bytes(`"`), c.nodes.repeat(char, min, max), c.nodes.bytes(`"`))
}

// longRepeat is the count above which a bounded repetition of string
// characters is built by doubling (logRepeat) rather than unrolled.
const longRepeat = 10000

// logRepeat is min to max (max -1: any) repetitions of the rule ref
// named name, in rules of logarithmic number and size: exactly(n) is the
// rules E_j (2^j copies: E_j = E_j-1 E_j-1) of n's binary digits, and
// up to n is, with h n's highest bit, either fewer than 2^h (U_h:
// fewer than 2^(h-1), or E_h-1 then fewer than 2^(h-1)) or E_h then
// up to n - 2^h. Each length has one parse.
func (c *compiler) logRepeat(ref *grammar.Node, name string, min, max int) *grammar.Node {
	var e func(j int) *grammar.Node
	e = func(j int) *grammar.Node {
		if j == 0 {
			return ref
		}
		return c.shared(fmt.Sprintf("%s_e%d", name, j), func() *grammar.Node { return c.nodes.seq(e(j-1), e(j-1)) })
	}
	var u func(j int) *grammar.Node
	u = func(j int) *grammar.Node {
		if j == 0 {
			return &grammar.Node{Op: grammar.OpEmpty}
		}
		return c.shared(fmt.Sprintf("%s_u%d", name, j), func() *grammar.Node {
			return c.nodes.alt(u(j-1), c.nodes.seq(e(j-1), u(j-1)))
		})
	}
	exactly := func(n int) *grammar.Node {
		var subs []*grammar.Node
		for j := 0; n > 0; j, n = j+1, n>>1 {
			if n&1 == 1 {
				subs = append(subs, e(j))
			}
		}
		return c.nodes.seq(subs...)
	}
	var upTo func(n int) *grammar.Node
	upTo = func(n int) *grammar.Node {
		if n == 0 {
			return &grammar.Node{Op: grammar.OpEmpty}
		}
		h := bits.Len(uint(n)) - 1
		return c.nodes.alt(u(h), c.nodes.seq(e(h), upTo(n-1<<h)))
	}
	if max < 0 {
		return c.nodes.seq(exactly(min), c.nodes.repeat(ref, 0, -1))
	}
	return c.nodes.seq(exactly(min), upTo(max-min))
}

// jsonEncode rewrites a grammar over code points into one over their
// canonical JSON string encoding. "." in ECMAScript does not match line
// terminators, so regex.Lower's "." (all but \n) is narrowed. A node
// the grammar shares (regex.Lower shares the part of x{n}) is encoded
// once and stays shared: \pL{1000} repeated had made gigabytes of
// copies of its class.
func jsonEncode(n *grammar.Node) (*grammar.Node, error) {
	e := jsonEncoder{memo: map[*grammar.Node]*grammar.Node{}}
	return e.encode(n)
}

// jsonEncoder is one jsonEncode: the encoding of each node met.
type jsonEncoder struct {
	memo map[*grammar.Node]*grammar.Node
}

func (e *jsonEncoder) encode(n *grammar.Node) (*grammar.Node, error) {
	if out, ok := e.memo[n]; ok {
		return out, nil
	}
	out, err := e.encodeOp(n)
	if err != nil {
		return nil, err
	}
	e.memo[n] = out
	return out, nil
}

func (e *jsonEncoder) encodeOp(n *grammar.Node) (*grammar.Node, error) {
	switch n.Op {
	case grammar.OpLit:
		var b strings.Builder
		for _, r := range n.Runes() {
			b.WriteString(escapeRune(r))
		}
		return lit(b.String()), nil
	case grammar.OpClass:
		var plain []rune
		var escaped []*grammar.Node
		ranges := n.Runes()
		for i := 0; i+1 < len(ranges); i += 2 {
			lo, hi := ranges[i], ranges[i+1]
			for lo <= hi && (lo < 0x20 || lo == '"' || lo == '\\') {
				escaped = append(escaped, lit(escapeRune(lo)))
				lo++
			}
			for lo <= hi {
				// Split around '"' and '\\'.
				end := hi
				for _, special := range []rune{'"', '\\'} {
					if lo < special && special <= end {
						end = special - 1
					}
				}
				plain = append(plain, lo, end)
				lo = end + 1
				for lo <= hi && (lo == '"' || lo == '\\') {
					escaped = append(escaped, lit(escapeRune(lo)))
					lo++
				}
			}
		}
		alts := escaped
		if len(plain) > 0 {
			alts = append([]*grammar.Node{{Op: grammar.OpClass, Leaf: &grammar.Leaf{Runes: plain}}}, alts...)
		}
		if len(alts) == 1 {
			return alts[0], nil
		}
		return grammar.Alt(alts...), nil
	case grammar.OpEmpty:
		return n, nil
	case grammar.OpSeq, grammar.OpAlt, grammar.OpRepeat:
		c := *n
		c.Subs = make([]*grammar.Node, len(n.Subs))
		for i, s := range n.Subs {
			var err error
			if c.Subs[i], err = e.encode(s); err != nil {
				return nil, err
			}
		}
		return &c, nil
	}
	return nil, fmt.Errorf("cannot encode %s in a JSON string", n.Op)
}

// floorRat is the largest integer at most r.
func floorRat(r *big.Rat) *big.Int {
	// Div rounds towards minus infinity for a positive divisor, and a
	// Rat's denominator is positive.
	return new(big.Int).Div(r.Num(), r.Denom())
}
