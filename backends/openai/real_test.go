//go:build cgo

// Tests against a real OpenAI-compatible server: Ollama's /v1, built
// from the module reins depends on (internal/ollamatest). With cgo only,
// so that CI's cgo-less pass does not run them twice.

package openai_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/backends/openai"
	"github.com/reins-go/reins/internal/ollamatest"
)

func storiesBackend(t *testing.T, opts openai.Options) *openai.Backend {
	srv := real.Stories(t)
	opts.Model, opts.URLs = ollamatest.StoriesModel, []string{srv.URL + "/v1"}
	b, err := openai.New(opts)
	require.NoError(t, err)
	return b
}

// TestRealChatGrammar: /v1/chat/completions continues the output as an
// assistant message (Ollama renders stories260K's conversation as the
// plain prompt) under a grammar and a regex, every output in the
// language, with requests far fewer than tokens.
func TestRealChatGrammar(t *testing.T) {
	m := reins.New(storiesBackend(t, openai.Options{Chat: true}))
	g, err := reins.Grammar(`root ::= " " name " " verb " " rest "."
name ::= "Lily" | "Tom" | "Ben" | "Sue"
verb ::= "was" | "had" | "saw" | "wanted"
rest ::= [a-z]+ (" " [a-z]+){0,8}`)
	require.NoError(t, err)
	re, err := reins.Regex(`, there (was|lived) a (little|big|happy) [a-z]+( [a-z]+){0,6}\.`)
	require.NoError(t, err)
	for _, c := range []struct {
		prompt string
		c      *reins.Constraint
	}{
		{"Once upon a time, there was a little girl named Lily. She loved to play outside. One day,", g},
		{"Once upon a time", re},
	} {
		for seed := range uint64(3) {
			out, err := m.Generate(context.Background(), c.prompt, reins.Options{Constraint: c.c, MaxTokens: 60, Temperature: 0.8, Seed: seed})
			require.NoError(t, err)
			require.NoError(t, c.c.Match([]byte(out.Text)))
			assert.Less(t, out.Usage.Requests, len(out.Tokens))
			t.Logf("%q %+v", out.Text, *out.Usage)
		}
	}
	// Free text comes in one request.
	out, err := m.Generate(context.Background(), "Once upon a time", reins.Options{MaxTokens: 16, TopLogprobs: 3})
	require.NoError(t, err)
	assert.Equal(t, 1, out.Usage.Requests)
	assert.Len(t, out.Tokens, 16)
	for _, tok := range out.Tokens {
		assert.LessOrEqual(t, len(tok.TopLogprobs), 3)
	}
}

// TestRealCompletionsWithoutLogprobs: Ollama v0.17.4's /v1/completions
// drops the logprobs it is asked for; the backend says so rather than
// guess.
func TestRealCompletionsWithoutLogprobs(t *testing.T) {
	m := reins.New(storiesBackend(t, openai.Options{}))
	_, err := m.Generate(context.Background(), "Once upon a time", reins.Options{MaxTokens: 8})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "without logprobs")
}

// TestRealChat: /v1/chat/completions with the output as an assistant
// message the server continues, and response_format for a JSON Schema.
func TestRealChat(t *testing.T) {
	m := reins.New(storiesBackend(t, openai.Options{Chat: true, ResponseFormat: true}))
	sc, err := reins.JSONSchema([]byte(`{"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}, "age": {"type": "integer", "minimum": 1, "maximum": 12}}, "required": ["name", "age"], "additionalProperties": false}`), &reins.JSONOptions{Whitespace: 24})
	require.NoError(t, err)
	for seed := range uint64(3) {
		out, err := m.Generate(context.Background(), "Lily was five years old.", reins.Options{Constraint: sc, MaxTokens: 80, Temperature: 0.8, Seed: seed})
		require.NoError(t, err)
		require.NoError(t, sc.Match([]byte(out.Text)))
		t.Logf("%q %+v", out.Text, *out.Usage)
	}
	re, err := reins.Regex(` ?[A-Z][a-z]*( [a-z]+){2,10}[.!]`)
	require.NoError(t, err)
	out, err := m.Generate(context.Background(), "Tell me a story.", reins.Options{Constraint: re, MaxTokens: 60, Temperature: 0.5, Seed: 3})
	require.NoError(t, err)
	require.NoError(t, re.Match([]byte(out.Text)))
	t.Logf("%q %+v", out.Text, *out.Usage)
}
