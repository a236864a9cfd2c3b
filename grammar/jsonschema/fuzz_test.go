package jsonschema

import (
	"testing"

	"github.com/reins-go/reins/grammar"
)

// FuzzCompile feeds arbitrary schemas to Compile: it must not panic,
// and where it compiles, what the grammar accepts of a few instances
// must validate (no invalidation).
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
	} {
		f.Add(s, `{"a": 1, "b": [true, "x"], "x1": false}`)
	}
	f.Fuzz(func(t *testing.T, schema, instance string) {
		g, err := Compile([]byte(schema), Options{})
		if err != nil {
			return
		}
		p, err := grammar.Compile(g)
		if err != nil {
			return
		}
		for _, text := range []string{instance, `null`, `1`, `"x"`, `{}`, `[]`} {
			if acceptsText(p, text) {
				if err := Validate([]byte(schema), []byte(text)); err != nil {
					t.Fatalf("schema %s: the grammar accepts %s, which is invalid: %v", schema, text, err)
				}
			}
		}
	})
}
