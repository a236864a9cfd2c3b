package reins

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/reins-go/reins/decode"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrefill: the output continues a given beginning under the
// constraint, on a local model and on a server; the whole output is
// what is checked and parsed.
func TestPrefill(t *testing.T) {
	c, err := JSONSchema([]byte(`{"type": "object", "properties": {"pet": {"enum": ["cat", "dog"]}, "n": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["pet", "n"], "additionalProperties": false}`), nil)
	require.NoError(t, err)
	for name, m := range map[string]*Model{"local": Builtin()} {
		for seed := range uint64(4) {
			out, err := m.Generate(context.Background(), "The", Options{Constraint: c, Prefill: `{"pet":"dog",`, Temperature: 1, Seed: seed, MaxTokens: 40})
			require.NoError(t, err, "%s seed %d", name, seed)
			assert.Equal(t, `{"pet":"dog",`, out.Prefill)
			assert.False(t, strings.HasPrefix(out.Text, `{"pet"`), "Text follows the prefill")
			var v struct{ Pet string }
			require.NoError(t, json.Unmarshal([]byte(out.Prefill+out.Text), &v))
			assert.Equal(t, "dog", v.Pet)
			assert.Equal(t, "dog", out.Value.(map[string]any)["pet"], "Value is the whole output's")
		}
		var oe *OptionError
		_, err = m.Generate(context.Background(), "The", Options{Constraint: c, Prefill: `{"pet":"bird"`})
		require.ErrorAs(t, err, &oe, name)
		assert.Equal(t, "Prefill", oe.Field)
	}
	// GenerateJSON decodes the whole output.
	pet, out, err := GenerateJSON[struct {
		Pet string
		N   int
	}](context.Background(), Builtin(), "The", Options{Constraint: c, Prefill: `{"pet":"cat","n":`, MaxTokens: 20})
	require.NoError(t, err)
	assert.Equal(t, "cat", pet.Pet, "decoded from %q+%q", out.Prefill, out.Text)

	// On a server, the constraint starts past the prefill too, and the
	// prefill is sent as the output so far (what a chat server continues
	// as the assistant's message), not as part of the prompt.
	remote, tb := textModel(20)
	var reqs []decode.TextRequest
	tb.BeforeContinue = func(req decode.TextRequest) error { reqs = append(reqs, req); return nil }
	re := textCases(t)["regex"]
	got, err := remote.Generate(context.Background(), "The cat sat on the mat and", Options{Constraint: re, Prefill: " the", Temperature: 1, MaxTokens: 60})
	require.NoError(t, err)
	require.NoError(t, re.Match([]byte(got.Prefill+got.Text)))
	require.NotEmpty(t, reqs)
	for _, r := range reqs {
		assert.Equal(t, "The cat sat on the mat and", r.Prompt)
		assert.True(t, strings.HasPrefix(r.Output, " the"), "output so far %q begins with the prefill", r.Output)
	}
	// A server that keeps to a schema itself is not asked to, past a
	// prefill: its schema would start at the prefill's beginning.
	reqs = nil
	schemaServer := New(schemaText{lockedText{tb: tb}})
	story := textCases(t)["schema"]
	_, err = schemaServer.Generate(context.Background(), "The cat sat on the mat and", Options{Constraint: story, Prefill: `{"story":"the`, Temperature: 1, MaxTokens: 80})
	require.NoError(t, err)
	require.NotEmpty(t, reqs)
	for _, r := range reqs {
		assert.Nil(t, r.JSONSchema)
	}
	reqs = nil
	_, err = schemaServer.Generate(context.Background(), "The cat sat on the mat and", Options{Constraint: story, Temperature: 1, MaxTokens: 80})
	require.NoError(t, err)
	require.NotEmpty(t, reqs)
	assert.NotNil(t, reqs[0].JSONSchema, "without a prefill the schema is sent")
	_, err = remote.Generate(context.Background(), "The", Options{Constraint: re, Prefill: "#"})
	var oe *OptionError
	require.ErrorAs(t, err, &oe)
	_, err = Builtin().Generate(context.Background(), "The", Options{Constraint: c, Prefill: `{`, Heal: true})
	assert.ErrorAs(t, err, &oe)
	// Without a constraint, the prefill is only part of the prompt.
	out, err = Builtin().Generate(context.Background(), "The", Options{Prefill: " cat", MaxTokens: 3})
	require.NoError(t, err)
	want, err := Builtin().Generate(context.Background(), "The cat", Options{MaxTokens: 3})
	require.NoError(t, err)
	assert.Equal(t, want.Text, out.Text)
}

// schemaText is a server that says it keeps outputs to a JSON Schema.
type schemaText struct{ lockedText }

func (s schemaText) Capabilities() decode.Capabilities {
	c := s.lockedText.Capabilities()
	c.JSONSchema = true
	return c
}
