package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/reins-go/reins/grammar"
)

// FuzzCompile feeds arbitrary schemas to Compile: it must not panic,
// its errors are *Error with a pointer, and where it compiles, what the
// grammar accepts of a few instances must validate (no invalidation).
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`{}`, `true`, `{"type": "string", "pattern": "^(a|b$)x"}`,
		`{"type": "object", "properties": {"a": {"type": "integer", "minimum": -3}}, "required": ["a"]}`,
		`{"oneOf": [{"required": ["a"]}, {"required": ["b"]}], "properties": {"a": {}, "b": {}}}`,
		`{"type": "number", "exclusiveMinimum": 0.25, "maximum": 10}`,
		`{"type": "array", "items": {"enum": [1, "x", null]}, "maxItems": 2}`,
		`{"type": "string", "format": "date-time"}`,
		`{"patternProperties": {"^x": {"type": "boolean"}}, "additionalProperties": false}`,
		`{"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}`,
		`{"$id": "http://x/a", "items": {"$id": "b", "$defs": {"c": {"type": "integer"}}, "items": {"$ref": "#/$defs/c"}}}`,
		`{"$defs": {"a": {"$anchor": "p", "type": "string"}}, "properties": {"a": {"$ref": "#p"}}}`,
		`{"oneOf": [{"properties": {"t": {"const": "a"}}, "required": ["t"]}, {"properties": {"t": {"const": "b"}}, "required": ["t"]}]}`,
		`{"$schema": "http://json-schema.org/draft-04/schema#", "allOf": [{"minimum": 5}, {"minimum": 3, "exclusiveMinimum": true}]}`,
		`{"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}, {"type": "string"}]}}, "allOf": [{"$ref": "#/$defs/a"}, {"minLength": 1}]}`,
	} {
		f.Add(s, `{"a": 1, "b": [true, "x"], "x1": false}`)
	}
	f.Fuzz(func(t *testing.T, schema, instance string) {
		texts := []string{instance, `null`, `1`, `"x"`, `{}`, `[]`}
		if ind, ok := indentFuzz(instance); ok {
			texts = append(texts, ind)
		}
		for _, opts := range []Options{{}, {Indent: " "}} {
			g, err := Compile([]byte(schema), opts)
			if err != nil {
				// Every error says where: an *Error, never a panic
				// recovered as an internal error.
				var e *Error
				if !errors.As(err, &e) || e.Pointer == "" {
					t.Fatalf("schema %s: %v is not an *Error with a pointer", schema, err)
				}
				if strings.Contains(e.Msg, "internal error") {
					t.Fatalf("schema %s: %v", schema, err)
				}
				return
			}
			p, err := grammar.Compile(g)
			if err != nil {
				return
			}
			for _, text := range texts {
				if acceptsText(p, text) {
					if err := Validate([]byte(schema), []byte(text)); err != nil {
						t.Fatalf("schema %s (%+v): the grammar accepts %s, which is invalid: %v", schema, opts, text, err)
					}
				}
			}
		}
	})
}

// indentFuzz lays a fuzzed instance out for Options{Indent: " "}.
func indentFuzz(instance string) (string, bool) {
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(instance), "", " "); err != nil {
		return "", false
	}
	return b.String(), true
}
