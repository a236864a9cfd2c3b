package grammar_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/jsonschema"
	"github.com/reins-go/reins/internal/earley"
	"github.com/reins-go/reins/internal/pyjson"
	"github.com/reins-go/reins/internal/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// accepted reports whether p's language holds text.
func accepted(t *testing.T, p *grammar.Prog, text string) bool {
	t.Helper()
	err := earley.Check(p, strings.NewReader(text), earley.CheckOptions{})
	var reject *earley.RejectError
	if err != nil {
		require.ErrorAs(t, err, &reject, "%q", text)
	}
	return err == nil
}

// TestSharedNodeCompiledOnce compiles a node shared by two branches
// that go on at the same place: its code is emitted once, and the
// language is the one compiling it twice gives, string by string over
// every string of up to four bytes of the grammar's alphabet.
func TestSharedNodeCompiledOnce(t *testing.T) {
	shared := grammar.Alt(grammar.Seq(grammar.Lit("x"), grammar.Repeat(grammar.Class('0', '9'), 0, 2)), grammar.Lit("yz"))
	g := &grammar.Grammar{Start: "root", Rules: []grammar.Rule{
		{Name: "root", Body: grammar.Alt(grammar.Seq(grammar.Lit("a"), shared), grammar.Seq(grammar.Lit("b"), shared), grammar.Seq(shared, grammar.Lit("c")))},
	}}
	once, err := grammar.Compile(g)
	require.NoError(t, err)
	twice, err := grammar.CompileUnshared(g)
	require.NoError(t, err)
	assert.Less(t, len(once.Inst), len(twice.Inst), "the shared node's code is not shared:\n%s", once)
	texts := []string{""}
	for range 4 {
		for _, s := range texts {
			for _, b := range "abcxyz05" {
				texts = append(texts, s+string(b))
			}
		}
	}
	in := 0
	for _, s := range texts {
		got, want := accepted(t, once, s), accepted(t, twice, s)
		require.Equal(t, want, got, "%q", s)
		if got {
			in++
		}
	}
	assert.Greater(t, in, 10, "too few sentences for the test to mean anything")
}

// TestSharedNodesOnMaskBench compiles a sample of the dev schemas with
// shared nodes' code shared and not: every test instance is a sentence
// of both programs or of neither, and the programs are smaller in all.
func TestSharedNodesOnMaskBench(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(shared.Path(t, "maskbench-dev"), "*.json"))
	require.NoError(t, err)
	var once, twice, instances int
	for k, f := range files {
		if k%8 != 0 {
			continue
		}
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var mb struct {
			Schema json.RawMessage
			Tests  []struct{ Data json.RawMessage }
		}
		require.NoError(t, json.Unmarshal(raw, &mb))
		g, err := jsonschema.Compile(mb.Schema, jsonschema.Options{})
		if err != nil {
			continue
		}
		shared, err := grammar.Compile(g)
		require.NoError(t, err, f)
		unshared, err := grammar.CompileUnshared(g)
		require.NoError(t, err, f)
		once, twice = once+len(shared.Inst), twice+len(unshared.Inst)
		for _, test := range mb.Tests {
			text, err := pyjson.Dumps(test.Data)
			if err != nil {
				continue
			}
			instances++
			require.Equal(t, accepted(t, unshared, text), accepted(t, shared, text), "%s: %s", filepath.Base(f), text)
		}
	}
	assert.Greater(t, instances, 1000)
	// Since a grammar past inlineBudget is no longer inlined, the copies
	// shared are those of small grammars and of nodes a front end uses
	// at several places: 3.8% of the sample's instructions (it was 10%
	// and more when large grammars were inlined).
	assert.Less(t, once, twice*98/100, "shared code should make the programs at least 2% smaller")
	t.Logf("%d instances; %d instructions shared, %d not", instances, once, twice)
}

// TestCompileDeterministic compiles every eighth dev schema twice, each
// time from a grammar parsed anew (its nodes elsewhere in memory): the
// programs must be the same, which code is shared included.
func TestCompileDeterministic(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(shared.Path(t, "maskbench-dev"), "*.json"))
	require.NoError(t, err)
	compiled := 0
	for k, f := range files {
		if k%8 != 0 {
			continue
		}
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var mb struct{ Schema json.RawMessage }
		require.NoError(t, json.Unmarshal(raw, &mb))
		var first string
		for range 2 {
			g, err := jsonschema.Compile(mb.Schema, jsonschema.Options{})
			if err != nil {
				break
			}
			p, err := grammar.Compile(g)
			require.NoError(t, err, f)
			if first == "" {
				first = p.String()
				compiled++
				continue
			}
			require.Equal(t, first, p.String(), "%s compiles to another program the second time", filepath.Base(f))
		}
	}
	assert.Greater(t, compiled, 250)
}
