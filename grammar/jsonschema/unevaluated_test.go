package jsonschema

import "testing"

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
