package jsonschema

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/grammar"
)

// nestedText is n objects {"c": ...} around 1, laid out as Indent does:
// indented to maxIndentDepth levels, compact below.
func nestedText(n int, indent string) string {
	var b strings.Builder
	var write func(d int)
	write = func(d int) {
		if d == n {
			b.WriteString("1")
			return
		}
		if d >= maxIndentDepth {
			b.WriteString(`{"c":`)
			write(d + 1)
			b.WriteString("}")
			return
		}
		b.WriteString("{\n" + strings.Repeat(indent, d+1) + `"c": `)
		write(d + 1)
		b.WriteString("\n" + strings.Repeat(indent, d) + "}")
	}
	write(0)
	return b.String()
}

func TestIndent(t *testing.T) {
	indented := func(text string) string {
		var b bytes.Buffer
		require.NoError(t, json.Indent(&b, []byte(text), "", "  "))
		return b.String()
	}
	for _, tc := range []struct {
		schema      string
		accept, not []string
	}{
		{`{}`,
			[]string{indented(`{"a": [1, {"b": []}], "c": {}}`), `[]`, `{}`, `"x"`, nestedText(20, "  ")},
			[]string{`{"a": [1]}`, "{\n}", "[ ]", " 1", "1\n", nestedText(20, " ")}},
		{`{"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}, "b": {"enum": [{"x": [1, 2]}, []]}}}`,
			[]string{indented(`{"a": [1, 2], "b": {"x": [1, 2]}}`), indented(`{"b": [], "a": []}`), `{}`},
			[]string{`{"a": [1, 2]}`, indented(`{"b": {"x": [2, 1]}}`), indented(`{"a": [1]}`) + "\n"}},
		{`{"$defs": {"n": {"type": "object", "properties": {"c": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "integer"}]}}, "required": ["c"]}}, "$ref": "#/$defs/n"}`,
			[]string{nestedText(3, "  "), nestedText(17, "  "), nestedText(30, "  ")},
			[]string{nestedText(3, "\t"), `{"c": 1}`}},
	} {
		g, err := Compile([]byte(tc.schema), Options{Indent: "  "})
		require.NoError(t, err, tc.schema)
		p, err := grammar.Compile(g)
		require.NoError(t, err)
		for _, s := range tc.accept {
			require.NoError(t, Validate([]byte(tc.schema), []byte(s)), "test case wrong: %s", s)
			assert.True(t, acceptsText(p, s), "%s should accept %q", tc.schema, s)
		}
		for _, s := range tc.not {
			assert.False(t, acceptsText(p, s), "%s should refuse %q", tc.schema, s)
		}
	}
	for _, opts := range []Options{{Indent: "x"}, {Indent: " ", Compact: true}} {
		_, err := Compile([]byte(`{}`), opts)
		assert.ErrorContains(t, err, "Indent")
	}
}
