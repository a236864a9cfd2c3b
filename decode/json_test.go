package decode_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/grammar/jsonschema"
)

func TestJSONSchemaCompleteParsesAndValidates(t *testing.T) {
	m, b := newFake(t)
	schema := []byte(`{"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}, "s": {"type": "string", "maxLength": 4}, "t": {"enum": ["a", "b"]}}, "required": ["n", "t"]}`)
	s, err := decode.NewJSONSchema(schema, jsonschema.Options{Bounded: true, MaxWhitespace: 1}, m.Vocab(), decode.NewTokenTrie(m.Vocab()))
	require.NoError(t, err)
	for seed := range uint64(10) {
		c, err := s.Complete(context.Background(), b, "{", decode.Options{MaxTokens: 200, Sampling: decode.SamplingOptions{Temperature: 1, Seed: seed}})
		require.NoError(t, err, "seed %d", seed)
		require.NoError(t, jsonschema.Validate(schema, []byte(c.Text)), c.Text)
		var want any
		require.NoError(t, json.Unmarshal([]byte(c.Text), &want))
		got, err := json.Marshal(c.Value)
		require.NoError(t, err)
		wantText, _ := json.Marshal(want)
		assert.JSONEq(t, string(wantText), string(got), "Value is the parsed text")
	}
}

// TestJSONSchemaRelax checks Options.Relax: a keyword reins refuses
// compiles when relaxed, and an output that breaks it is reported as
// such, not as a reins bug.
func TestJSONSchemaRelax(t *testing.T) {
	m, b := newFake(t)
	schema := []byte(`{"type": "array", "items": {"enum": [1]}, "minItems": 2, "maxItems": 2, "uniqueItems": true}`)
	trie := decode.NewTokenTrie(m.Vocab())
	_, err := decode.NewJSONSchema(schema, jsonschema.Options{Compact: true}, m.Vocab(), trie)
	require.ErrorContains(t, err, "uniqueItems")
	s, err := decode.NewJSONSchema(schema, jsonschema.Options{Compact: true, Relax: []string{"uniqueItems"}}, m.Vocab(), trie)
	require.NoError(t, err)
	c, err := s.Complete(context.Background(), b, "The", decode.Options{MaxTokens: 20})
	require.Error(t, err)
	require.NotNil(t, c, err.Error())
	assert.Equal(t, "[1,1]", c.Text) // the only text the relaxed grammar allows
	assert.Contains(t, err.Error(), "[uniqueItems]")
	assert.NotContains(t, err.Error(), "reins bug")

	_, err = jsonschema.Compile(schema, jsonschema.Options{Relax: []string{"pattern"}})
	assert.ErrorContains(t, err, `Relax "pattern"`)
}
