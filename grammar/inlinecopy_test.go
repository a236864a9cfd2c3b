package grammar_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/gbnf"
	"github.com/reins-go/reins/grammar/jsonschema"
	"github.com/reins-go/reins/internal/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInlineCopiesCompileAlike compiles grammars with the inlined
// rules' bodies copied and compiled, and requires the same program:
// copying is only a faster way to the instructions compiling makes.
func TestInlineCopiesCompileAlike(t *testing.T) {
	schemas := map[string]string{
		// Members in any order, each state inlining the member of any
		// other key (a trie of the names, then a value).
		"any order": `{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}}`,
		"required":  `{"type": "object", "required": ["a", "b"], "properties": {"a": {"type": "string"}, "b": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}}, "c": {"enum": ["p", "q"]}}}`,
		"shared by $ref": `{"$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}, "label": {"type": "string", "maxLength": 40}}}},
			"type": "object", "properties": {"from": {"$ref": "#/$defs/point"}, "to": {"$ref": "#/$defs/point"}, "via": {"type": "array", "items": {"$ref": "#/$defs/point"}}}}`,
		"recursive": `{"$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, "$ref": "#/$defs/node"}`,
		"patterns":  `{"type": "object", "patternProperties": {"^x-": {"type": "string"}}, "properties": {"id": {"type": "string", "pattern": "^[a-z]{2,8}$"}, "n": {"type": "integer", "minimum": 3, "maximum": 300}}}`,
		// Inlined rules at the end of a copy that compiling shares with
		// ones compiled before.
		"lists by $ref": `{"type": "object", "additionalProperties": false, "properties": {"adds": {"$ref": "#/$defs/list"}, "drops": {"$ref": "#/$defs/list"}},
			"$defs": {"list": {"type": "array", "items": {"$ref": "#/$defs/name"}}, "name": {"type": "string"}}}`,
		"patterned paths": `{"$defs": {"path": {"type": "string", "pattern": "^/[^ ]+$"}}, "type": "object", "properties": {"plugin": {"type": "object",
			"additionalProperties": false, "minProperties": 1, "properties": {"assets": {"$ref": "#/$defs/path"}, "manifest": {"$ref": "#/$defs/path"}}}}}`,
		// A call at the end of a copy that compiling shares with one
		// made before.
		"uri members": `{"$defs": {"e": {"properties": {"video_file": {"format": "uri"}, "audio_file": {"type": "string", "format": "uri"}}, "additionalProperties": false}},
			"properties": {"edit_info": {"$ref": "#/$defs/e"}, "file": {}}}`,
		"bounded lists": `{"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string", "minLength": 2, "maxLength": 60}, "v": {}}}, "maxItems": 40}`,
	}
	dir := filepath.Join("..", "testdata", "schemas")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no schemas in %s", dir)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		schemas[filepath.Base(f)] = string(b)
	}
	copied := 0
	same := func(name string, g *grammar.Grammar) {
		t.Helper()
		want, none, errWant := grammar.CompileCopying(g, false)
		got, n, errGot := grammar.CompileCopying(g, true)
		require.Equal(t, errWant, errGot, name)
		require.Zero(t, none, name)
		assert.Equal(t, want, got, "%s: the program differs with copies", name)
		copied += n
	}
	for name, s := range schemas {
		for _, opts := range []jsonschema.Options{{}, {Bounded: true}} {
			g, err := jsonschema.Compile([]byte(s), opts)
			require.NoError(t, err, name)
			same(name, g)
		}
	}
	grammars, err := filepath.Glob(filepath.Join(shared.Path(t, "gbnf"), "*.gbnf"))
	require.NoError(t, err)
	require.NotEmpty(t, grammars)
	for _, f := range grammars {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		g, err := gbnf.Parse(filepath.Base(f), string(b))
		require.NoError(t, err, f)
		same(f, g)
	}
	assert.Positive(t, copied, "no inlined body was copied")
}

// FuzzInlineCopies compiles random GBNF grammars and JSON Schemas with
// and without copying inlined bodies, and requires the same program.
func FuzzInlineCopies(f *testing.F) {
	f.Add(`root ::= a "," a | b a
a ::= "x" b | [0-9]+
b ::= ("y" | "z")? "w"`, false)
	f.Add(`root ::= item ("," item)*
item ::= key ":" value
key ::= "\"" [a-z]+ "\""
value ::= [0-9]+ | "[" (value ("," value)*)? "]"`, false)
	f.Add(`{"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "array", "items": {"$ref": "#"}}}}`, true)
	f.Add(`{"properties": {"edit_info": {"properties": {"video_file": {"format": "uri"}}, "additionalProperties": false}, "file": {}}}`, true)
	f.Fuzz(func(t *testing.T, src string, schema bool) {
		var g *grammar.Grammar
		var err error
		if schema {
			g, err = jsonschema.Compile([]byte(src), jsonschema.Options{})
		} else {
			g, err = gbnf.Parse("fuzz.gbnf", src)
		}
		if err != nil {
			return
		}
		want, _, errWant := grammar.CompileCopying(g, false)
		got, _, errGot := grammar.CompileCopying(g, true)
		require.Equal(t, errWant, errGot)
		require.Equal(t, want, got, "the program differs with copies")
	})
}

// BenchmarkCompileNestedInlined compiles a chain of 6,000 rules, each
// inlined in the one before: whether a body can be copied is looked at
// once it is needed, so compiling stays linear in the program's size
// (it was quadratic when each nested body was checked as it was kept).
func BenchmarkCompileNestedInlined(b *testing.B) {
	var src strings.Builder
	src.WriteString("root ::= r1\n")
	const n = 6000
	for k := 1; k < n; k++ {
		fmt.Fprintf(&src, "r%d ::= \"abcdefghij\" r%d \"abcdefghij\"\n", k, k+1)
	}
	fmt.Fprintf(&src, "r%d ::= \"end\"\n", n)
	g, err := gbnf.Parse("chain.gbnf", src.String())
	require.NoError(b, err)
	for b.Loop() {
		if _, err := grammar.Compile(g); err != nil {
			b.Fatal(err)
		}
	}
}
