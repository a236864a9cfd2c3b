package llama

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/jsonschema"
	"github.com/reins-go/reins/internal/shared"
)

// jsonGenSeeds is how many seeds (branches, at temperature 1) each
// schema is generated with.
const jsonGenSeeds = 20

// generationSchemas returns the schemas of testdata/schemas and every
// 100th MaskBench schema that compiles in bounded mode, is at most 3 KB
// and bounds its strings and arrays to at most 64 (a random model fills
// whatever room a schema gives, and a schema's own bound of thousands of
// characters is not what this test is about), by name.
func generationSchemas(t *testing.T) map[string][]byte {
	out := map[string][]byte{}
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "schemas", "*.json"))
	require.NotEmpty(t, files)
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		out["testdata/"+filepath.Base(f)] = src
	}
	mb, _ := filepath.Glob(filepath.Join(shared.Path(t, "maskbench-dev"), "*.json"))
	slices.Sort(mb)
	for i := 0; i < len(mb); i += 100 {
		raw, err := os.ReadFile(mb[i])
		require.NoError(t, err)
		var file struct{ Schema json.RawMessage }
		require.NoError(t, json.Unmarshal(raw, &file))
		if len(file.Schema) > 3000 || largeBound(file.Schema) {
			continue
		}
		g, err := jsonschema.Compile(file.Schema, jsonschema.Options{Bounded: true})
		if err != nil {
			continue
		}
		if _, err := grammar.Compile(g); err != nil {
			continue
		}
		out["maskbench/"+filepath.Base(mb[i])] = file.Schema
	}
	return out
}

// TestJSONGeneration generates with the fixture model and with
// stories260K, for every schema of generationSchemas, 20 seeds at
// temperature 1: every output must end by itself (no max tokens, no
// full context), parse, and validate (CompleteN checks both).
func TestJSONGeneration(t *testing.T) {
	schemas := generationSchemas(t)
	names := make([]string, 0, len(schemas))
	for name := range schemas {
		names = append(names, name)
	}
	slices.Sort(names)
	models := []struct{ name, path, prompt string }{
		{"fixture", fixturePath(t), "The cat"},
		{"stories260K", shared.Path(t, "models/stories260K.gguf"), "Once upon a time"},
	}
	for _, md := range models {
		m := reins.New(load(t, md.path, Options{ContextSize: 4096, Sequences: jsonGenSeeds}))
		for i, name := range names {
			// Every other schema is written indented.
			opts := &reins.JSONOptions{Whitespace: 1}
			if i%2 == 1 {
				opts = &reins.JSONOptions{Indent: "  "}
			}
			t.Run(md.name+"/"+name, func(t *testing.T) {
				c, err := reins.JSONSchema(schemas[name], opts)
				require.NoError(t, err)
				cs, err := m.GenerateN(context.Background(), md.prompt, jsonGenSeeds, reins.Options{
					Constraint: c, MaxTokens: 4000, Temperature: 1, Seed: 7,
				})
				require.NoError(t, err)
				require.Len(t, cs, jsonGenSeeds)
				for _, c := range cs {
					require.Equal(t, decode.FinishStop, c.FinishReason, "%s", c.Text)
					if opts.Indent != "" {
						var compact, indented bytes.Buffer
						require.NoError(t, json.Compact(&compact, []byte(c.Text)))
						require.NoError(t, json.Indent(&indented, compact.Bytes(), "", opts.Indent))
						require.Equal(t, indented.String(), c.Text, "laid out as json.MarshalIndent does")
					}
				}
			})
		}
	}
}

// largeBound reports whether a schema sets maxLength or maxItems above 64.
func largeBound(schema []byte) bool {
	var walk func(v any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			for k, sub := range x {
				if n, ok := sub.(float64); ok && (k == "maxLength" || k == "maxItems") && n > 64 {
					return true
				}
				if walk(sub) {
					return true
				}
			}
		case []any:
			for _, sub := range x {
				if walk(sub) {
					return true
				}
			}
		}
		return false
	}
	var doc any
	return json.Unmarshal(schema, &doc) == nil && walk(doc)
}
