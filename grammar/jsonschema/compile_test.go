package jsonschema

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/grammar"
)

// keywordCase is a schema and instances (as JSON text) with whether each
// is valid. The test checks the expectation against the validator too,
// so a case cannot assert something the specification does not say.
type keywordCase struct {
	name    string
	schema  string
	valid   []string
	invalid []string
}

func runKeywordCases(t *testing.T, cases []keywordCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := Compile([]byte(tc.schema), Options{})
			require.NoError(t, err)
			p, err := grammar.Compile(g)
			require.NoError(t, err)
			for _, v := range tc.valid {
				require.NoError(t, Validate([]byte(tc.schema), []byte(v)), "test case wrong: %s is invalid", v)
				assert.True(t, acceptsText(p, v), "valid %s refused", v)
			}
			for _, v := range tc.invalid {
				require.Error(t, Validate([]byte(tc.schema), []byte(v)), "test case wrong: %s is valid", v)
				assert.False(t, acceptsText(p, v), "invalid %s accepted", v)
			}
		})
	}
}

func TestKeywords(t *testing.T) {
	runKeywordCases(t, []keywordCase{
		{
			// Each pattern and format is lowered once per compile (see
			// oneStr), its strings kept apart by length bounds, and a
			// pattern from a format of the same name.
			name: "one pattern and one format at several places, bounds apart",
			schema: `{"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-z]+$"}, "b": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 3},
				"c": {"type": "string", "pattern": "^[a-z]+$", "minLength": 5}, "d": {"type": "string", "format": "email"},
				"e": {"type": "string", "format": "email", "maxLength": 8}, "f": {"type": "string", "pattern": "email"}}}`,
			valid:   []string{`{"a": "abcdef", "b": "abc", "c": "abcde", "d": "x@y.io", "e": "a@b.io", "f": "my email"}`},
			invalid: []string{`{"b": "abcd"}`, `{"c": "abcd"}`, `{"e": "abcd@ef.io"}`, `{"f": "mail"}`, `{"d": "email"}`, `{"a": "ab1"}`},
		},
		{
			// Within both ECMAScript's meaning and the validator's (Go's):
			// \s is Go's narrower space, \S excludes ECMAScript's wider one.
			name:    "pattern with \\s and \\S",
			schema:  `{"type": "string", "pattern": "^\\S+\\s[\\sx][^\\s]$"}`,
			valid:   []string{`"ab  c"`, `"a\txb"`, `"a\r\nb"`},
			invalid: []string{`"a b"`, `"a  "`, `"ab"`, `"a\u00a0xb"`, `"a \u00a0b"`},
		},
		{
			name:    "a required property without a schema takes additionalProperties",
			schema:  `{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a", "b"], "additionalProperties": {"type": "string"}}`,
			valid:   []string{`{"a": 1, "b": "x"}`, `{"a": 1, "b": "x", "c": "y"}`},
			invalid: []string{`{"a": 1}`, `{"a": 1, "b": 2}`, `{"b": "x"}`},
		},
		{
			name:    "a required property without a schema, additional ones allowed",
			schema:  `{"type": "object", "required": ["id"]}`,
			valid:   []string{`{"id": [1, {}]}`, `{"id": null, "x": 1}`},
			invalid: []string{`{}`, `{"x": 1}`},
		},
		{
			name:    "a small object's properties in any order, each once, additional ones anywhere",
			schema:  `{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "null"}}, "required": ["a", "c"]}`,
			valid:   []string{`{"a": 1, "c": null}`, `{"c": null, "a": 1}`, `{"b": "x", "c": null, "a": 1}`, `{"z": [], "a": 1, "y": 2, "c": null}`},
			invalid: []string{`{"a": 1}`, `{"b": "x", "c": null}`, `{"a": "1", "c": null}`, `{"a": 1, "c": null, "b": 2}`},
		},
		{
			name:    "a larger object in any order, names may repeat",
			schema:  `{"type": "object", "properties": {"a": {"type": "integer"}, "b": {}, "c": {}, "d": {}, "e": {}, "f": {}, "g": {"type": "string"}}, "required": ["g"], "additionalProperties": false}`,
			valid:   []string{`{"g": "x"}`, `{"f": 1, "a": 2, "g": "x"}`, `{"a": 1, "g": "x", "a": 2}`},
			invalid: []string{`{"a": 1}`, `{"g": "x", "h": 1}`, `{"g": 1}`},
		},
		{
			name:    "length bounds a pattern already implies",
			schema:  `{"type": "string", "pattern": "^[a-z]{2,4}$", "minLength": 1, "maxLength": 4}`,
			valid:   []string{`"ab"`, `"abcd"`},
			invalid: []string{`"a"`, `"abcde"`, `"AB"`},
		},
		{
			name:    "length bounds a format already implies",
			schema:  `{"type": "string", "format": "date", "maxLength": 10}`,
			valid:   []string{`"2024-02-29"`},
			invalid: []string{`"2023-02-29"`, `"2024-1-01"`},
		},
		{
			name:    "dependencies (dependentRequired)",
			schema:  `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"card": {"type": "string"}, "address": {"type": "string"}, "name": {}}, "dependencies": {"card": ["address"]}}`,
			valid:   []string{`{}`, `{"name": 1}`, `{"address": "x"}`, `{"card": "1", "address": "x"}`, `{"address": "x", "card": "1"}`},
			invalid: []string{`{"card": "1"}`, `{"card": "1", "name": 2}`},
		},
		{
			name:    "dependentRequired in a larger object",
			schema:  `{"type": "object", "properties": {"a": {}, "b": {}, "c": {}, "d": {}, "e": {}, "f": {}, "g": {}}, "dependentRequired": {"a": ["g"]}}`,
			valid:   []string{`{"b": 1}`, `{"a": 1, "b": 2, "g": 3}`, `{"g": 1, "a": 2}`},
			invalid: []string{`{"a": 1}`, `{"a": 1, "b": 2, "c": 3}`},
		},
		{
			name:    "objects in enum, keys as the schema writes them",
			schema:  `{"enum": [{"b": 1, "a": [true, {"z": null}]}, "x", {}]}`,
			valid:   []string{`{"b": 1, "a": [true, {"z": null}]}`, `{ "b" :1,"a":[ true,{"z":null} ] }`, `"x"`, `{}`},
			invalid: []string{`{"b": 2, "a": [true, {"z": null}]}`, `{"b": 1}`, `{"b": 1, "a": [true, {"z": null}], "c": 0}`},
		},
		{
			name:    "hostnames",
			schema:  `{"type": "string", "format": "hostname"}`,
			valid:   []string{`"my-proxy.com"`, `"a.b-c.d"`, `"x1"`},
			invalid: []string{`"-a.com"`, `"a-.com"`, `"a..b"`, `"a_b.com"`},
		},
		{
			name:    "a small object without additional properties",
			schema:  `{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "additionalProperties": false}`,
			valid:   []string{`{}`, `{"b": "x"}`, `{"b": "x", "a": 1}`},
			invalid: []string{`{"c": 1}`, `{"b": "x", "c": 1}`},
		},
		{
			name:    "number bounds, exact for decimals",
			schema:  `{"type": "number", "exclusiveMinimum": -1.5, "maximum": 2.25}`,
			valid:   []string{`-1.4999`, `0`, `2.25`, `2.2500`, `1`, `-1`, `0.000`},
			invalid: []string{`-1.5`, `-1.50`, `2.2501`, `3`, `-2`, `"1"`},
		},
		{
			name:    "draft 4 exclusiveMaximum flag on a number",
			schema:  `{"$schema": "http://json-schema.org/draft-04/schema#", "type": "number", "minimum": 0, "maximum": 1, "exclusiveMaximum": true}`,
			valid:   []string{`0`, `0.999`, `0.5`},
			invalid: []string{`1`, `1.0`, `-0.1`},
		},
		{
			name:    "oneOf of disjoint types, integer and string",
			schema:  `{"oneOf": [{"type": "string"}, {"type": "integer"}]}`,
			valid:   []string{`"x"`, `12`},
			invalid: []string{`1.5`, `null`},
		},
		{
			name:    "oneOf as a tagged union",
			schema:  `{"definitions": {"a": {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind"]}}, "oneOf": [{"$ref": "#/definitions/a"}, {"type": "object", "properties": {"kind": {"enum": ["b", "c"]}, "y": {"type": "string"}}, "required": ["kind", "y"]}]}`,
			valid:   []string{`{"kind": "a", "x": 1}`, `{"kind": "c", "y": "s"}`},
			invalid: []string{`{"kind": "b"}`, `{"kind": "d", "y": "s"}`, `{}`},
		},
		{
			name:    "oneOf of objects one of which forbids what the other requires",
			schema:  `{"oneOf": [{"type": "object", "properties": {"src": {"type": "string"}}, "required": ["src"], "additionalProperties": false}, {"type": "object", "properties": {"from": {"type": "string"}}, "required": ["from"]}]}`,
			valid:   []string{`{"src": "a"}`, `{"from": "b"}`, `{"from": "b", "x": 1}`, `{"src": "a", "from": "b"}`},
			invalid: []string{`{}`, `{"src": 1}`, `"src"`},
		},
		{
			name:    "oneOf of required lists: exactly one holds",
			schema:  `{"type": "object", "properties": {"radius": {"type": "number"}, "length": {"type": "number"}, "width": {"type": "number"}}, "oneOf": [{"required": ["radius"]}, {"required": ["length", "width"]}]}`,
			valid:   []string{`{"radius": 1}`, `{"width": 2, "length": 1}`, `{"radius": 1, "length": 2}`},
			invalid: []string{`{}`, `{"length": 1}`, `{"radius": 1, "length": 2, "width": 3}`, `{"radius": "1"}`},
		},
		{
			name:    "oneOf of disjoint enums",
			schema:  `{"oneOf": [{"enum": ["a", "b"]}, {"enum": ["c", null]}]}`,
			valid:   []string{`"a"`, `null`},
			invalid: []string{`"d"`},
		},
		{
			name:    "patternProperties without additional properties",
			schema:  `{"type": "object", "properties": {"id": {"type": "integer"}}, "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": false}`,
			valid:   []string{`{"id": 1}`, `{"x-a": "s", "id": 2}`, `{"x-": "", "x-b": "t"}`},
			invalid: []string{`{"y": "s"}`, `{"x-a": 1}`, `{"id": "1"}`},
		},
		{
			// The other keys take additionalProperties: the complement of
			// the patterns, by automaton.
			name:    "patternProperties beside additional properties",
			schema:  `{"type": "object", "properties": {"zb": {"type": "integer"}}, "patternProperties": {"^a": {"type": "string"}, "b$": {"minLength": 2}}, "additionalProperties": {"type": "boolean"}}`,
			valid:   []string{`{}`, `{"a": "x", "ax": "y", "x": true, "": false, "zb": 1}`, `{"zb": 2, "aab": "xy", "bb": "zz", "\"": true, "b": 1}`},
			invalid: []string{`{"a": 1}`, `{"x": "s"}`, `{"zb": "s"}`, `{"zb": 1, "aab": "x"}`, `{"b": "s"}`, `{"z": 1}`},
		},
		{
			name:    "patternProperties with listed names that match, additionalProperties false",
			schema:  `{"type": "object", "properties": {"ab": {"maxLength": 2}}, "patternProperties": {"^a": {"type": "string"}}, "additionalProperties": false}`,
			valid:   []string{`{"ab": "xy"}`, `{"a": "", "abc": "s"}`},
			invalid: []string{`{"ab": "xyz"}`, `{"ab": 1}`, `{"b": "x"}`, `{"a": 1}`},
		},
		{
			name:    "patternProperties in two schemas intersected",
			schema:  `{"allOf": [{"patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": false}, {"patternProperties": {"y$": {"minimum": 3}}}]}`,
			valid:   []string{`{}`, `{"x": 1, "xy": 5}`, `{"xyz": -1}`},
			invalid: []string{`{"y": 4}`, `{"xy": 1}`, `{"x": 1.5}`, `{"x": "s"}`},
		},
		{
			name:    "minProperties 1",
			schema:  `{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "minProperties": 1}`,
			valid:   []string{`{"a": 1}`, `{"b": "x"}`, `{"a": 1, "b": "x"}`, `{"z": true}`},
			invalid: []string{`{}`},
		},
		{
			name:    "minProperties 1 without additional properties",
			schema:  `{"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": false, "minProperties": 1}`,
			valid:   []string{`{"a": 1}`},
			invalid: []string{`{}`, `{"b": 1}`},
		},
		{
			// The object branch takes at most 2 keys: empty, not refused as
			// unsupported (which failed the whole anyOf).
			name:    "minProperties above the keys an object may have, in an anyOf branch",
			schema:  `{"anyOf": [{"type": "object", "properties": {"a": {}, "b": {}}, "additionalProperties": false, "minProperties": 3}, {"type": "string"}]}`,
			valid:   []string{`"x"`},
			invalid: []string{`{"a": 1, "b": 2}`, `{}`},
		},
		{
			// The empty object is none of the oneOf's branches.
			name:    "maxProperties 0 beside a oneOf of required lists, in an anyOf branch",
			schema:  `{"anyOf": [{"type": "object", "oneOf": [{"required": ["k"]}, {"required": ["c"]}], "properties": {"k": {}, "c": {}}, "maxProperties": 0}, {"type": "string"}]}`,
			valid:   []string{`"x"`},
			invalid: []string{`{}`, `{"k": 1}`},
		},
		{
			name:    "an optional property no value satisfies is never present",
			schema:  `{"type": "object", "properties": {"k": {"type": "object", "enum": ["x", "y"]}, "n": {"type": "integer"}}}`,
			valid:   []string{`{"n": 1}`, `{}`},
			invalid: []string{`{"k": "x"}`, `{"k": {}}`},
		},
		{
			// Additional keys are any key but the listed names: names that
			// are prefixes of others, non-ASCII and escaped characters.
			name:    "additional properties take every other key",
			schema:  `{"type": "object", "properties": {"a": {"type": "integer"}, "ab": {"type": "integer"}, "abc": {"type": "integer"}, "b\"q": {"type": "integer"}, "é": {"type": "integer"}, "éa": {"type": "integer"}}, "additionalProperties": {"type": "string"}}`,
			valid:   []string{`{"a": 1, "abd": "x", "": "x", "abcd": "x", "ac": "x", "b": "x", "b\"": "x", "e": "x", "éb": "x", "ê": "x", "\u0001": "x"}`, `{"b\"q": 1, "é": 2, "éa": 3}`},
			invalid: []string{`{"a": "x"}`, `{"ab": "x"}`, `{"abc": "x"}`, `{"b\"q": "x"}`, `{"é": "x"}`, `{"éa": "x"}`},
		},
		{
			// The bounds fall on the one repeated character.
			name:    "pattern of one repeated character with length bounds",
			schema:  `{"type": "string", "pattern": "^[0-9a-z-]*$", "minLength": 4, "maxLength": 6}`,
			valid:   []string{`"abcd"`, `"ab-d12"`, `"----"`},
			invalid: []string{`"abc"`, `"abcdefg"`, `"ABCD"`, `""`},
		},
		{
			name:    "pattern of fixed parts around one repeated character with a maximum length",
			schema:  `{"type": "string", "pattern": "^v[0-9]+\\.$", "maxLength": 4}`,
			valid:   []string{`"v1."`, `"v12."`},
			invalid: []string{`"v123."`, `"v."`, `"v12"`, `"x12."`},
		},
		{
			name:    "pattern with length bounds, by automaton",
			schema:  `{"type": "string", "pattern": "[a-zA-Z0-9_.-]+", "minLength": 3, "maxLength": 6}`,
			valid:   []string{`"abc"`, `"  a   "`, `"..."`, `"a\n\tb"`},
			invalid: []string{`"ab"`, `"   "`, `"abcdefg"`, `""`},
		},
		{
			name:    "a pattern of words with a maximum length",
			schema:  `{"type": "string", "pattern": "^(?:\\S+\\s+){0,2}\\S+$", "maxLength": 8}`,
			valid:   []string{`"a"`, `"ab cd ef"`, `"abcdefgh"`},
			invalid: []string{`"abcdefghi"`, `"a b c d"`, `" a"`, `""`},
		},
		{
			name:    "two patterns and a format",
			schema:  `{"allOf": [{"pattern": "^2024-"}, {"pattern": "-29$"}], "format": "date", "type": "string"}`,
			valid:   []string{`"2024-02-29"`, `"2024-12-29"`},
			invalid: []string{`"2023-02-29"`, `"2024-02-28"`, `"2024-02-30"`},
		},
		{
			name:    "a format with a length bound",
			schema:  `{"type": "string", "format": "date-time", "maxLength": 20}`,
			valid:   []string{`"2024-02-29T10:00:00Z"`},
			invalid: []string{`"2024-02-29T10:00:00.5Z"`, `"2024-02-29T10:00:00"`},
		},
		{
			name:    "an anyOf branch no value satisfies is dropped",
			schema:  `{"anyOf": [{"type": "string", "minLength": 3, "maxLength": 2}, {"type": "integer"}]}`,
			valid:   []string{`1`},
			invalid: []string{`"abc"`, `"ab"`},
		},
	})
}

// TestAnyOrderNoDuplicates checks that a small object's grammar, which
// takes its properties in any order, takes each at most once (the
// validator would accept a duplicate, judging only the last value).
func TestAnyOrderNoDuplicates(t *testing.T) {
	g, err := Compile([]byte(`{"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "additionalProperties": false}`), Options{})
	require.NoError(t, err)
	p, err := grammar.Compile(g)
	require.NoError(t, err)
	assert.True(t, acceptsText(p, `{"b": 1, "a": 2}`))
	assert.False(t, acceptsText(p, `{"a": 1, "a": 2}`))
	assert.False(t, acceptsText(p, `{"b": 1, "a": 2, "b": 3}`))
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		schema, pointer, keyword string
	}{
		{`{"type": "string", "pattern": "[\\S]"}`, "#", "pattern"},
		{`{"type": "object", "minProperties": 2}`, "#", "minProperties"},
		{`{"type": "object", "properties": {"a": {}, "b": {}}, "minProperties": 3}`, "#", "minProperties"},
		{`{"type": "object", "propertyNames": {"anyOf": [{"maxLength": 2}, {"pattern": "^x"}]}}`, "#/propertyNames", "propertyNames"},
		{`{"properties": {"a": {}}, "dependentRequired": {"a": ["zz"]}}`, "#/dependentRequired", "a"},
		{`{"type": "string", "pattern": "^ab[0-9]*$", "maxLength": 1}`, "#", "pattern"},
		{`{"type": "string", "pattern": "[ab]{20}a[ab]{12}", "maxLength": 40}`, "#", "pattern"},
		{`{"patternProperties": {"^a\\b": {"type": "string"}}}`, "#/patternProperties/^a\\b", ""},
		{`{"oneOf": [{"type": "number"}, {"type": "integer", "multipleOf": 2}]}`, "#", "oneOf"},
		{`{"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}`, "#", "oneOf"},
		{`{"oneOf": [{"type": "array"}, {"uniqueItems": true}]}`, "#", "oneOf"},
		{`{"type": "object", "required": ["a"], "additionalProperties": false}`, "#", "required"},
		{`{"properties": {"a": {"type": "string", "pattern": "\\bx"}}}`, "#/properties/a", "pattern"},
		// The bound past the limit is named, not the other one.
		{`{"type": "array", "minItems": 1000000}`, "#", "minItems"},
		{`{"type": "array", "minItems": 5, "maxItems": 5000}`, "#", "maxItems"},
		{`{"type": "string", "minLength": 99999999999}`, "#", "minLength"},
		{`{"type": "string", "maxLength": 99999999999}`, "#", "maxLength"},
	} {
		_, err := Compile([]byte(tc.schema), Options{})
		var e *Error
		require.ErrorAs(t, err, &e, tc.schema)
		assert.Equal(t, tc.pointer, e.Pointer, tc.schema)
		assert.Equal(t, tc.keyword, e.Keyword, tc.schema)
	}
	// Bounded derives a maxItems from minItems where there is none: the
	// schema's minItems is named.
	_, err := Compile([]byte(`{"type": "array", "minItems": 998}`), Options{Bounded: true})
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "minItems", e.Keyword)
}

// TestBounded checks Options.Bounded: what the schema leaves open gets
// the documented bound, and what it bounds itself is kept.
func TestBounded(t *testing.T) {
	long := func(n int) string { return `"` + strings.Repeat("a", n) + `"` }
	items := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("1,", n), ",") + "]" }
	for _, tc := range []struct {
		schema      string
		accept, not []string
	}{
		{`{"type": "string"}`, []string{long(BoundedLength)}, []string{long(BoundedLength + 1)}},
		{`{"type": "string", "minLength": 40}`, []string{long(40 + BoundedLength)}, []string{long(41 + BoundedLength)}},
		{`{"type": "string", "maxLength": 100}`, []string{long(100)}, []string{long(101)}},
		{`{"type": "array"}`, []string{items(BoundedItems)}, []string{items(BoundedItems + 1)}},
		{`{"type": "number"}`, []string{"123456789012.123456789012", "1e99"}, []string{"1234567890123", "1.1234567890123", "1e999"}},
		{`{"type": "integer"}`, []string{"-999999999999"}, []string{"1000000000000"}},
		{`{"type": "number", "minimum": 0.5}`, []string{"999999999999", "0.500000000001"}, []string{"999999999999.5", "1000000000000"}},
		// The top level is the schema's; below it, free values nest 3 deep.
		{`{}`, []string{`[[[[1]]]]`, `{"a": [{"b": {}}]}`}, []string{`[[[[[1]]]]]`}},
		{`{"type": "object", "properties": {"a": {}}}`, []string{`{"a": 1}`}, []string{`{"a": 1, "b": 2}`}},
		{`{"type": "object"}`, []string{`{"a": 1, "b": 2, "c": 3, "d": 4}`}, []string{`{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}`}},
	} {
		g, err := Compile([]byte(tc.schema), Options{Bounded: true})
		require.NoError(t, err, tc.schema)
		p, err := grammar.Compile(g)
		require.NoError(t, err, tc.schema)
		for _, s := range tc.accept {
			assert.True(t, acceptsText(p, s), "%s should accept %s", tc.schema, s)
		}
		for _, s := range tc.not {
			assert.False(t, acceptsText(p, s), "%s should refuse %s", tc.schema, s)
		}
	}
}

// TestLogRepeat checks the doubling construction of long repetitions
// against every length up to 70, for bounds small enough to check.
func TestLogRepeat(t *testing.T) {
	for _, b := range [][2]int{{0, 37}, {5, 64}, {13, 13}, {3, -1}, {0, 1}, {1, 2}, {0, 0}, {64, 65}} {
		c := &compiler{rules: map[string]string{}, g: &grammar.Grammar{Start: "root"}}
		c.g.Rules = append(c.g.Rules, grammar.Rule{Name: "root"})
		c.g.Rules[0].Body = c.logRepeat(lit("a"), "_a", b[0], b[1])
		p, err := grammar.Compile(c.g)
		require.NoError(t, err)
		for n := range 71 {
			want := n >= b[0] && (b[1] < 0 || n <= b[1])
			assert.Equal(t, want, acceptsText(p, strings.Repeat("a", n)), "{%d,%d} on %d", b[0], b[1], n)
		}
	}
	// A long bound stays small: the first longRepeat characters unrolled,
	// then the doubling rules.
	g, err := Compile([]byte(`{"type": "string", "maxLength": 1000000}`), Options{})
	require.NoError(t, err)
	p, err := grammar.Compile(g)
	require.NoError(t, err)
	assert.Less(t, len(p.Inst), 100000) // 10000 characters unrolled, then doubling rules
	assert.True(t, acceptsText(p, `"`+strings.Repeat("x", 3000)+`"`))
}

// TestEnumFilteredByType checks enum values filtered by a sibling type
// without a validator, and the number case left to it.
func TestEnumFilteredByType(t *testing.T) {
	runKeywordCases(t, []keywordCase{
		{
			name:    "string type",
			schema:  `{"type": "string", "enum": ["a", 1, null, ["a"]]}`,
			valid:   []string{`"a"`},
			invalid: []string{`1`, `null`, `["a"]`},
		},
		{
			name:    "integer or null",
			schema:  `{"type": ["integer", "null"], "enum": [1, 2.5, null, "x", {}]}`,
			valid:   []string{`1`, `null`},
			invalid: []string{`2.5`, `"x"`, `{}`},
		},
		{
			name:    "an integer written with a fraction, left to the validator",
			schema:  `{"type": "integer", "enum": [1.0, 2.5, 3]}`,
			valid:   []string{`1.0`, `3`},
			invalid: []string{`2.5`},
		},
	})
}

// TestEscapeRune checks the canonical escapes of a string's characters:
// Python's json.dumps, which MaskBench's instances are written with, and
// RFC 8259's short forms where there are ones.
func TestEscapeRune(t *testing.T) {
	short := map[rune]string{'"': `\"`, '\\': `\\`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}
	for r := rune(0); r < 0x80; r++ {
		want, ok := short[r]
		switch {
		case ok:
		case r < 0x20:
			want = fmt.Sprintf(`\u%04x`, r)
		default:
			want = string(r)
		}
		assert.Equal(t, want, escapeRune(r), "U+%04X", r)
	}
	assert.Equal(t, "é", escapeRune('é'))
}

// TestBoundedMinPropertiesNotEmpty: under Options.Bounded an object's
// keys may be cut to BoundedLength, so minProperties above the keys left
// is refused as not supported, not called empty (in an anyOf branch,
// dropped without a word).
func TestBoundedMinPropertiesNotEmpty(t *testing.T) {
	_, err := Compile([]byte(`{"type": "object", "propertyNames": {"minLength": 40}, "minProperties": 2}`), Options{Bounded: true})
	require.Error(t, err)
	assert.False(t, isEmpty(err), "%v", err)
}

// TestValidatorBytes: Validator.Bytes is within a small factor of what
// the validator keeps on the heap, for a schema of many keywords and
// for one of long patterns (which Go's regexp compiles large).
func TestValidatorBytes(t *testing.T) {
	var props []string
	for i := range 300 {
		props = append(props, fmt.Sprintf(`"p%d": {"type": "integer", "minimum": %d, "description": "property number %d"}`, i, i, i))
	}
	for _, schema := range []string{
		`{"type": "object", "properties": {` + strings.Join(props, ", ") + `}}`,
		`{"type": "string", "pattern": "^(?:` + strings.Repeat(`[a-z]{1000}`, 10) + `)$"}`,
		`{"type": "object", "patternProperties": {"^` + strings.Repeat(`\\pL{200}`, 10) + `$": {}}}`,
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		v, err := NewValidator([]byte(schema), Options{})
		require.NoError(t, err)
		runtime.GC()
		runtime.ReadMemStats(&after)
		held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		got := v.Bytes()
		assert.True(t, got >= held/2 && got <= 4*held, "%.40s…: Bytes %d, the heap holds %d", schema, got, held)
		runtime.KeepAlive(v)
	}
}
