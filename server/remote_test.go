package server

import (
	"context"
	"math"
	"regexp"
	"testing"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/backends/openai"
)

// TestReinsRemoteBackend points reins' own OpenAI backend at the
// server: the same outputs and scores as the model in process, and a
// constrained generation checked by the client.
func TestReinsRemoteBackend(t *testing.T) {
	_, ts, _ := newTest(t, Config{APIKey: "k", ModelName: "builtin"})
	ctx := context.Background()
	local := reins.Builtin()
	for _, stream := range []bool{false, true} {
		b, err := openai.New(openai.Options{Model: "builtin", URLs: []string{ts.URL + "/v1"}, APIKey: "k", Echo: true, TopLogprobs: 20, Stream: stream, Retries: -1})
		if err != nil {
			t.Fatal(err)
		}
		m := reins.New(b)
		got, err := m.Generate(ctx, "The cat", reins.Options{MaxTokens: 8, TopLogprobs: 3})
		if err != nil {
			t.Fatal(err)
		}
		want, err := local.Generate(ctx, "The cat", reins.Options{MaxTokens: 8, TopLogprobs: 3})
		if err != nil {
			t.Fatal(err)
		}
		if got.Text != want.Text {
			t.Errorf("stream %v: remote %q, in process %q", stream, got.Text, want.Text)
		}
		for i := range min(len(got.Tokens), len(want.Tokens)) {
			if math.Abs(got.Tokens[i].Logprob-want.Tokens[i].Logprob) > 1e-4 {
				t.Errorf("stream %v: token %d logprob %v, in process %v", stream, i, got.Tokens[i].Logprob, want.Tokens[i].Logprob)
			}
		}
		sr, err := m.Score(ctx, " sat on the mat.", reins.ScoreOptions{Context: "The cat"})
		if err != nil {
			t.Fatal(err)
		}
		ws, _ := local.Score(ctx, " sat on the mat.", reins.ScoreOptions{Context: "The cat"})
		if math.Abs(sr.Sum-ws.Sum) > 1e-3 {
			t.Errorf("stream %v: remote score %v, in process %v", stream, sr.Sum, ws.Sum)
		}
		// The remote backend steers by the server's top alternatives:
		// a constraint the model's likely tokens can follow.
		re, err := reins.Regex(`[a-z ]{3,20}\.`)
		if err != nil {
			t.Fatal(err)
		}
		c, err := m.Generate(ctx, "The cat", reins.Options{Constraint: re, MaxTokens: 40})
		if err != nil {
			t.Fatalf("stream %v: constrained through the remote backend: %v", stream, err)
		}
		if !regexp.MustCompile(`^[a-z ]{3,20}\.$`).MatchString(c.Text) {
			t.Errorf("stream %v: %q", stream, c.Text)
		}
	}
}
