package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/program"
)

// fakeOllama answers /api/generate with the words given, one token
// each, whatever it is asked, and records the requests.
func fakeOllama(t *testing.T, words ...string) (*httptest.Server, *[]map[string]any) {
	var reqs []map[string]any
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &req)
		reqs = append(reqs, req)
		var lps []any
		for _, word := range words {
			b := []int{}
			for i := range len(word) {
				b = append(b, int(word[i]))
			}
			lps = append(lps, map[string]any{"token": word, "logprob": -0.5, "bytes": b,
				"top_logprobs": []any{map[string]any{"token": word, "logprob": -0.5, "bytes": b}}})
		}
		out, _ := json.Marshal(map[string]any{"response": strings.Join(words, ""), "done": true, "done_reason": "length", "logprobs": lps})
		w.Write(out)
	}))
	t.Cleanup(s.Close)
	return s, &reqs
}

// TestGenerateOnOllama: --backend ollama --url --model generate on the
// server, with the constraint flags.
func TestGenerateOnOllama(t *testing.T) {
	s, reqs := fakeOllama(t, " upon", " a", " time", ".")
	var stdout, stderr bytes.Buffer
	code := run([]string{"generate", "--backend", "ollama", "--url", s.URL, "--model", "stories", "--regex", ` upon a time\.`,
		"--server-option", "num_ctx=4096", "--temperature", "0.5", "--seed", "3", "Once"}, nil, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Equal(t, " upon a time.\n", stdout.String())
	require.NotEmpty(t, *reqs)
	req := (*reqs)[0]
	assert.Equal(t, "stories", req["model"])
	assert.Equal(t, "Once", req["prompt"])
	assert.Equal(t, true, req["raw"])
	opts := req["options"].(map[string]any)
	assert.EqualValues(t, 4096, opts["num_ctx"])
	assert.EqualValues(t, 0.5, opts["temperature"])
	assert.EqualValues(t, 3, opts["seed"])
}

// TestBackendUsage: wrong backend flags are usage errors (exit 3).
func TestBackendUsage(t *testing.T) {
	for _, args := range [][]string{
		{"generate", "--backend", "vllm", "--model", "m", "x"},
		{"generate", "--backend", "ollama", "x"},
		{"generate", "--backend", "openai", "--model", "m", "--chat-continue", "sideways", "x"},
		{"generate", "--backend", "ollama", "--model", "m", "--server-option", "temperature=1", "x"},
		{"generate", "--backend", "ollama", "--model", "m", "--header", "nocolon", "x"},
		{"generate", "--backend", "openai", "--model", "m", "--url", "ftp://x", "x"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(args, nil, &stdout, &stderr)
		assert.Equal(t, exitUsage, code, fmt.Sprint(args, stderr.String()))
		assert.Empty(t, stdout.String())
	}
}

// TestRunOnOllama: run --backend ollama fills a program's holes on the
// server, the prompt written by the program (raw, no chat API).
func TestRunOnOllama(t *testing.T) {
	s, reqs := fakeOllama(t, " upon", " a", " time", ".")
	tmpl := filepath.Join(t.TempDir(), "story.tmpl")
	require.NoError(t, os.WriteFile(tmpl, []byte(`Once{{gen "rest" regex=" upon a time\\." max_tokens=8}}`), 0o644))
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "--backend", "ollama", "--url", s.URL, "--model", "stories", "--json", tmpl}, nil, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	var res struct {
		Text     string
		Captures map[string]struct{ Value string }
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), stdout.String())
	assert.Equal(t, "Once upon a time.", res.Text)
	assert.Equal(t, " upon a time.", res.Captures["rest"].Value)
	require.NotEmpty(t, *reqs)
	assert.Equal(t, "Once", (*reqs)[0]["prompt"])
	assert.Equal(t, true, (*reqs)[0]["raw"])

	// Role blocks need a named chat format on a server.
	roles := filepath.Join(t.TempDir(), "roles.tmpl")
	require.NoError(t, os.WriteFile(roles, []byte("{{#user}}Hi{{/user}}{{#assistant}}{{gen \"a\" max_tokens=2}}{{/assistant}}"), 0o644))
	stdout.Reset()
	stderr.Reset()
	code = run([]string{"run", "--backend", "ollama", "--url", s.URL, "--model", "stories", roles}, nil, &stdout, &stderr)
	assert.Equal(t, exitUsage, code, stderr.String())
	assert.Contains(t, stderr.String(), "--chat")
}

// TestRunJSONSaysWhatAScoreIs: run --json carries, per select option,
// whether its score came from a server's top alternatives and whether
// it is only a bound (the option left them), as choose --json does.
func TestRunJSONSaysWhatAScoreIs(t *testing.T) {
	res := &program.Result{Text: "Once upon", Captures: []*program.Capture{{Name: "w", Kind: "select", Value: " upon",
		Options: []reins.Option{{Text: " upon", Prob: 0.9, TopK: true}, {Text: " zebra", Prob: 0.1, TopK: true, Bound: true}}}}}
	var b bytes.Buffer
	require.NoError(t, writeRunJSON(&b, res))
	var out struct {
		Captures map[string]struct {
			Options []struct {
				Text  string
				TopK  bool `json:"top_k"`
				Bound bool
			}
		}
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &out), b.String())
	opts := out.Captures["w"].Options
	require.Len(t, opts, 2, b.String())
	for _, o := range opts {
		assert.True(t, o.TopK, b.String())
		assert.Equal(t, o.Text == " zebra", o.Bound, "%q: %s", o.Text, b.String())
	}
}
