package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/server/loadtest"
)

// TestServe runs reins serve on the built-in model in llama.cpp, asks
// it for a constrained chat reply and an echo, and shuts it down with a
// request in flight, which finishes.
func TestServe(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	var stderr bytes.Buffer
	go func() {
		done <- serve(ctx, []string{"--addr", "127.0.0.1:0", "--parallel", "2", "--api-key", "k"}, &stderr, func(a string) { addrc <- a })
	}()
	var base string
	select {
	case a := <-addrc:
		base = "http://" + a
	case err := <-done:
		t.Fatalf("serve ended: %v\n%s", err, stderr.String())
	}
	call := func(path, body string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var out map[string]any
		data, _ := io.ReadAll(resp.Body)
		require.NoError(t, json.Unmarshal(data, &out), string(data))
		return resp.StatusCode, out
	}
	code, out := call("/v1/chat/completions", `{"messages": [{"role": "user", "content": "Pick."}], "regex": "(yes|no)!", "logprobs": true, "top_logprobs": 2}`)
	require.Equal(t, 200, code, out)
	msg := out["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]
	assert.Regexp(t, `^(yes|no)!$`, msg)
	code, out = call("/v1/completions", `{"prompt": "The cat sat", "max_tokens": 0, "echo": true, "logprobs": 0}`)
	require.Equal(t, 200, code, out)
	assert.NotEmpty(t, out["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)["token_logprobs"])

	// A request in flight when the server is told to stop completes.
	inflight := make(chan int, 1)
	go func() {
		c, _ := call("/v1/completions", `{"prompt": "The", "max_tokens": 200, "temperature": 0}`)
		inflight <- c
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not shut down")
	}
	assert.Equal(t, 200, <-inflight)
	assert.Contains(t, stderr.String(), "shutting down")
}

func TestServeUsage(t *testing.T) {
	for _, args := range [][]string{{"serve", "--parallel", "0"}, {"serve", "extra"}, {"serve", "--chat-format", "klingon"}, {"serve", "--addr", "not-an-address"}} {
		_, errOut, code := runCLI(t, args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, errOut)
	}
}

// TestHTMLFlagAndView writes pages with --html and with reins view, from
// generate's and score's JSON.
func TestHTMLFlagAndView(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "gen.html")
	out, errOut, code := runCLI(t, "generate", "--max-tokens", "6", "--top-logprobs", "3", "--regex", "[a-z ]+", "--html", page, "--json", "The cat")
	require.Equal(t, 0, code, errOut)
	html, err := os.ReadFile(page)
	require.NoError(t, err)
	assert.Contains(t, string(html), `class="tok`)
	assert.Contains(t, string(html), `<span class="plain">The cat</span>`)

	js := filepath.Join(dir, "gen.json")
	require.NoError(t, os.WriteFile(js, []byte(out), 0o644))
	_, errOut, code = runCLI(t, "view", "--prompt", "The cat", js)
	require.Equal(t, 0, code, errOut)
	html2, err := os.ReadFile(filepath.Join(dir, "gen.html"))
	require.NoError(t, err)
	assert.Equal(t, strings.Count(string(html), `data-i="`), strings.Count(string(html2), `data-i="`))

	scorePage := filepath.Join(dir, "score.html")
	out, errOut, code = runCLI(t, "score", "--json", "--html", scorePage, "--context", "The cat", " sat on the mat")
	require.Equal(t, 0, code, errOut)
	_, err = os.Stat(scorePage)
	require.NoError(t, err)
	stdout, errOut, code := runCLIStdin(t, out, "view", "-")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, stdout, "<!DOCTYPE html>")

	_, _, code = runCLIStdin(t, `{"nothing": 1}`, "view", "-")
	assert.Equal(t, exitUsage, code)

	// run and extract outline their captures and fields.
	runPage := filepath.Join(dir, "run.html")
	_, errOut, code = runCLI(t, "run", "--html", runPage, "--var", "animal=dog", filepath.Join("..", "..", "testdata", "programs", "quiz.tmpl"))
	require.Equal(t, 0, code, errOut)
	html, err = os.ReadFile(runPage)
	require.NoError(t, err)
	assert.Contains(t, string(html), `data-cap="0"`)
	extractPage := filepath.Join(dir, "extract.html")
	_, errOut, code = runCLI(t, "extract", "--html", extractPage, "--schema", filepath.Join("..", "..", "testdata", "extract", "person.schema.json"), filepath.Join("..", "..", "testdata", "extract", "docs"))
	require.Equal(t, 0, code, errOut)
	html, err = os.ReadFile(extractPage)
	require.NoError(t, err)
	caps := map[string]bool{}
	for _, m := range regexp.MustCompile(`data-cap="(\d+)"`).FindAllStringSubmatch(string(html), -1) {
		caps[m[1]] = true
	}
	assert.Len(t, caps, 15, "3 documents of 5 fields each, outlined")
	assert.Contains(t, string(html), "/married")
}

// BenchmarkServeLoad is BenchmarkLoad of the server package on a real
// model in llama.cpp (stories260K from ../shared, else the built-in
// model's GGUF): 16 streaming clients over 8 sequences, free,
// constrained and mixed requests, every constrained output validated.
//
// Constrained requests end where their language does, most well before
// max_tokens, so "constrained" spends more of its time on prompts than
// "free" does. "grammar" is constrained with outputs as long as free
// ones (the grammar has no end before max_tokens): free and grammar
// compare the servers' tok/s with the same work per request, and
// "mixed" compares each kind's time per token in the same batches (with
// -v the report per kind is printed). BenchmarkServeMatched compares
// the constrained mix with free requests of the same lengths.
//
//	go test -run '^$' -bench ServeLoad -benchtime 200x ./cmd/reins/
func BenchmarkServeLoad(b *testing.B) {
	for _, bc := range []struct {
		name  string
		kinds []loadtest.Kind
	}{
		{"free", []loadtest.Kind{loadtest.Free}},
		{"constrained", []loadtest.Kind{loadtest.Regex, loadtest.Schema, loadtest.Grammar}},
		{"grammar", []loadtest.Kind{loadtest.Grammar}},
		{"mixed", []loadtest.Kind{loadtest.Free, loadtest.Regex, loadtest.Free, loadtest.Schema, loadtest.Free, loadtest.Grammar}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			base, model, stop := serveForBench(b)
			b.ResetTimer()
			rep := loadtest.Run(context.Background(), loadtest.Options{BaseURL: base, Clients: 16, Requests: b.N, MaxTokens: 64, Kinds: bc.kinds})
			b.StopTimer()
			stop()
			st := rep.All
			b.ReportMetric(st.Throughput, "tok/s")
			b.ReportMetric(float64(st.TTFT50.Microseconds()), "ttft-p50-µs")
			b.ReportMetric(float64(st.TTFT99.Microseconds()), "ttft-p99-µs")
			b.ReportMetric(float64(st.TPOT50.Microseconds()), "tpot-p50-µs")
			b.ReportMetric(float64(st.TPOT99.Microseconds()), "tpot-p99-µs")
			b.ReportMetric(float64(st.Errors), "errors")
			b.ReportMetric(0, "ns/op")
			if testing.Verbose() {
				fmt.Fprintf(os.Stderr, "%s: %d requests on %s:\n%s\n", b.Name(), b.N, model, rep)
			}
			if st.Errors > 0 || st.Invalid > 0 {
				b.Fatalf("%d errors (first: %s), %d invalid constrained outputs", st.Errors, st.FirstErr, st.Invalid)
			}
		})
	}
}

// BenchmarkServeMatched runs, on one server and in one run, the
// constrained mix of BenchmarkServeLoad (regex, schema and grammar
// requests, outputs validated), then free requests each asked for as
// many tokens as the constrained request of the same number gave: the
// same concurrency, prompts and amount of output, with and without
// constraints. It reports both rates and their ratio.
//
//	go test -run '^$' -bench ServeMatched -benchtime 300x -count 5 ./cmd/reins/
func BenchmarkServeMatched(b *testing.B) {
	base, model, stop := serveForBench(b)
	defer stop()
	b.ResetTimer()
	con := loadtest.Run(context.Background(), loadtest.Options{BaseURL: base, Clients: 16, Requests: b.N, MaxTokens: 64,
		Kinds: []loadtest.Kind{loadtest.Regex, loadtest.Schema, loadtest.Grammar}})
	free := loadtest.Run(context.Background(), loadtest.Options{BaseURL: base, Clients: 16, Requests: b.N, Kinds: []loadtest.Kind{loadtest.Free},
		MaxTokensOf: func(i int) int { return max(1, con.Lengths[i]) }})
	b.StopTimer()
	for _, r := range []*loadtest.Report{con, free} {
		if st := r.All; st.Errors > 0 || st.Invalid > 0 {
			b.Fatalf("%d errors (first: %s), %d invalid constrained outputs", st.Errors, st.FirstErr, st.Invalid)
		}
	}
	if con.All.Tokens != free.All.Tokens {
		b.Fatalf("free requests gave %d tokens, constrained %d: the lengths do not match", free.All.Tokens, con.All.Tokens)
	}
	b.ReportMetric(con.All.Throughput, "constrained-tok/s")
	b.ReportMetric(free.All.Throughput, "free-tok/s")
	b.ReportMetric(100*con.All.Throughput/free.All.Throughput, "constrained/free-%")
	b.ReportMetric(0, "ns/op")
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "%d requests on %s:\nconstrained\n%s\nfree, the same lengths\n%s\n", b.N, model, con, free)
	}
}

// serveForBench starts reins serve on stories260K (from ../shared, else
// the built-in model) with 8 sequences on a free loopback port, and
// returns its base URL, the model and a function that stops it.
func serveForBench(b *testing.B) (base, model string, stop func()) {
	b.Helper()
	model = filepath.Join("..", "..", "..", "shared", "models", "stories260K.gguf")
	if _, err := os.Stat(model); err != nil {
		b.Logf("SHARED DATA MISSING: %s; on the built-in model", model)
		model = BuiltinModel
	}
	b.Setenv("XDG_CACHE_HOME", b.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	var stderr bytes.Buffer
	go func() {
		done <- serve(ctx, []string{"--model", model, "--addr", "127.0.0.1:0", "--parallel", "8", "--queue", "64", "--ctx", "512"}, &stderr, func(a string) { addrc <- a })
	}()
	select {
	case a := <-addrc:
		base = "http://" + a
	case err := <-done:
		cancel()
		b.Fatalf("serve ended: %v\n%s", err, stderr.String())
	}
	return base, model, func() {
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}
