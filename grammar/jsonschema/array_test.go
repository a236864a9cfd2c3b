package jsonschema

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUniqueAndContains checks uniqueItems over finitely many values and
// contains with its bounds.
func TestUniqueAndContains(t *testing.T) {
	runKeywordCases(t, []keywordCase{
		{
			name:    "uniqueItems over an enum",
			schema:  `{"type": "array", "items": {"enum": ["a", "b", 1]}, "uniqueItems": true}`,
			valid:   []string{`[]`, `["a"]`, `["b", "a", 1]`, `[1.0, "a"]`},
			invalid: []string{`["a", "a"]`, `[1, "b", 1]`, `["c"]`, `[1, 1.0]`},
		},
		{
			name:    "uniqueItems over booleans, with minItems",
			schema:  `{"type": "array", "items": {"type": "boolean"}, "uniqueItems": true, "minItems": 2}`,
			valid:   []string{`[true, false]`, `[false, true]`},
			invalid: []string{`[true]`, `[true, true]`, `[true, false, true]`},
		},
		{
			name:    "uniqueItems with at most one item",
			schema:  `{"type": "array", "items": {"type": "string"}, "uniqueItems": true, "maxItems": 1}`,
			valid:   []string{`[]`, `["x"]`},
			invalid: []string{`["x", "y"]`, `[1]`},
		},
		{
			name:    "contains",
			schema:  `{"type": "array", "contains": {"type": "integer", "minimum": 5}}`,
			valid:   []string{`[5]`, `[1, "a", 7]`, `[9, 9]`},
			invalid: []string{`[]`, `[1, 2]`, `["a"]`},
		},
		{
			name:    "minContains and maxContains, with maxItems",
			schema:  `{"type": "array", "items": {"type": "integer"}, "contains": {"const": 1}, "minContains": 2, "maxContains": 3, "maxItems": 5}`,
			valid:   []string{`[1, 1]`, `[1, 2, 1, 1]`, `[2, 1, 3, 1, 4]`},
			invalid: []string{`[1]`, `[1, 1, 1, 1]`, `[1, 1, 2, 3, 4, 5]`, `[1, "1", 1]`},
		},
		{
			name:    "minContains 0",
			schema:  `{"type": "array", "contains": {"type": "string"}, "minContains": 0, "maxContains": 1}`,
			valid:   []string{`[]`, `[1]`, `["a", 2]`},
			invalid: []string{`["a", "b"]`},
		},
	})
}

// TestUniqueRefusals checks that uniqueItems over items of many values
// is refused.
func TestUniqueRefusals(t *testing.T) {
	for _, schema := range []string{
		`{"type": "array", "items": {"type": "string"}, "uniqueItems": true}`,
		`{"type": "array", "uniqueItems": true}`,
		`{"type": "array", "items": {"enum": [1, 2, 3, 4, 5, 6, 7, 8, 9]}, "uniqueItems": true}`,
	} {
		_, err := Compile([]byte(schema), Options{})
		var e *Error
		require.ErrorAs(t, err, &e, schema)
		assert.Equal(t, "uniqueItems", e.Keyword, schema)
	}
}

// TestPropertyCounts checks minProperties and maxProperties, counted as
// the members are written.
func TestPropertyCounts(t *testing.T) {
	runKeywordCases(t, []keywordCase{
		{
			name:    "maxProperties with additional properties",
			schema:  `{"type": "object", "properties": {"a": {"type": "integer"}}, "maxProperties": 2}`,
			valid:   []string{`{}`, `{"a": 1, "b": 2}`, `{"x": 1}`},
			invalid: []string{`{"a": 1, "b": 2, "c": 3}`, `{"x": 1, "y": 2, "z": 3}`, `{"a": "s"}`},
		},
		{
			name:    "minProperties over listed properties",
			schema:  `{"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "additionalProperties": false, "minProperties": 2}`,
			valid:   []string{`{"a": 1, "b": 2}`, `{"c": 1, "a": 2, "b": 3}`},
			invalid: []string{`{}`, `{"a": 1}`, `{"d": 1, "e": 2}`},
		},
		{
			name:    "maxProperties 0",
			schema:  `{"type": "object", "maxProperties": 0}`,
			valid:   []string{`{}`},
			invalid: []string{`{"a": 1}`},
		},
	})
}

// TestDependentSchemasAndPropertyNames checks dependentSchemas (the
// property absent, or present and the schema holding) and propertyNames
// (listed names checked, additional keys by automaton).
func TestDependentSchemasAndPropertyNames(t *testing.T) {
	runKeywordCases(t, []keywordCase{
		{
			name:    "dependentSchemas",
			schema:  `{"type": "object", "properties": {"card": {"type": "string"}, "address": {}}, "dependentSchemas": {"card": {"required": ["address"], "properties": {"address": {"type": "string"}}}}}`,
			valid:   []string{`{}`, `{"address": 1}`, `{"card": "x", "address": "y"}`},
			invalid: []string{`{"card": "x"}`, `{"card": "x", "address": 1}`},
		},
		{
			name:    "draft 7 schema dependencies",
			schema:  `{"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"a": {"properties": {"b": {"type": "integer"}}}}}`,
			valid:   []string{`{"b": "s"}`, `{"a": 1, "b": 2}`, `"x"`},
			invalid: []string{`{"a": 1, "b": "s"}`},
		},
		{
			name:    "propertyNames by pattern and length",
			schema:  `{"type": "object", "properties": {"ab": {"type": "integer"}, "Zz": {}}, "propertyNames": {"pattern": "^[a-z]+$", "maxLength": 3}}`,
			valid:   []string{`{}`, `{"ab": 1, "xyz": true}`},
			invalid: []string{`{"Zz": 1}`, `{"abcd": 1}`, `{"A": 1}`, `{"ab": "s"}`, `{"": 1}`},
		},
		{
			name:    "propertyNames as an enum",
			schema:  `{"type": "object", "propertyNames": {"enum": ["a", "b"]}, "additionalProperties": {"type": "integer"}}`,
			valid:   []string{`{}`, `{"a": 1, "b": 2}`},
			invalid: []string{`{"c": 1}`, `{"a": "x"}`},
		},
		{
			name:    "propertyNames false",
			schema:  `{"type": "object", "propertyNames": false}`,
			valid:   []string{`{}`},
			invalid: []string{`{"a": 1}`},
		},
	})
}
