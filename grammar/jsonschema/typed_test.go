package jsonschema

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/internal/shared"
)

// typedDump is the typed form of one schema document, as the parse and
// intersection stages write it: the root Schema, each $ref target the
// root's intersection reaches, and the root's Node.
func typedDump(schema []byte) string {
	doc, order, err := decodeSchema(schema, false)
	if err != nil {
		return "decode error: " + err.Error() + "\n"
	}
	r, err := newRefs(doc, order, len(schema), DefaultBaseURI, nil)
	if err != nil {
		return "refs error: " + err.Error() + "\n"
	}
	c := newCompiler(Options{}, r, draftOf(doc))
	root, err := c.p.at(doc, "#")
	if err != nil {
		return "parse error: " + err.Error() + "\n"
	}
	var b strings.Builder
	b.WriteString("schema " + root.String() + "\n")
	n, err := c.z.normalize([]*Schema{root})
	if err != nil {
		b.WriteString("normalize error: " + err.Error() + "\n")
	} else {
		for _, s := range n.Schemas[1:] {
			b.WriteString("  with " + s.Ptr + " " + s.String() + "\n")
		}
		b.WriteString(n.String() + "\n")
	}
	return b.String()
}

// TestTypedGolden checks the typed form (Schema.String) and the root's
// Node (Node.String) of every schema of the official suite against the
// dumps in testdata/typed; -update rewrites them.
func TestTypedGolden(t *testing.T) {
	root := shared.Path(t, "json-schema-test-suite")
	for _, draft := range []string{"draft2020-12", "draft7"} {
		files, _ := filepath.Glob(filepath.Join(root, draft, "*.json"))
		slices.Sort(files)
		for _, f := range files {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			var cases []struct {
				Description string          `json:"description"`
				Schema      json.RawMessage `json:"schema"`
			}
			require.NoError(t, json.Unmarshal(data, &cases))
			var b strings.Builder
			for i, cs := range cases {
				fmt.Fprintf(&b, "# %d %s\n%s\n", i, cs.Description, typedDump(withDraft(cs.Schema, draft)))
			}
			golden := filepath.Join("testdata", "typed", draft, strings.TrimSuffix(filepath.Base(f), ".json")+".golden")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, []byte(b.String()), 0o644))
				continue
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "no golden file: run go test ./grammar/jsonschema -run TestTypedGolden -args -update")
			assert.Equal(t, string(want), b.String(), golden)
		}
	}
}
