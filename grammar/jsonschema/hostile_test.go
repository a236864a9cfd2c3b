package jsonschema

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/grammar"
)

// hostileDeadline is how long one hostile schema may take: a guard
// against a hang or an exponential blow-up, far above what each takes
// (milliseconds to a second), not a speed target.
const hostileDeadline = 30 * time.Second

// withinDeadline runs f, failing the test if it has not returned after
// d: a guard against a hang, not a speed target.
func withinDeadline[T any](t *testing.T, d time.Duration, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(d):
		t.Fatalf("still running after %v", d)
		panic("unreachable")
	}
}

// list writes n items of item(i), comma-separated.
func list(n int, item func(i int) string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(item(i))
	}
	return b.String()
}

// longNames writes n quoted names of 34 bytes each.
func longNames(n int) string {
	return list(n, func(i int) string { return fmt.Sprintf(`"a_rather_long_required_name_%06d"`, i) })
}

// nest wraps inner in n copies of open and close.
func nest(n int, open, inner, close string) string {
	return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
}

// TestHostileSchemas compiles schemas built to exhaust time or memory
// (generated here, some of megabytes): each compiles, or is refused with
// an *Error naming the limit, the JSON pointer and the keyword, within
// hostileDeadline.
func TestHostileSchemas(t *testing.T) {
	deepProps := nest(MaxDepth/2-1, `{"type": "object", "properties": {"a": `, `{}`, `}}`)
	for _, tc := range []struct {
		name   string
		schema func() string
		opts   Options
		// ok: compiles (and grammar.Compile takes it); else the error.
		ok               bool
		limit, ptr, kw   string
		msg              string
		ptrPrefix, inMsg bool // ptr is a prefix of the pointer; msg is within Msg
	}{
		// The sets of anyOf branches under unevaluatedProperties are taken
		// without the others' negations only where that stays small (see
		// holdingSetsFit): without each check, one of these was refused
		// past maxLowered or grammar.MaxInst after up to 2 s, where the
		// negated sets, or each branch alone, compile.
		{name: "unevaluatedProperties over 4 anyOf branches of 3,000 properties",
			schema: func() string { return wideAnyOf(4, 3000) }, ok: true},
		{name: "unevaluatedProperties over 4 $refs to branches of 3,000 properties",
			schema: func() string {
				return strings.Replace(refBranches(wideAnyOf(4, 3000)), `"type": "object"`, `"type": "object", "$defs": {`+
					list(4, func(b int) string { return fmt.Sprintf(`"B%d": %s`, b, wideBranch(b, 3000)) })+`}`, 1)
			}, ok: true},
		{name: "unevaluatedProperties over 4 anyOf branches of 4 anyOf branches",
			schema: func() string { return nestedAnyOf("") }, ok: true},
		{name: "unevaluatedProperties over 4 $refs to anyOfs of 4 branches",
			schema: func() string { return nestedAnyOf("$ref") }, ok: true},
		{name: "unevaluatedProperties over 4 anyOf branches of recursive $refs",
			schema: func() string { return recursiveBranches(7, 11, 13, 17) }, ok: true},
		{name: "unevaluatedProperties over 4 anyOf branches of objects of patternProperties",
			schema: func() string {
				return `{"type": "object", "anyOf": [` + list(4, func(b int) string {
					return fmt.Sprintf(`{"properties": {"p": {"patternProperties": {"%c.{6}$": {"type": "string"}}}}}`, 'a'+b)
				}) + `], "unevaluatedProperties": false}`
			}, ok: true},
		{name: "unevaluatedProperties over 4 anyOf branches of patternProperties shared by $ref",
			schema: func() string {
				p := func(c byte) string { return fmt.Sprintf(`{"patternProperties": {"%c.{6}$": {"type": "string"}}}`, c) }
				return `{"type": "object", "$defs": {"A": ` + p('a') + `, "B": ` + p('b') + `, "C": ` + p('c') + `, "D": ` + p('d') + `}, "anyOf": [` +
					`{"properties": {"p": {"$ref": "#/$defs/A"}, "q2": {"$ref": "#/$defs/B"}, "q3": {"$ref": "#/$defs/C"}, "q4": {"$ref": "#/$defs/D"}}}, ` +
					`{"properties": {"p": {"$ref": "#/$defs/B"}}}, {"properties": {"p": {"$ref": "#/$defs/C"}}}, {"properties": {"p": {"$ref": "#/$defs/D"}}}], "unevaluatedProperties": false}`
			}, ok: true},
		{name: "unevaluatedProperties over 4 anyOf branches of patternProperties",
			schema: func() string {
				return `{"type": "object", "anyOf": [` + list(4, func(b int) string {
					return fmt.Sprintf(`{"patternProperties": {"%c.{6}$": {"type": "string"}}}`, 'a'+b)
				}) + `], "unevaluatedProperties": false}`
			}, ok: true},
		{name: "arrays nested 100 deep (doubled per level before)",
			schema: func() string { return nest(100, `{"type": "array", "items": `, `{}`, `}`) }, ok: true},
		{name: "objects nested as deep as MaxDepth allows",
			schema: func() string { return deepProps }, ok: true},
		{name: "objects with 7 properties nested 40 deep",
			schema: func() string {
				props := list(6, func(i int) string { return fmt.Sprintf(`"p%d": {"type": "string"}`, i) })
				return nest(40, `{"type": "object", "properties": {`+props+`, "next": `, `{}`, `}}`)
			}, ok: true},
		{name: "objects nested 1000 deep",
			schema: func() string { return nest(1000, `{"type": "object", "properties": {"a": `, `{}`, `}}`) },
			limit:  limitDepth, ptr: "#/properties/a/properties", ptrPrefix: true, kw: "a", msg: "nested more than 128 deep (MaxDepth)"},
		{name: "arrays of arrays nested 200 deep",
			schema: func() string { return nest(200, `[`, `1`, `]`) },
			limit:  limitDepth, ptr: "#" + strings.Repeat("/0", MaxDepth-1), kw: "0", msg: "line 1, column 129: nested more than 128 deep (MaxDepth)"},
		{name: "an integer bound of 2,000,000 digits",
			schema: func() string { return `{"type": "integer", "minimum": 1` + strings.Repeat("0", 2_000_000) + `}` },
			limit:  limitNumberDigits, ptr: "#", kw: "minimum", msg: "line 1, column 32: a number of 2000001 digits, more than the limit of 1000 (MaxNumberDigits)"},
		{name: "a bound of 1e1000",
			schema: func() string { return `{"type": "number", "maximum": 1e1000}` },
			limit:  limitNumberDigits, ptr: "#", kw: "maximum", msg: "1001 digits before the point", inMsg: true},
		{name: "a bound of 0.1e-1000",
			schema: func() string { return `{"type": "integer", "allOf": [{"minimum": 0.1e-1000}, {"minimum": -1}]}` },
			limit:  limitNumberDigits, ptr: "#/allOf/0", kw: "minimum", msg: "1001 digits after the point", inMsg: true},
		{name: "a length of 1e999999",
			schema: func() string { return `{"minLength": 1e999999}` },
			limit:  limitNumberDigits, ptr: "#", kw: "minLength", msg: "exponent is beyond ±1000", inMsg: true},
		{name: "a 5 MB const",
			schema: func() string { return `{"const": "` + strings.Repeat("a", 5<<20) + `"}` },
			limit:  limitSchemaBytes, ptr: "#", msg: "the document is 5242893 bytes, more than the limit of 4194304 (MaxSchemaBytes)"},
		{name: "a 50 MB pattern",
			schema: func() string { return `{"type": "string", "pattern": "` + strings.Repeat("a", 50<<20) + `"}` },
			limit:  limitSchemaBytes, ptr: "#", msg: "more than the limit of 4194304 (MaxSchemaBytes)", inMsg: true},
		{name: "a 1 MB const",
			schema: func() string { return `{"properties": {"c": {"const": "` + strings.Repeat("a", 1<<20) + `"}}}` },
			limit:  limitLiteralBytes, ptr: "#/properties/c", kw: "const", msg: "the value at #/properties/c/const is 1048578 bytes of JSON, more than the limit of 262144 (MaxLiteralBytes)"},
		{name: "40 consts of 10 KB",
			schema: func() string {
				return `{"properties": {` + list(40, func(i int) string {
					return fmt.Sprintf(`"p%d": {"const": "%s"}`, i, strings.Repeat("x", 10000))
				}) + `}}`
			},
			limit: limitLiteralBytes, ptr: "#/properties/p26", kw: "const", msg: "the enum and const values compiled take 270054 bytes of JSON", inMsg: true},
		{name: "an enum of 200,000 values",
			schema: func() string { return `{"enum": [` + list(200_000, func(i int) string { return fmt.Sprint(i) }) + `]}` },
			limit:  limitEnumValues, ptr: "#", kw: "enum", msg: "200000 values, more than the limit of 10000 (MaxEnumValues)"},
		// Values are checked against a long enum by a set, and numbers
		// compared without big.Rat (a scan of the list for each value,
		// each number parsed to a Rat: 31 s and 50 s before).
		{name: "an enum of 10,000 integers",
			schema: func() string {
				return `{"enum": [` + list(MaxEnumValues, func(i int) string { return fmt.Sprint(i) }) + `]}`
			}, ok: true},
		{name: "an enum of 4,000 numbers near 1e-999",
			schema: func() string {
				return `{"enum": [` + list(4000, func(i int) string { return fmt.Sprintf("%de-999", i+1) }) + `]}`
			}, ok: true},
		{name: "an enum of 10,000 arrays",
			schema: func() string {
				return `{"enum": [` + list(MaxEnumValues, func(i int) string { return fmt.Sprintf("[0, 0, 0, %d]", i) }) + `]}`
			}, ok: true},
		{name: "an enum of MaxEnumValues values",
			schema: func() string {
				return `{"enum": [` + list(MaxEnumValues, func(i int) string { return fmt.Sprintf(`"value %d"`, i) }) + `]}`
			}, ok: true},
		{name: "200 strings of up to 9000 characters",
			schema: func() string {
				return `{"properties": {` + list(200, func(i int) string { return fmt.Sprintf(`"p%d": {"type": "string", "maxLength": 9000}`, i) }) + `}}`
			},
			limit: limitGrammar, ptr: "#/properties/p", ptrPrefix: true, msg: "more than grammar.MaxInst (1048576); this schema's part is the largest", inMsg: true},
		{name: "an anyOf of 200 strings of up to 9000 characters",
			schema: func() string {
				return `{"properties": {"a": {"anyOf": [` + list(200, func(i int) string {
					return fmt.Sprintf(`{"type": "string", "minLength": %d, "maxLength": 9000}`, i)
				}) + `]}}}`
			},
			limit: limitGrammar, ptr: "#/properties/a", msg: "its grammar would take more than 1048576 instructions (grammar.MaxInst)", inMsg: true},
		// Each schema is flattened once: the intersection stays linear.
		{name: "allOf of two references to the next, 60 deep",
			schema: func() string {
				return `{"$defs": {` + list(60, func(i int) string {
					return fmt.Sprintf(`"d%d": {"allOf": [{"$ref": "#/$defs/d%d"}, {"$ref": "#/$defs/d%d"}]}`, i, i+1, i+1)
				}) + `, "d60": {"type": "string"}}, "allOf": [{"$ref": "#/$defs/d0"}, {"minLength": 1}]}`
			}, limit: limitFanOut, ptr: "#/$defs/d", ptrPrefix: true, msg: "more than 100000 times", inMsg: true},
		{name: "allOf of a reference to itself",
			schema: func() string {
				return `{"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}, {"type": "string"}]}}, "allOf": [{"$ref": "#/$defs/a"}, {"minLength": 1}]}`
			},
			limit: limitWork, ptr: "#/$defs/a", kw: "allOf", msg: "reaches itself through allOf or $ref", inMsg: true},
		{name: "a $ref with siblings to itself",
			schema: func() string {
				return `{"$defs": {"a": {"type": "string", "allOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a", "minLength": 1}`
			},
			limit: limitWork, ptr: "#/$defs/a", kw: "allOf", msg: "reaches itself through allOf or $ref", inMsg: true},
		{name: "anyOfs of two references to the next, 60 deep, in a oneOf",
			schema: func() string {
				return `{"$defs": {` + list(60, func(i int) string {
					return fmt.Sprintf(`"d%d": {"anyOf": [{"$ref": "#/$defs/d%d"}, {"$ref": "#/$defs/d%d"}]}`, i, i+1, i+1)
				}) + `, "d60": {"type": "string"}}, "oneOf": [{"$ref": "#/$defs/d0"}, {"type": "string", "minLength": 2}]}`
			}, limit: limitFanOut, ptr: "#/$defs/d", ptrPrefix: true, msg: "more than 100000 times", inMsg: true},
		{name: "anyOfs of two references to the next, 12 deep (the validator's check stays quick)",
			schema: func() string {
				return `{"$defs": {` + list(12, func(i int) string {
					return fmt.Sprintf(`"d%d": {"anyOf": [{"$ref": "#/$defs/d%d"}, {"$ref": "#/$defs/d%d"}]}`, i, i+1, i+1)
				}) + `, "d12": {"type": "string"}}, "$ref": "#/$defs/d0"}`
			}, ok: true},
		{name: "a pattern of 1.2 MB",
			schema: func() string { return `{"type": "string", "pattern": "^` + strings.Repeat("ab", 600_000) + `$"}` },
			limit:  limitGrammar, ptr: "#", kw: "pattern", msg: "a pattern of 1200002 bytes, whose grammar would take more than 1048576 instructions (grammar.MaxInst)"},
		{name: "a oneOf of 300 branches",
			schema: func() string {
				return `{"oneOf": [` + list(300, func(i int) string { return fmt.Sprintf(`{"const": "v%d"}`, i) }) + `]}`
			},
			limit: limitOneOf, ptr: "#", kw: "oneOf", msg: "300 branches, more than the limit of 256 (MaxOneOfBranches)"},
		{name: "a oneOf of 256 tagged branches",
			schema: func() string {
				return `{"oneOf": [` + list(256, func(i int) string {
					return fmt.Sprintf(`{"properties": {"t": {"const": "v%d"}}, "required": ["t"]}`, i)
				}) + `]}`
			}, ok: true},
		{name: "an object of 100,000 properties",
			schema: func() string {
				return `{"type": "object", "properties": {` + list(100_000, func(i int) string { return fmt.Sprintf(`"p%d": {}`, i) }) + `}}`
			},
			limit: limitSubschemas, ptr: "#/properties/p", ptrPrefix: true, msg: "more than 20000 subschemas", inMsg: true},
		// An object's names are found by index, not by looking through
		// the list for each (quadratic: 60,000 required names took 10 s).
		{name: "an object of 200,000 required names, in an allOf",
			schema: func() string {
				return `{"type": "object", "allOf": [{"properties": {"a": {}}}, {"required": [` + list(200_000, func(i int) string { return fmt.Sprintf(`"k%d"`, i) }) + `]}]}`
			},
			limit: limitGrammar, ptr: "#/allOf/1", kw: "required", msg: "200000 required properties, whose names alone would take 1688890 instructions, more than grammar.MaxInst (1048576)"},
		{name: "200,000 required names under maxProperties 0, in an anyOf",
			schema: func() string {
				return `{"anyOf": [{"type": "object", "maxProperties": 0, "required": [` + list(200_000, func(i int) string { return fmt.Sprintf(`"k%d"`, i) }) + `]}, {"type": "string"}]}`
			}, ok: true},
		// An object no value satisfies is dropped, not refused for the
		// size of its required names (a review found these refused).
		{name: "40,000 long required names under propertyNames refusing them, in an anyOf",
			schema: func() string {
				return `{"anyOf": [{"type": "object", "propertyNames": {"maxLength": 3}, "required": [` + longNames(40_000) + `]}, {"type": "string"}]}`
			}, ok: true},
		{name: "40,000 long required names under maxProperties 0, in an anyOf",
			schema: func() string {
				return `{"anyOf": [{"type": "object", "maxProperties": 0, "required": [` + longNames(40_000) + `]}, {"type": "string"}]}`
			}, ok: true},
		{name: "40,000 long required names, the first false, in an optional property",
			schema: func() string {
				return `{"type": "object", "properties": {"o": {"type": "object", "properties": {"a_rather_long_required_name_000000": false}, "required": [` + longNames(40_000) + `]}}}`
			}, ok: true},
		{name: "an object of 60,000 required names",
			schema: func() string {
				return `{"type": "object", "required": [` + list(60_000, func(i int) string { return fmt.Sprintf(`"k%d"`, i) }) + `]}`
			},
			limit: limitGrammar, ptr: "#", msg: "more than grammar.MaxInst (1048576)", inMsg: true},
		// Inlining keeps a grammar that fits MaxInst within it (it failed
		// in grammar.Compile, naming a rule, before).
		{name: "an object of 5,000 optional properties",
			schema: func() string {
				return `{"type": "object", "properties": {` + list(5000, func(i int) string { return fmt.Sprintf(`"k%d": {}`, i) }) + `}}`
			}, ok: true},
		// The grammar nodes one compile makes are bounded as they are
		// made (the size was checked only once all were: 4 GB and 22 s
		// at 16 anyOfs, twice the time at each two more).
		{name: "allOf of 18 anyOfs of two objects",
			schema: func() string {
				return `{"allOf": [` + list(18, func(i int) string {
					return fmt.Sprintf(`{"anyOf": [{"type": "object", "required": ["a%d"]}, {"type": "object", "required": ["b%d"]}]}`, i, i)
				}) + `]}`
			},
			limit: limitGrammar, ptr: "#", msg: "building the grammar made more than 1048576 nodes", inMsg: true},
		{name: "allOf of 18 anyOfs of two objects, in a property",
			schema: func() string {
				return `{"properties": {"x": {"allOf": [` + list(18, func(i int) string {
					return fmt.Sprintf(`{"anyOf": [{"type": "object", "required": ["a%d"]}, {"type": "object", "required": ["b%d"]}]}`, i, i)
				}) + `]}}}`
			},
			limit: limitGrammar, ptr: "#/properties/x", msg: "building the grammar made more than 1048576 nodes", inMsg: true},
		// Numeric ranges are counted as they are built (8,000 properties
		// of wide ranges took over 30 s and 6 GB to be refused after).
		{name: "8,000 numbers of wide ranges",
			schema: func() string {
				return `{"type": "object", "properties": {` + list(8000, func(i int) string {
					return fmt.Sprintf(`"p%d": {"type": "number", "minimum": -1.234567e300, "maximum": %de285}`, i, 987654321000000-i)
				}) + `}}`
			},
			limit: limitGrammar, ptr: "#/properties/p2", msg: "the numeric ranges compiled so far would take more than 1048576 instructions (grammar.MaxInst)"},
		// Distributions are counted however shallow (nested not of anyOf
		// took 23 s and 5 GB at 32 deep, twice that two deeper).
		{name: "not of anyOf nested 34 deep",
			schema: func() string {
				s := `{"type": "string", "pattern": "^a+b$"}`
				for i := range 34 {
					s = fmt.Sprintf(`{"not": {"anyOf": [%s, {"type": "integer", "minimum": %d}]}}`, s, i)
				}
				return s
			},
			limit: limitWork, ptr: "#/not/anyOf/0", ptrPrefix: true, msg: "combinators are distributed over their siblings more than 32768 times", inMsg: true},
		// An automaton's error names the keyword the schema has (it said
		// pattern, or patternProperties, for these).
		{name: "a string not any of 9,000 strings",
			schema: func() string {
				return `{"type": "string", "not": {"enum": [` + list(9000, func(i int) string { return fmt.Sprintf(`"v%d"`, i) }) + `]}}`
			},
			ptr: "#", kw: "not", msg: "the strings it excludes, with the string's other keywords, by automaton: the automaton would take more than 4096 states"},
		{name: "propertyNames of 9,000 names",
			schema: func() string {
				return `{"type": "object", "propertyNames": {"enum": [` + list(9000, func(i int) string { return fmt.Sprintf(`"v%d"`, i) }) + `]}}`
			},
			ptr: "#", kw: "propertyNames", msg: "the keys it allows, beside the listed names, by automaton: the automaton would take more than 4096 states"},
		// A pattern Go's regexp refuses says why (past RE2's repeat limit
		// it only said it was not valid).
		{name: "a pattern of repeats nested past RE2's limit",
			schema: func() string {
				return `{"type": "string", "pattern": "^` + strings.Repeat("(", 8) + `a{1,10}` + strings.Repeat("){1,10}", 8) + `$"}`
			},
			ptr: "#", ptrPrefix: true, kw: "pattern", msg: "is not valid regex: error parsing regexp: invalid repeat count", inMsg: true},
		{name: "a chain of 20,000 references",
			schema: func() string {
				return `{"$defs": {` + list(20_000, func(i int) string {
					return fmt.Sprintf(`"d%d": {"type": "array", "items": {"$ref": "#/$defs/d%d"}}`, i, i+1)
				}) + `, "d20000": {"type": "string"}}, "$ref": "#/$defs/d0"}`
			},
			limit: limitSubschemas, ptr: "#/$defs/d", ptrPrefix: true, msg: "more than 20000 subschemas", inMsg: true},
		{name: "a megabyte of chains 120 deep",
			schema: func() string {
				one := nest(120, `{"items": `, `{}`, `}`)
				return `{"anyOf": [` + list((1<<20)/len(one), func(int) string { return one }) + `]}`
			},
			limit: limitSubschemas, ptr: "#/anyOf/", ptrPrefix: true, msg: "more than 20000 subschemas", inMsg: true},
		{name: "loaded documents over MaxSchemaBytes together",
			schema: func() string {
				return `{"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"$ref": "a.json"}, {"$ref": "b.json"}]}`
			},
			opts: Options{BaseURI: "https://example.com/s.json", Loader: func(string) ([]byte, error) {
				return []byte(`{"description": "` + strings.Repeat("x", 3<<20) + `"}`), nil
			}},
			limit: limitSchemaBytes, ptr: "#/items/1", kw: "$ref", msg: "loading https://example.com/b.json: the documents take 6291599 bytes together, more than the limit of 4194304 (MaxSchemaBytes)"},
		{name: "more documents than MaxDocuments",
			schema: func() string {
				return `{"$schema": "http://json-schema.org/draft-07/schema#", "items": [` + list(MaxDocuments+1, func(i int) string { return fmt.Sprintf(`{"$ref": "d%d.json"}`, i) }) + `]}`
			},
			opts:  Options{BaseURI: "https://example.com/s.json", Loader: func(string) ([]byte, error) { return []byte(`{}`), nil }},
			limit: limitDocuments, ptr: fmt.Sprintf("#/items/%d", MaxDocuments), kw: "$ref", msg: "more than 256 documents (MaxDocuments)", inMsg: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schema := tc.schema()
			// Both ways to a program give the same error: Compile, which
			// measures the grammar, then grammar.Compile; and CompileProg,
			// which measures it only when grammar.Compile fails.
			for _, path := range []struct {
				name    string
				compile func() error
			}{
				{"Compile", func() error {
					g, err := Compile([]byte(schema), tc.opts)
					if err == nil {
						_, err = grammar.Compile(g)
					}
					return err
				}},
				{"CompileProg", func() error {
					_, _, err := CompileProg([]byte(schema), tc.opts)
					return err
				}},
			} {
				err := withinDeadline(t, hostileDeadline, path.compile)
				if tc.ok {
					require.NoError(t, err, path.name)
					continue
				}
				var e *Error
				require.True(t, errors.As(err, &e), "%s: %v", path.name, err)
				assert.Equal(t, tc.limit, e.Limit, "%s: %s", path.name, e.Error())
				if tc.ptrPrefix {
					assert.True(t, strings.HasPrefix(e.Pointer, tc.ptr), "%s: pointer %s, want a prefix %s", path.name, e.Pointer, tc.ptr)
				} else {
					assert.Equal(t, tc.ptr, e.Pointer, path.name)
				}
				if tc.kw != "" {
					assert.Equal(t, tc.kw, e.Keyword, path.name)
				}
				if tc.inMsg {
					assert.Contains(t, e.Msg, tc.msg, path.name)
				} else {
					assert.True(t, strings.HasSuffix(e.Msg, tc.msg), "%s: message %q, want it to end %q", path.name, e.Msg, tc.msg)
				}
			}
		})
	}
}

// TestNestedGrammarLinear checks that the grammar's tree, walked as a
// tree (a shared node once per parent, as a scan that does not remember
// nodes walks it), grows linearly with nesting: arrays of arrays and
// ordered objects of ordered objects name a large repeated part as a
// rule instead of sharing it, which doubled the walk at each level.
func TestNestedGrammarLinear(t *testing.T) {
	objects := func(n int) string {
		props := list(7, func(i int) string { return fmt.Sprintf(`"p%d": {"type": "string"}`, i) })
		return nest(n, `{"type": "object", "properties": {`+props+`, "next": `, `{}`, `}}`)
	}
	arrays := func(n int) string {
		return nest(n, `{"type": "array", "items": `, `{"type": "integer", "minimum": 3}`, `}`)
	}
	for name, schema := range map[string]func(int) string{"arrays": arrays, "objects": objects} {
		sizes, steps := map[int]int{}, map[int]int{}
		for _, n := range []int{20, 40} {
			g, err := Compile([]byte(schema(n)), Options{Bounded: true})
			require.NoError(t, err, name)
			z := &sizer{}
			for _, r := range g.Rules {
				sizes[n] += z.size(r.Body)
			}
			steps[n] = z.steps
		}
		assert.Less(t, sizes[40], 3*sizes[20], "%s: the grammar's size 40 deep against 20 deep", name)
		assert.Less(t, steps[40], 3*steps[20], "%s: the nodes walked 40 deep against 20 deep", name)
	}
}

// nestedAnyOf is an anyOf of 4 anyOfs of 4 branches of 5 properties,
// each inner anyOf under its own unevaluatedProperties, and with how
// "$ref", each behind a $ref.
func nestedAnyOf(how string) string {
	inner := func(b int) string {
		return `{"anyOf": [` + list(4, func(j int) string {
			return `{"properties": {` + list(5, func(i int) string { return fmt.Sprintf(`"q%d_%d_%d": {"type": "string"}`, b, j, i) }) + `}}`
		}) + `], "unevaluatedProperties": false}`
	}
	if how != "$ref" {
		return `{"type": "object", "anyOf": [` + list(4, inner) + `], "unevaluatedProperties": false}`
	}
	return `{"type": "object", "$defs": {` + list(4, func(b int) string { return fmt.Sprintf(`"B%d": %s`, b, inner(b)) }) +
		`}, "anyOf": [` + list(4, func(b int) string { return fmt.Sprintf(`{"$ref": "#/$defs/B%d"}`, b) }) + `], "unevaluatedProperties": false}`
}

// recursiveBranches is an anyOf of branches whose property "a" starts a
// cycle of $refs as long as each of cycles (coprime: intersecting two
// takes the product of their lengths).
func recursiveBranches(cycles ...int) string {
	var defs, branches []string
	for b, m := range cycles {
		for i := range m {
			defs = append(defs, fmt.Sprintf(`"R%d_%d": {"type": "object", "properties": {"next": {"$ref": "#/$defs/R%d_%d"}, "v%d_%d": {"type": "string"}}}`, b, i, b, (i+1)%m, b, i))
		}
		branches = append(branches, fmt.Sprintf(`{"properties": {"a": {"$ref": "#/$defs/R%d_0"}}}`, b))
	}
	return `{"type": "object", "$defs": {` + strings.Join(defs, ", ") + `}, "anyOf": [` + strings.Join(branches, ", ") + `], "unevaluatedProperties": false}`
}

// refBranches replaces the branches of the anyOf wideAnyOf wrote by
// $refs to #/$defs/B0, B1...
func refBranches(schema string) string {
	at := strings.Index(schema, `"anyOf": [`)
	end := strings.LastIndex(schema, `], "unevaluatedProperties"`)
	n := strings.Count(schema[at:end], `{"properties"`)
	return schema[:at] + `"anyOf": [` + list(n, func(b int) string { return fmt.Sprintf(`{"$ref": "#/$defs/B%d"}`, b) }) + schema[end:]
}
