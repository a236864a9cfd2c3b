package jsonschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/reins-go/reins/grammar"
)

// constructTemplates are schemas of the constructions the typed form
// added (negation, exact oneOf, key automata, uniqueItems, contains,
// property counts, multipleOf), with holes %[1]s (a pattern), %[2]d and
// %[3]d (small numbers) and %[4]s (a string) that the fuzzer fills.
var constructTemplates = []string{
	`{"type": "array", "items": {"enum": ["a", "b", %[2]d, null, true]}, "uniqueItems": true, "minItems": %[3]d}`,
	`{"type": "array", "items": {"type": ["boolean", "null"]}, "uniqueItems": true}`,
	`{"type": "array", "contains": {"type": "integer", "minimum": %[2]d}, "minContains": %[3]d, "maxContains": 3}`,
	`{"type": "array", "items": {"type": "string", "maxLength": 2}, "contains": {"pattern": %[1]q}}`,
	`{"type": "object", "patternProperties": {%[1]q: {"type": "integer"}}, "additionalProperties": {"type": "string"}, "properties": {%[4]q: {"const": %[2]d}}}`,
	`{"type": "object", "propertyNames": {"pattern": %[1]q, "maxLength": %[3]d}, "properties": {%[4]q: {}}}`,
	`{"type": "object", "properties": {"a": {}, "b": {}, %[4]q: {}}, "maxProperties": %[3]d, "minProperties": %[2]d}`,
	`{"not": {"anyOf": [{"type": "string", "pattern": %[1]q}, {"type": "integer", "minimum": %[2]d}]}}`,
	`{"oneOf": [{"type": "string", "pattern": %[1]q}, {"type": "string", "maxLength": %[3]d}, {"const": %[4]q}]}`,
	`{"oneOf": [{"type": "integer", "minimum": %[2]d}, {"type": "integer", "maximum": %[3]d}, {"multipleOf": 2}]}`,
	`{"type": "object", "if": {"properties": {"k": {"const": %[4]q}}, "required": ["k"]}, "then": {"required": ["x"]}, "else": {"properties": {"x": {"type": "string", "pattern": %[1]q}}}}`,
	`{"type": "number", "multipleOf": 0.%[2]d, "minimum": %[3]d}`,
	`{"type": "object", "dependentSchemas": {%[4]q: {"required": ["z"], "properties": {"z": {"maximum": %[2]d}}}}}`,
	`{"allOf": [{"properties": {"a": {"type": "integer"}}}, {"patternProperties": {%[1]q: {"minimum": %[2]d}}}], "unevaluatedProperties": false}`,
	`{"type": "string", "pattern": %[1]q, "minLength": %[2]d, "maxLength": %[3]d, "not": {"const": %[4]q}}`,
	`{"type": "object", "anyOf": [{"properties": {"a": {"minimum": %[2]d}}}, {"patternProperties": {%[1]q: {"type": "string"}}, "required": ["b"]}, {"properties": {%[4]q: {"maximum": %[3]d}}}], "unevaluatedProperties": {"type": "boolean"}}`,
}

// FuzzConstructs fills the templates with fuzzed patterns, numbers and
// strings and checks that every instance the grammar accepts (the
// fuzzed one and a few fixed ones) is valid: the constructions are exact
// or narrower, never wider.
func FuzzConstructs(f *testing.F) {
	for i := range constructTemplates {
		f.Add(uint8(i), "^a", uint8(1), uint8(2), "a", `{"a": 1, "b": "x"}`)
		f.Add(uint8(i), "[0-9]+", uint8(0), uint8(3), "k", `["a", 2, true]`)
	}
	f.Fuzz(func(t *testing.T, which uint8, pat string, x, y uint8, s, instance string) {
		tmpl := constructTemplates[int(which)%len(constructTemplates)]
		if strings.ContainsAny(pat, "\x00") || len(pat) > 40 || len(s) > 20 {
			return
		}
		schema := fmt.Sprintf(tmpl, pat, x%12, y%6, s)
		if !json.Valid([]byte(schema)) {
			return
		}
		g, err := Compile([]byte(schema), Options{})
		if err != nil {
			return
		}
		p, err := grammar.Compile(g)
		if err != nil {
			return
		}
		texts := []string{instance, `[]`, `{}`, `["a", "a"]`, `["a", "b", 1]`, `[true, null]`, `[1, 2, 3, 4]`, `{"a": 1}`,
			`{"a": 1, "b": 2, "c": 3}`, `"a"`, `""`, `"ab"`, `1`, `3`, `0.5`, `{"k": "a", "x": 1}`, `{"k": "k"}`, `{"x": "a"}`,
			`{"z": 1}`, `{"a": 1, "z": 0}`}
		for _, text := range texts {
			if acceptsText(p, text) {
				if err := Validate([]byte(schema), []byte(text)); err != nil {
					t.Fatalf("schema %s: the grammar accepts %s, which is invalid: %v", schema, text, err)
				}
			}
		}
	})
}

// uniquePool are the values FuzzUniqueItems draws enums and items from.
var uniquePool = []string{`"a"`, `"b"`, `1`, `2.5`, `true`, `false`, `null`, `{"x": 1}`, `[1]`, `"a\"b"`}

// FuzzUniqueItems checks uniqueItems over an enum against the validator
// both ways: the construction is exact, so the grammar accepts an array
// exactly when it is valid.
func FuzzUniqueItems(f *testing.F) {
	f.Add(uint16(0b111), []byte{0, 1, 2}, uint8(0), uint8(5))
	f.Add(uint16(0b1010101), []byte{0, 2, 0}, uint8(1), uint8(2))
	f.Add(uint16(0b11), []byte{1, 0}, uint8(2), uint8(9))
	f.Fuzz(func(t *testing.T, enumBits uint16, picks []byte, minItems, maxItems uint8) {
		var enum []string
		for i, v := range uniquePool {
			if enumBits&(1<<i) != 0 {
				enum = append(enum, v)
			}
		}
		if len(enum) == 0 || len(enum) > maxUniqueValues || len(picks) > 10 {
			return
		}
		schema := fmt.Sprintf(`{"type": "array", "items": {"enum": [%s]}, "uniqueItems": true, "minItems": %d, "maxItems": %d}`,
			strings.Join(enum, ", "), minItems%4, maxItems%9)
		g, err := Compile([]byte(schema), Options{})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !e.Empty {
				t.Fatalf("schema %s: %v", schema, err)
			}
			return
		}
		p, err := grammar.Compile(g)
		if err != nil {
			t.Fatal(err)
		}
		items := make([]string, len(picks))
		for i, b := range picks {
			items[i] = uniquePool[int(b)%len(uniquePool)]
		}
		text := "[" + strings.Join(items, ", ") + "]"
		valid := Validate([]byte(schema), []byte(text)) == nil
		if got := acceptsText(p, text); got != valid {
			t.Fatalf("schema %s on %s: grammar %v, validator %v", schema, text, got, valid)
		}
	})
}
