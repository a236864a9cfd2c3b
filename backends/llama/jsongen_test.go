package llama

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
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

// The generation sweep is opt-in: by default TestJSONGeneration runs a
// small bounded sample (sampleSeeds branches, the testdata schemas and
// the first sampleMaskBench MaskBench schemas of the sweep's list), and
// with the environment variable REINS_SWEEP set (to anything but "" or
// "0") the full sweep (fullSweepSeeds branches, every 100th MaskBench
// schema that fits), which takes minutes:
//
//	REINS_SWEEP=1 go test ./backends/llama -run TestJSONGeneration -timeout 30m
const (
	fullSweepSeeds  = 20
	sampleSeeds     = 3
	sampleMaskBench = 4
)

// sweep reports whether REINS_SWEEP asks for the full sweep.
func sweep() bool { return shared.Sweep() }

// generationSchemas returns the schemas of testdata/schemas and every
// 100th MaskBench schema that compiles in bounded mode, is at most 3 KB
// and bounds its strings and arrays to at most 64 (a random model fills
// whatever room a schema gives, and a schema's own bound of thousands of
// characters is not what this test is about), by name; of MaskBench, at
// most maxMaskBench.
func generationSchemas(t *testing.T, maxMaskBench int) map[string][]byte {
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
	picked := 0
	for i := 0; i < len(mb) && picked < maxMaskBench; i += 100 {
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
		picked++
	}
	return out
}

// TestJSONGeneration generates through the front door with the fixture
// model and with stories260K, for every schema of generationSchemas,
// several seeds at temperature 1 (see sweep): every output must be
// complete and valid (GenerateN parses and validates it, and returns an
// *UnfinishedError for one the budget cut).
func TestJSONGeneration(t *testing.T) {
	seeds, maxMaskBench := sampleSeeds, sampleMaskBench
	if sweep() {
		seeds, maxMaskBench = fullSweepSeeds, math.MaxInt
	}
	schemas := generationSchemas(t, maxMaskBench)
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
		// Sequences is left to its default: the front door runs more
		// branches than the model has sequences in groups.
		m := reins.New(load(t, md.path, Options{ContextSize: 4096}))
		for i, name := range names {
			// Every other schema is written indented.
			opts := &reins.JSONOptions{Whitespace: 1}
			if i%2 == 1 {
				opts = &reins.JSONOptions{Indent: "  "}
			}
			t.Run(md.name+"/"+name, func(t *testing.T) {
				c, err := reins.JSONSchema(schemas[name], opts)
				require.NoError(t, err)
				cs, err := m.GenerateN(context.Background(), md.prompt, seeds, reins.Options{
					Constraint: c, MaxTokens: 4000, Temperature: 1, Seed: 7,
				})
				if errors.Is(err, reins.ErrUnfinished) {
					var u *reins.UnfinishedError
					errors.As(err, &u)
					t.Logf("unfinished output %d: ...%s", u.Branch, tail(u.Completion.Text, 300))
				}
				require.NoError(t, err)
				require.Len(t, cs, seeds)
				for _, c := range cs {
					require.Equal(t, decode.FinishStop, c.FinishReason, "%s", c.Text)
					require.True(t, json.Valid([]byte(c.Text)), "%s", c.Text)
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

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

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
