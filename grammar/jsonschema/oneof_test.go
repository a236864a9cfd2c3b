package jsonschema

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOneOfExclusiveByType checks oneOfs whose branches exclude each
// other only for one type of values (a tag, a required property the
// other forbids) and do not say "type": "object". A value of any other
// type satisfies both branches, so no such value is valid: the grammar
// takes objects only. Where one branch is typed, the other type's values
// satisfy one branch and stay valid.
func TestOneOfExclusiveByType(t *testing.T) {
	nonObjects := []string{`5`, `1.5`, `"str"`, `null`, `true`, `[]`, `[{"t": "a"}]`}
	runKeywordCases(t, []keywordCase{
		{
			name:    "a tag by const, no type",
			schema:  `{"oneOf": [{"properties": {"t": {"const": "a"}}, "required": ["t"]}, {"properties": {"t": {"const": "b"}, "x": {"type": "integer"}}, "required": ["t"]}]}`,
			valid:   []string{`{"t": "a"}`, `{"t": "b", "x": 1}`, `{"t": "a", "x": "s"}`},
			invalid: append([]string{`{"t": "c"}`, `{}`, `{"t": "b", "x": "s"}`}, nonObjects...),
		},
		{
			name:    "a tag by enum, branches by $ref, no type",
			schema:  `{"$defs": {"a": {"properties": {"kind": {"enum": ["a", "b"]}}, "required": ["kind"]}, "c": {"properties": {"kind": {"enum": ["c", null]}}, "required": ["kind", "y"]}}, "oneOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/c"}]}`,
			valid:   []string{`{"kind": "a"}`, `{"kind": null, "y": 1}`},
			invalid: append([]string{`{"kind": "c"}`, `{"kind": "d", "y": 1}`}, nonObjects...),
		},
		{
			name:    "a required property the other branch forbids, no type",
			schema:  `{"oneOf": [{"properties": {"src": {"type": "string"}}, "required": ["src"], "additionalProperties": false}, {"properties": {"from": {"type": "string"}}, "required": ["from"]}]}`,
			valid:   []string{`{"src": "a"}`, `{"from": "b"}`, `{"src": "a", "from": "b"}`},
			invalid: append([]string{`{}`, `{"src": 1}`}, nonObjects...),
		},
		{
			name:    "a tag, inside a property",
			schema:  `{"type": "object", "properties": {"p": {"oneOf": [{"properties": {"t": {"const": true}}, "required": ["t"]}, {"properties": {"t": {"const": "1"}}, "required": ["t"]}]}}}`,
			valid:   []string{`{}`, `{"p": {"t": "1"}}`, `{"p": {"t": true}}`},
			invalid: []string{`{"p": "1"}`, `{"p": 1}`, `{"p": null}`, `{"p": {"t": 2}}`},
		},
		{
			// Strings satisfy the second branch only.
			name:    "a tag, one branch typed object",
			schema:  `{"oneOf": [{"type": "object", "properties": {"t": {"const": "a"}}, "required": ["t"]}, {"properties": {"t": {"const": "b"}}, "required": ["t"]}]}`,
			valid:   []string{`{"t": "a"}`, `{"t": "b"}`, `"str"`, `5`, `null`, `[]`},
			invalid: []string{`{"t": "c"}`, `{}`},
		},
		{
			name:    "a tag beside a type of objects and strings",
			schema:  `{"type": ["object", "string"], "oneOf": [{"properties": {"t": {"const": "a"}}, "required": ["t"]}, {"properties": {"t": {"const": "b"}}, "required": ["t"]}]}`,
			valid:   []string{`{"t": "a"}`, `{"t": "b"}`},
			invalid: []string{`"a"`, `5`, `{"t": "c"}`},
		},
		{
			name:    "a tag, one branch only for strings",
			schema:  `{"oneOf": [{"properties": {"t": {"const": "a"}}, "required": ["t"]}, {"properties": {"t": {"const": "b"}}, "required": ["t"], "type": ["object", "string"]}]}`,
			valid:   []string{`{"t": "a"}`, `{"t": "b"}`, `5`, `null`},
			invalid: []string{`"s"`, `{}`},
		},
	})
}

// TestOneOfRefusedByType checks that a oneOf whose branches may overlap
// on a type, where some values of that type satisfy one branch only, is
// refused rather than compiled as an anyOf.
func TestOneOfRefusedByType(t *testing.T) {
	for _, tc := range []struct{ schema, pointer, msg string }{
		// The second branch's multiple cannot be taken out of the first.
		{`{"oneOf": [{"type": "integer"}, {"type": "integer", "multipleOf": 3}]}`, "#", "cannot be taken out"},
		{`{"properties": {"p": {"oneOf": [{"required": ["t"]}, {"required": ["t"], "uniqueItems": true}]}}}`, "#/properties/p", "cannot be taken out"},
	} {
		_, err := Compile([]byte(tc.schema), Options{})
		var e *Error
		require.ErrorAs(t, err, &e, tc.schema)
		assert.Equal(t, tc.pointer, e.Pointer, tc.schema)
		assert.Equal(t, "oneOf", e.Keyword, tc.schema)
		assert.Contains(t, e.Msg, tc.msg, tc.schema)
	}
}

// TestOneOfOverlapping checks oneOfs whose branches may overlap: each
// branch is taken without the values of the others.
func TestOneOfOverlapping(t *testing.T) {
	runKeywordCases(t, []keywordCase{
		{
			// Long strings satisfy both branches, short ones the first only.
			name:    "a string length beside a tag",
			schema:  `{"oneOf": [{"properties": {"t": {"const": "a"}}, "required": ["t"]}, {"properties": {"t": {"const": "b"}}, "required": ["t"], "minLength": 3}]}`,
			valid:   []string{`"ab"`, `""`, `{"t": "a"}`, `{"t": "b"}`},
			invalid: []string{`"abc"`, `{"t": "c"}`, `{}`, `1`, `null`},
		},
		{
			name:    "numbers and integers: numbers that are not integers",
			schema:  `{"oneOf": [{"type": "number"}, {"type": "integer"}]}`,
			valid:   []string{`1.5`, `-0.1`},
			invalid: []string{`1`, `1.0`, `"a"`},
		},
		{
			name:    "two patterns that overlap",
			schema:  `{"type": "string", "oneOf": [{"pattern": "^[0-9a-f]{4}$"}, {"pattern": "^[0-9A-F]{4}$"}]}`,
			valid:   []string{`"00af"`, `"00AF"`},
			invalid: []string{`"0000"`, `"00aF"`, `"1234"`},
		},
		{
			name:    "objects whose tags are optional",
			schema:  `{"type": "object", "oneOf": [{"properties": {"type": {"enum": ["callback"]}, "value": {"type": "string"}}}, {"properties": {"type": {"enum": ["field", "value"]}, "value": {"type": ["string", "null"]}}}]}`,
			valid:   []string{`{"type": "callback", "value": "x"}`, `{"type": "field", "value": null}`, `{"value": null}`},
			invalid: []string{`{"type": "callback", "value": null}`, `{}`, `{"value": "x"}`, `{"type": "other"}`},
		},
		{
			name:    "a branch inside another",
			schema:  `{"oneOf": [{"type": "integer", "minimum": 0}, {"type": "integer", "maximum": 10}]}`,
			valid:   []string{`-5`, `11`, `100`},
			invalid: []string{`0`, `5`, `10`, `1.5`},
		},
	})
}

// TestOneOfFalseBranch checks that a branch false is dropped beside
// siblings as without them.
func TestOneOfFalseBranch(t *testing.T) {
	runKeywordCases(t, []keywordCase{
		{
			name:    "anyOf with a false branch beside a sibling",
			schema:  `{"type": "string", "anyOf": [false, {"minLength": 2}]}`,
			valid:   []string{`"ab"`},
			invalid: []string{`"a"`, `1`},
		},
		{
			name:    "a tagged oneOf with a false branch",
			schema:  `{"oneOf": [false, {"properties": {"t": {"const": "a"}}, "required": ["t"]}, {"properties": {"t": {"const": "b"}}, "required": ["t"]}]}`,
			valid:   []string{`{"t": "a"}`, `{"t": "b"}`},
			invalid: []string{`"a"`, `{}`},
		},
	})
}
