package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/backends/llama"
	"github.com/reins-go/reins/internal/shared"
	"github.com/reins-go/reins/program"
)

// TestHealingWithARealTokenizer: stories260K's SentencePiece tokenizer
// writes the space at the end of "a little " as a token of its own,
// "▁", and the words after it with their space, "▁girl". Unhealed, a
// hole after that prompt must start after the lone "▁", with a token
// that has no space; healed, "▁" is taken back and the hole's first
// token is one that spells the space and the word's start together.
func TestHealingWithARealTokenizer(t *testing.T) {
	path := shared.Path(t, "models/stories260K.gguf")
	lm, err := llama.Load(path, llama.Options{})
	require.NoError(t, err)
	m := reins.New(lm)
	defer m.Close()
	prompt := "Once upon a time, there was a little "
	toks, err := lm.Tokenize(prompt, true)
	require.NoError(t, err)
	require.Equal(t, " ", string(lm.Vocab().Bytes(toks[len(toks)-1])), "the prompt ends with a lone space token")
	p, err := program.Parse("t", prompt+`{{gen "who" regex="[a-z]+" max_tokens=6}}.`, nil)
	require.NoError(t, err)
	healed, err := p.Run(context.Background(), m, nil)
	require.NoError(t, err)
	plain, err := p.Run(context.Background(), m, &program.RunOptions{NoHeal: true})
	require.NoError(t, err)
	h, u := healed.Capture("who"), plain.Capture("who")
	t.Logf("healed %q %q; unhealed %q %q", h.Value, h.Tokens[0].Token, u.Value, u.Tokens[0].Token)
	assert.Equal(t, " ", h.Healed)
	assert.True(t, strings.HasPrefix(h.Tokens[0].Token, " ") && len(h.Tokens[0].Token) > 1, "the first token joins the space and the word: %q", h.Tokens[0].Token)
	assert.False(t, strings.HasPrefix(u.Tokens[0].Token, " "), "unhealed, the first token cannot hold the space: %q", u.Tokens[0].Token)
	assert.NotEqual(t, h.Tokens[0].Token, u.Tokens[0].Token)
	assert.Greater(t, h.Tokens[0].Logprob, u.Tokens[0].Logprob, "the token the model would use is the likelier")
}

// TestRunCommand: reins run --json prints the text and every capture in
// the order made, a select with every option's probability.
func TestRunCommand(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"run", "--json", "--var", "animal=dog", filepath.Join("..", "..", "testdata", "programs", "quiz.tmpl")}, nil, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	var res struct {
		Text     string                     `json:"text"`
		Captures map[string]json.RawMessage `json:"captures"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	assert.Contains(t, res.Text, "How many legs does a dog have? ")
	order := []string{}
	dec := json.NewDecoder(bytes.NewReader(out.Bytes()[strings.Index(out.String(), `"captures":`)+len(`"captures":`):]))
	_, err := dec.Token()
	require.NoError(t, err)
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		order = append(order, k.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	assert.Equal(t, []string{"place", "legs", "happy", "summary"}, order)
	var happy struct {
		Value   string  `json:"value"`
		Prob    float64 `json:"prob"`
		Options []struct {
			Text string  `json:"text"`
			Prob float64 `json:"prob"`
		} `json:"options"`
		Tokens []reins.Token `json:"tokens"`
	}
	require.NoError(t, json.Unmarshal(res.Captures["happy"], &happy))
	require.Len(t, happy.Options, 3)
	var sum float64
	for _, o := range happy.Options {
		sum += o.Prob
	}
	assert.InDelta(t, 1, sum, 1e-9)
	assert.NotEmpty(t, happy.Tokens)
	var summary struct {
		Value map[string]any `json:"value"`
	}
	require.NoError(t, json.Unmarshal(res.Captures["summary"], &summary))
	assert.Contains(t, summary.Value, "animal", "a schema capture's value is the JSON value itself")

	// Without --json: the text, then a table of captures.
	out.Reset()
	code = run([]string{"run", "--var", "animal=cat", filepath.Join("..", "..", "testdata", "programs", "quiz.tmpl")}, nil, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	assert.Contains(t, out.String(), "How many legs does a cat have?")
	assert.Contains(t, out.String(), "capture  value")
}

func TestRunCommandErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.tmpl")
	require.NoError(t, os.WriteFile(bad, []byte("Q:\n{{select \"s\" options=[\"a\", \"a\"]}}"), 0o644))
	var out, errb bytes.Buffer
	assert.Equal(t, exitUsage, run([]string{"run", bad}, nil, &out, &errb))
	assert.Contains(t, errb.String(), bad+":2:22: select \"s\": option 2 \"a\" repeats option 1")
	unknown := filepath.Join(dir, "unknown.tmpl")
	require.NoError(t, os.WriteFile(unknown, []byte("Hi {{who}}"), 0o644))
	errb.Reset()
	assert.Equal(t, exitUsage, run([]string{"run", unknown}, nil, &out, &errb))
	assert.Contains(t, errb.String(), unknown+":1:4: unknown name \"who\"")
	errb.Reset()
	assert.Equal(t, 0, run([]string{"run", "--var", "who=Tom", unknown}, nil, &out, &errb), errb.String())
	assert.Equal(t, exitUsage, run([]string{"run"}, nil, &out, &errb))
}

// TestExtractCommand: reins extract writes a valid line per document,
// and a second run on the same output skips them all and leaves the
// file as it was; with --retry-errors, a document recorded with an
// error runs again.
func TestExtractCommand(t *testing.T) {
	td := filepath.Join("..", "..", "testdata", "extract")
	outFile := filepath.Join(t.TempDir(), "out.jsonl")
	args := []string{"extract", "--schema", filepath.Join(td, "person.schema.json"), "--instructions", filepath.Join(td, "instructions.txt"),
		"--out", outFile, "--concurrency", "2", filepath.Join(td, "docs"), filepath.Join(td, "more.jsonl")}
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(args, nil, &out, &errb), errb.String())
	assert.Contains(t, errb.String(), "5 done, 0 failed, 0 skipped")
	first, err := os.ReadFile(outFile)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(first)), "\n")
	require.Len(t, lines, 5)
	for _, l := range lines {
		var rec struct {
			ID         string             `json:"id"`
			Value      map[string]any     `json:"value"`
			Confidence map[string]float64 `json:"confidence"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &rec))
		assert.Len(t, rec.Confidence, 5, rec.ID)
		assert.Equal(t, 1.0, rec.Confidence["/kind"])
	}
	errb.Reset()
	require.Equal(t, 0, run(args, nil, &out, &errb), errb.String())
	assert.Contains(t, errb.String(), "0 done, 0 failed, 5 skipped")
	again, err := os.ReadFile(outFile)
	require.NoError(t, err)
	assert.Equal(t, string(first), string(again))

	// A document recorded with an error is skipped on resume, and run
	// again with --retry-errors: its error goes, its record comes last.
	var maxLine string
	var kept []string
	for _, l := range lines {
		if strings.HasPrefix(l, `{"id":"max",`) {
			maxLine = l
		} else {
			kept = append(kept, l)
		}
	}
	require.NotEmpty(t, maxLine)
	failed := strings.Replace(string(first), maxLine, `{"id":"max","error":"timed out"}`, 1)
	require.NoError(t, os.WriteFile(outFile, []byte(failed), 0o644))
	errb.Reset()
	require.Equal(t, 0, run(args, nil, &out, &errb), errb.String())
	assert.Contains(t, errb.String(), "0 done, 0 failed, 5 skipped")
	errb.Reset()
	require.Equal(t, 0, run(append([]string{"extract", "--retry-errors"}, args[1:]...), nil, &out, &errb), errb.String())
	assert.Contains(t, errb.String(), "1 done, 0 failed, 4 skipped")
	retried, err := os.ReadFile(outFile)
	require.NoError(t, err)
	assert.Equal(t, strings.Join(append(kept, maxLine), "\n")+"\n", string(retried))

	errb.Reset()
	assert.Equal(t, exitUsage, run([]string{"extract", filepath.Join(td, "docs")}, nil, &out, &errb))
	assert.Contains(t, errb.String(), "--schema")
	errb.Reset()
	assert.Equal(t, exitUsage, run([]string{"extract", "--retry-errors", "--schema", filepath.Join(td, "person.schema.json"), filepath.Join(td, "docs")}, nil, &out, &errb))
	assert.Contains(t, errb.String(), "--retry-errors needs --out")
}
