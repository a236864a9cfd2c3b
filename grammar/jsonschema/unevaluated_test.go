package jsonschema

import (
	"fmt"
	"strings"
	"testing"

	"github.com/reins-go/reins/grammar"
	"github.com/stretchr/testify/require"
)

// TestUnevaluated checks unevaluatedProperties and unevaluatedItems as
// the object and array schemas they amount to once the schemas applied
// in place are known.
func TestUnevaluated(t *testing.T) {
	runKeywordCases(t, []keywordCase{
		{
			name:    "unevaluatedProperties beside allOf",
			schema:  `{"allOf": [{"properties": {"a": {"type": "integer"}}}], "properties": {"b": {}}, "unevaluatedProperties": false}`,
			valid:   []string{`{}`, `{"a": 1, "b": "x"}`},
			invalid: []string{`{"c": 1}`, `{"a": "1"}`},
		},
		{
			name:    "unevaluatedProperties and the oneOf branch taken",
			schema:  `{"type": "object", "oneOf": [{"properties": {"a": {"const": 1}}, "required": ["a"]}, {"properties": {"b": {"const": 2}}, "required": ["b"]}], "unevaluatedProperties": {"type": "string"}}`,
			valid:   []string{`{"a": 1}`, `{"b": 2, "c": "x"}`, `{"a": 1, "b": "y"}`},
			invalid: []string{`{"a": 1, "c": 3}`, `{"a": 1, "b": 2}`, `{}`},
		},
		{
			name:    "unevaluatedProperties and anyOf branches that both hold",
			schema:  `{"type": "object", "anyOf": [{"properties": {"a": {}}, "required": ["a"]}, {"properties": {"b": {}}, "required": ["b"]}], "unevaluatedProperties": false}`,
			valid:   []string{`{"a": 1}`, `{"b": 1}`, `{"a": 1, "b": 2}`},
			invalid: []string{`{"a": 1, "c": 2}`, `{}`},
		},
		{
			// Refused at maxLowered (0.6 s) when each set of branches was
			// taken without the values of the others.
			name:    "unevaluatedProperties and three anyOf branches of 40 properties",
			schema:  wideAnyOf(3, 40),
			valid:   []string{`{}`, `{"p0_39": "x"}`, `{"p0_1": "x", "p1_2": "y", "p2_3": "z"}`},
			invalid: []string{`{"p0_1": 1}`, `{"p0_1": "x", "q": "y"}`, `{"p3_0": "x"}`},
		},
		{
			// minProperties counts listed keys: the sets are negated, which
			// lists the other branch's b (without negations, b was not
			// listed in the set of the first branch alone, and refused).
			name:    "unevaluatedProperties over an anyOf branch with minProperties",
			schema:  `{"anyOf": [{"minProperties": 2, "properties": {"a": {}, "k": true}}, {"properties": {"b": {"type": "string"}}}], "unevaluatedProperties": {}}`,
			valid:   []string{`{"b": 1, "k": 1}`, `{"a": 1, "k": 1}`, `{"b": "x"}`},
			invalid: []string{`{"b": 1}`},
		},
		{
			// dependentRequired names b, which a set of the first branch
			// alone does not list: the sets are negated (they list it).
			name:    "unevaluatedProperties over an anyOf branch with dependentRequired",
			schema:  `{"anyOf": [{"properties": {"a": {}}, "dependentRequired": {"a": ["b"]}}, {"properties": {"b": {"type": "string"}}}], "unevaluatedProperties": false}`,
			valid:   []string{`{"a": 1, "b": "x"}`, `{"b": "x"}`, `{}`},
			invalid: []string{`{"a": 1}`, `{"a": 1, "b": 1}`},
		},
		{
			name:    "unevaluatedProperties over anyOf branches beside dependentRequired",
			schema:  `{"anyOf": [{"properties": {"a": {}}}, {"properties": {"b": {"type": "string"}}}], "dependentRequired": {"a": ["b"]}, "unevaluatedProperties": false}`,
			valid:   []string{`{"a": 1, "b": "x"}`, `{"b": "x"}`},
			invalid: []string{`{"a": 1}`, `{"a": 1, "b": 1}`},
		},
		{
			// The oneOf of required lists names b, which a set of the first
			// branch alone does not list: the sets are negated.
			name:    "unevaluatedProperties over anyOf branches beside a oneOf of required lists",
			schema:  `{"type": "object", "anyOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}], "oneOf": [{"required": ["a"]}, {"required": ["b"]}], "unevaluatedProperties": false}`,
			valid:   []string{`{"a": 1}`, `{"b": 1}`},
			invalid: []string{`{"a": 1, "b": 1}`, `{}`, `{"a": 1, "c": 1}`},
		},
		{
			// dependentSchemas never apply to arrays: x's items is reached
			// by the $ref only, from outside allOf/0.
			name:    "unevaluatedItems and a dependentSchema reached by $ref",
			schema:  `{"allOf": [{"dependentSchemas": {"x": {"items": true}}, "unevaluatedItems": false}, {"$ref": "#/allOf/0/dependentSchemas/x"}]}`,
			valid:   []string{`[]`, `{"x": 1}`},
			invalid: []string{`[1]`},
		},
		{
			// The sets of branches hold at most the two properties listed,
			// so a third key is never there (was refused as unsupported,
			// failing the whole anyOf).
			name:    "unevaluatedProperties, anyOf branches and minProperties above the keys listed",
			schema:  `{"type": "object", "anyOf": [{"properties": {"a": {"type": "string"}}}, {"properties": {"b": {"type": "string"}}}], "minProperties": 2, "unevaluatedProperties": false}`,
			valid:   []string{`{"a": "x", "b": "y"}`},
			invalid: []string{`{"a": "x"}`, `{"a": "x", "c": "y"}`, `{"a": 1, "b": "y"}`},
		},
		{
			// The prefixItems branch cannot be negated (contains beside
			// prefixItems), so each branch is taken alone (narrower).
			name:    "unevaluatedItems over a not branch and a prefixItems branch",
			schema:  `{"anyOf": [{"not": {"items": {"type": "integer"}}}, {"prefixItems": [{"type": "string"}], "items": {"type": "string"}}], "unevaluatedItems": false}`,
			valid:   []string{`["a", "b"]`, `"x"`},
			invalid: []string{`[1]`, `["a", 2]`},
		},
		{
			// then is also reached by the $ref, but applies from allOf/0
			// only when its if holds: a stays unevaluated there.
			name:    "unevaluatedProperties and a then reached by $ref",
			schema:  `{"allOf": [{"if": {"required": ["k"]}, "then": {"properties": {"a": {}}}, "unevaluatedProperties": false}, {"$ref": "#/allOf/0/then"}]}`,
			valid:   []string{`{}`},
			invalid: []string{`{"a": 1}`, `{"k": 1, "a": 1}`},
		},
		{
			name:    "unevaluatedProperties and if/then/else",
			schema:  `{"if": {"properties": {"k": {"const": "x"}}, "required": ["k"]}, "then": {"properties": {"x": {}}}, "else": {"properties": {"y": {}}}, "unevaluatedProperties": false}`,
			valid:   []string{`{"k": "x", "x": 1}`, `{"y": 1}`},
			invalid: []string{`{"k": "x", "y": 1}`, `{"k": "z"}`, `{"x": 1}`},
		},
		{
			name:    "unevaluatedItems after a prefix from allOf",
			schema:  `{"allOf": [{"prefixItems": [{"type": "integer"}]}], "unevaluatedItems": {"type": "string"}}`,
			valid:   []string{`[]`, `[1]`, `[1, "a", "b"]`},
			invalid: []string{`["a"]`, `[1, 2]`},
		},
		{
			name:    "unevaluatedItems where items evaluates all",
			schema:  `{"items": {"type": "integer"}, "unevaluatedItems": false}`,
			valid:   []string{`[]`, `[1, 2]`},
			invalid: []string{`["a"]`},
		},
	})
}

// TestUnevaluatedAnyOfExact compares, for anyOf branches under
// unevaluatedProperties, the grammar with the validator on every object
// of up to four keys of three values each: what the branches that hold
// evaluate decides, so it is exact both ways.
func TestUnevaluatedAnyOfExact(t *testing.T) {
	schemas := []string{
		`{"type": "object", "anyOf": [{"properties": {"a": {"type": "integer"}}}, {"properties": {"b": {"type": "string"}}}], "unevaluatedProperties": false}`,
		`{"type": "object", "anyOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]}, {"properties": {"b": {}, "c": {"type": "boolean"}}}, {"properties": {"c": {"type": "string"}}}], "unevaluatedProperties": {"type": "integer"}}`,
		`{"type": "object", "properties": {"x": {}}, "anyOf": [{"properties": {"a": {"const": 1}}}, {"patternProperties": {"^[bc]$": {"type": "string"}}}, {"required": ["c"]}], "unevaluatedProperties": false}`,
	}
	keys, values := []string{"a", "b", "c", "x"}, []string{`1`, `"s"`, `true`}
	var objects []string
	var build func(i int, members []string)
	build = func(i int, members []string) {
		if i == len(keys) {
			objects = append(objects, "{"+strings.Join(members, ", ")+"}")
			return
		}
		build(i+1, members)
		for _, v := range values {
			build(i+1, append(members, fmt.Sprintf("%q: %s", keys[i], v)))
		}
	}
	build(0, nil)
	require.Len(t, objects, 256)
	for _, schema := range schemas {
		g, err := Compile([]byte(schema), Options{})
		require.NoError(t, err, schema)
		p, err := grammar.Compile(g)
		require.NoError(t, err, schema)
		valid := 0
		for _, o := range objects {
			want := Validate([]byte(schema), []byte(o)) == nil
			if want {
				valid++
			}
			require.Equal(t, want, acceptsText(p, o), "schema %s, instance %s", schema, o)
		}
		require.Greater(t, valid, 1, schema)
	}
}

// TestLiteralSpellings checks that enum and const values are taken as
// JSON writes the same value otherwise: numbers with trailing zeros,
// small objects' members in any order; and integers written with a zero
// fraction, from draft 6 on.
func TestLiteralSpellings(t *testing.T) {
	runKeywordCases(t, []keywordCase{
		{
			name:    "numbers in enum",
			schema:  `{"enum": [1, -2.5, 0, [0]]}`,
			valid:   []string{`1`, `1.0`, `-2.50`, `0.0`, `0`, `[0.00]`},
			invalid: []string{`2`, `-2.51`, `[1]`},
		},
		{
			name:    "an object const in any order",
			schema:  `{"const": {"a": 1, "b": [true], "c": null}}`,
			valid:   []string{`{"a": 1, "b": [true], "c": null}`, `{"c": null, "b": [true], "a": 1.0}`},
			invalid: []string{`{"a": 1, "b": [true]}`, `{"a": 1, "b": [true], "c": null, "d": 1}`},
		},
		{
			name:    "integers with a zero fraction",
			schema:  `{"type": "integer", "minimum": 1}`,
			valid:   []string{`1`, `1.0`, `20.00`},
			invalid: []string{`1.5`, `0.0`, `0`},
		},
	})
}

// wideAnyOf is an object schema, unevaluatedProperties false, of an
// anyOf of branches wideBranch(b, props).
func wideAnyOf(branches, props int) string {
	var bs []string
	for b := range branches {
		bs = append(bs, wideBranch(b, props))
	}
	return `{"type": "object", "anyOf": [` + strings.Join(bs, ", ") + `], "unevaluatedProperties": false}`
}

// wideBranch is a schema of props string properties named "p<b>_<i>".
func wideBranch(b, props int) string {
	var ps []string
	for i := range props {
		ps = append(ps, fmt.Sprintf(`"p%d_%d": {"type": "string"}`, b, i))
	}
	return `{"properties": {` + strings.Join(ps, ", ") + `}}`
}
