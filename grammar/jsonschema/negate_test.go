package jsonschema

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNegation checks not and if/then/else, compiled through negation:
// each keyword's negation, intersected with the rest.
func TestNegation(t *testing.T) {
	runKeywordCases(t, []keywordCase{
		{
			name:    "not a type",
			schema:  `{"not": {"type": ["string", "null"]}}`,
			valid:   []string{`1`, `[]`, `{}`, `true`},
			invalid: []string{`"a"`, `null`},
		},
		{
			name:    "not required: the property is absent",
			schema:  `{"type": "object", "properties": {"a": {}, "b": {}}, "not": {"required": ["a", "b"]}}`,
			valid:   []string{`{}`, `{"a": 1}`, `{"b": 1, "c": 2}`},
			invalid: []string{`{"a": 1, "b": 2}`, `{"b": 1, "a": 2}`},
		},
		{
			name:    "not an enum of strings beside a pattern",
			schema:  `{"type": "string", "pattern": "^[a-z]+$", "not": {"enum": ["test", "include"]}}`,
			valid:   []string{`"tes"`, `"tests"`, `"includes"`, `"x"`},
			invalid: []string{`"test"`, `"include"`, `"A"`},
		},
		{
			name:    "not an enum of integers in a range",
			schema:  `{"type": "integer", "minimum": 1, "maximum": 65535, "not": {"enum": [6379, 6380, 1]}}`,
			valid:   []string{`2`, `6378`, `6381`, `65535`},
			invalid: []string{`1`, `6379`, `6380`, `0`, `65536`},
		},
		{
			name:    "not a const number",
			schema:  `{"type": "number", "not": {"const": 2.5}}`,
			valid:   []string{`2`, `2.51`, `-2.5`, `3`},
			invalid: []string{`2.5`, `2.50`, `"x"`},
		},
		{
			name:    "not a pattern",
			schema:  `{"type": "string", "not": {"pattern": "^([a-z][0-9])+$"}}`,
			valid:   []string{`""`, `"a"`, `"a1b"`, `"1a"`},
			invalid: []string{`"a1"`, `"a1b2"`},
		},
		{
			name:    "not a property's value",
			schema:  `{"type": "object", "not": {"properties": {"k": {"const": "x"}}}}`,
			valid:   []string{`{"k": "y"}`, `{"k": 1}`},
			invalid: []string{`{}`, `{"k": "x"}`, `{"j": 1}`},
		},
		{
			name:    "not an integer: numbers with a fraction",
			schema:  `{"type": "number", "not": {"type": "integer"}}`,
			valid:   []string{`1.5`, `-0.25`, `10.010`},
			invalid: []string{`1`, `1.0`, `-3`, `0.00`},
		},
		{
			name:    "not of not",
			schema:  `{"not": {"not": {"type": "integer", "minimum": 3}}}`,
			valid:   []string{`3`, `4`},
			invalid: []string{`2`, `"a"`, `3.5`},
		},
		{
			name:    "not anyOf: none of them",
			schema:  `{"type": "string", "not": {"anyOf": [{"minLength": 3}, {"const": "a"}]}}`,
			valid:   []string{`""`, `"b"`, `"ab"`},
			invalid: []string{`"a"`, `"abc"`},
		},
		{
			name:    "if, then and else",
			schema:  `{"type": "object", "properties": {"kind": {"enum": ["a", "b"]}, "x": {}}, "required": ["kind"], "if": {"properties": {"kind": {"const": "a"}}}, "then": {"required": ["x"]}, "else": {"properties": {"x": {"type": "string"}}}}`,
			valid:   []string{`{"kind": "a", "x": 1}`, `{"kind": "b"}`, `{"kind": "b", "x": "s"}`},
			invalid: []string{`{"kind": "a"}`, `{"kind": "b", "x": 1}`, `{"x": 1}`},
		},
		{
			name:    "if without else",
			schema:  `{"if": {"type": "string"}, "then": {"minLength": 2}}`,
			valid:   []string{`"ab"`, `1`, `null`},
			invalid: []string{`"a"`, `""`},
		},
		{
			name:    "not of items: some item fails",
			schema:  `{"type": "array", "maxItems": 2, "not": {"prefixItems": [{"type": "integer"}]}}`,
			valid:   []string{`["a"]`, `[null, 1]`},
			invalid: []string{`[]`, `[1]`, `[1, "a"]`},
		},
	})
}

// TestNegationRefusals checks the keywords whose negation reins does
// not write: refused, naming them.
func TestNegationRefusals(t *testing.T) {
	for _, tc := range []struct {
		schema, pointer, keyword string
	}{
		{`{"not": {"multipleOf": 3}}`, "#/not", "multipleOf"},
		{`{"not": {"uniqueItems": true}}`, "#/not", "uniqueItems"},
		{`{"not": {"additionalProperties": false}}`, "#/not", "additionalProperties"},
		{`{"type": "string", "not": {"format": "email"}}`, "#", "format"},
		{`{"$defs": {"a": {"properties": {"x": {"$ref": "#/$defs/a"}}, "required": ["y"]}}, "not": {"$ref": "#/$defs/a"}}`, "#/$defs/a", "$ref"},
	} {
		_, err := Compile([]byte(tc.schema), Options{})
		var e *Error
		require.ErrorAs(t, err, &e, tc.schema)
		assert.Equal(t, tc.pointer, e.Pointer, tc.schema)
		assert.Equal(t, tc.keyword, e.Keyword, tc.schema)
	}
}
