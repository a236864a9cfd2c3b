package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/fixture"
)

// newTest starts a server on the built-in model (the fixture's
// in-process backend), with cfg's settings.
func newTest(t testing.TB, cfg Config) (*Server, *httptest.Server, *fixture.Backend) {
	t.Helper()
	b := fixture.New().NewBackend()
	if cfg.Backend == nil {
		cfg.Backend = b
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return s, ts, b
}

// post sends a JSON body and decodes the JSON answer.
func post(t testing.TB, url, body string, headers ...string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("not JSON (status %d): %s", resp.StatusCode, data)
	}
	return resp.StatusCode, out
}

// events reads a server-sent event stream's data lines.
func events(t testing.TB, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

func TestCompletionMatchesLibrary(t *testing.T) {
	_, ts, _ := newTest(t, Config{})
	code, out := post(t, ts.URL+"/v1/completions", `{"prompt": "The cat", "max_tokens": 4, "temperature": 0, "logprobs": 2}`)
	if code != 200 {
		t.Fatalf("status %d: %v", code, out)
	}
	want, err := reins.Builtin().Generate(context.Background(), "The cat", reins.Options{MaxTokens: 4, TopLogprobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	ch := out["choices"].([]any)[0].(map[string]any)
	if ch["text"] != want.Text || ch["finish_reason"] != want.FinishReason {
		t.Fatalf("got %q (%v), want %q (%s)", ch["text"], ch["finish_reason"], want.Text, want.FinishReason)
	}
	lp := ch["logprobs"].(map[string]any)
	lps := lp["token_logprobs"].([]any)
	for i, tok := range want.Tokens {
		if got := lps[i].(float64); math.Abs(got-tok.Logprob) > 1e-6 {
			t.Errorf("token %d logprob %v, want %v", i, got, tok.Logprob)
		}
	}
	if n := len(lp["content"].([]any)[0].(map[string]any)["top_logprobs"].([]any)); n != 2 {
		t.Errorf("%d alternatives, want 2", n)
	}
	u := out["usage"].(map[string]any)
	if u["completion_tokens"].(float64) != 4 || u["prompt_tokens"].(float64) != float64(want.PromptTokens) {
		t.Errorf("usage %v, want 4 completion tokens and %d prompt tokens", u, want.PromptTokens)
	}
}

func TestEchoScoresThePrompt(t *testing.T) {
	_, ts, _ := newTest(t, Config{})
	code, out := post(t, ts.URL+"/v1/completions", `{"prompt": "The cat sat on the mat.", "max_tokens": 0, "echo": true, "logprobs": 1}`)
	if code != 200 {
		t.Fatalf("status %d: %v", code, out)
	}
	want, err := reins.Builtin().Score(context.Background(), "The cat sat on the mat.", reins.ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ch := out["choices"].([]any)[0].(map[string]any)
	if ch["text"] != "The cat sat on the mat." {
		t.Errorf("text %q, want the prompt", ch["text"])
	}
	lp := ch["logprobs"].(map[string]any)
	toks, lps := lp["tokens"].([]any), lp["token_logprobs"].([]any)
	if len(toks) != len(want.Tokens) {
		t.Fatalf("%d tokens %v, want %d", len(toks), toks, len(want.Tokens))
	}
	sum := 0.0
	for i := range toks {
		if toks[i] != want.Tokens[i].Token {
			t.Errorf("token %d %q, want %q", i, toks[i], want.Tokens[i].Token)
		}
		sum += lps[i].(float64)
	}
	if math.Abs(sum-want.Sum) > 1e-6 {
		t.Errorf("sum %v, want %v", sum, want.Sum)
	}
	if out["usage"].(map[string]any)["completion_tokens"].(float64) != 0 {
		t.Errorf("max_tokens 0 generated tokens: %v", out["usage"])
	}
}

func TestChatConstrained(t *testing.T) {
	_, ts, _ := newTest(t, Config{})
	for _, tc := range []struct {
		name, field string
		ok          func(string) bool
	}{
		{"regex", `"regex": "(yes|no), because [a-z ]{3,20}\\."`, regexp.MustCompile(`^(yes|no), because [a-z ]{3,20}\.$`).MatchString},
		{"grammar", `"grammar": "root ::= \"[\" [0-9]+ (\",\" [0-9]+)* \"]\""`, regexp.MustCompile(`^\[[0-9]+(,[0-9]+)*\]$`).MatchString},
		{"json_object", `"response_format": {"type": "json_object"}`, func(s string) bool {
			var v map[string]any // an object, as OpenAI's JSON mode writes
			return json.Unmarshal([]byte(s), &v) == nil && v != nil
		}},
		{"json_schema", `"response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": true, "schema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 3, "maximum": 9}}, "required": ["n"], "additionalProperties": false}}}`,
			regexp.MustCompile(`^\{"n":[3-9]\}$`).MatchString},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"messages": [{"role": "user", "content": "Answer."}], "max_tokens": 120, "seed": 3, "logprobs": true, "top_logprobs": 3, ` + tc.field + `}`
			code, out := post(t, ts.URL+"/v1/chat/completions", body)
			if code != 200 {
				t.Fatalf("status %d: %v", code, out)
			}
			ch := out["choices"].([]any)[0].(map[string]any)
			text := ch["message"].(map[string]any)["content"].(string)
			if !tc.ok(text) || ch["finish_reason"] != "stop" {
				t.Fatalf("output %q (%v) breaks the constraint", text, ch["finish_reason"])
			}
			content := ch["logprobs"].(map[string]any)["content"].([]any)
			var joined strings.Builder
			for _, e := range content {
				e := e.(map[string]any)
				for _, b := range e["bytes"].([]any) { // a token's string may hold part of a character
					joined.WriteByte(byte(b.(float64)))
				}
				c := e["constrained"].(map[string]any)
				if c["logprob"].(float64) < e["logprob"].(float64)-1e-9 {
					t.Errorf("token %q: constrained logprob %v below the model's %v", e["token"], c["logprob"], e["logprob"])
				}
			}
			if joined.String() != text {
				t.Errorf("tokens spell %q, content %q", joined.String(), text)
			}
		})
	}
}

func TestStreamChat(t *testing.T) {
	_, ts, _ := newTest(t, Config{})
	body := `{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 12, "seed": 1, "stream": true, "n": 2, "logprobs": true, "top_logprobs": 2,
		"stop": [" s"], "stream_options": {"include_usage": true}}`
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	evs := events(t, resp.Body)
	if len(evs) < 3 || evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("events %v", evs)
	}
	text := map[int]string{}
	finish := map[int]string{}
	var usage map[string]any
	for _, e := range evs[:len(evs)-1] {
		var c map[string]any
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatal(err)
		}
		if u, ok := c["usage"].(map[string]any); ok {
			usage = u
		}
		for _, ch := range c["choices"].([]any) {
			ch := ch.(map[string]any)
			i := int(ch["index"].(float64))
			if s, ok := ch["delta"].(map[string]any)["content"].(string); ok {
				text[i] += s
			}
			if f, ok := ch["finish_reason"].(string); ok {
				finish[i] = f
			}
		}
	}
	if len(text) != 2 || usage == nil {
		t.Fatalf("texts %v, usage %v", text, usage)
	}
	// The same requests, not streamed, give the same texts.
	code, out := post(t, ts.URL+"/v1/chat/completions", strings.Replace(body, `"stream": true`, `"stream": false`, 1))
	if code != 200 {
		t.Fatalf("status %d: %v", code, out)
	}
	for i, ch := range out["choices"].([]any) {
		ch := ch.(map[string]any)
		if want := ch["message"].(map[string]any)["content"]; text[i] != want || finish[i] != ch["finish_reason"] {
			t.Errorf("choice %d streamed %q (%s), not streamed %q (%s)", i, text[i], finish[i], want, ch["finish_reason"])
		}
		if strings.Contains(text[i], " s") {
			t.Errorf("choice %d %q holds the stop string", i, text[i])
		}
	}
}

func TestBadRequests(t *testing.T) {
	_, ts, b := newTest(t, Config{Strict: true, Limits: Limits{MaxPromptBytes: 8 << 10}})
	long := strings.Repeat("the cat ", 2*b.ContextLen)
	chat := func(extra string) string {
		return `{"messages": [{"role": "user", "content": "hi"}]` + extra + `}`
	}
	for _, tc := range []struct {
		path, body, param string
		status            int
	}{
		{"/v1/chat/completions", `{"messages": [`, "", 400},
		{"/v1/chat/completions", ``, "", 400},
		{"/v1/chat/completions", chat(`, "frobnicate": 1`), "frobnicate", 400},
		{"/v1/chat/completions", chat(`, "top_logprobs": 3`), "top_logprobs", 400},
		{"/v1/chat/completions", chat(`, "logprobs": true, "top_logprobs": 101`), "top_logprobs", 400},
		{"/v1/chat/completions", chat(`, "logprobs": true, "top_logprobs": -1`), "top_logprobs", 400},
		{"/v1/chat/completions", chat(`, "temperature": 3`), "temperature", 400},
		{"/v1/chat/completions", chat(`, "n": 0`), "n", 400},
		{"/v1/chat/completions", chat(`, "n": 99`), "n", 400},
		{"/v1/chat/completions", chat(`, "max_tokens": 1000000`), "max_tokens", 400},
		{"/v1/chat/completions", chat(`, "max_tokens": "many"`), "max_tokens", 400},
		{"/v1/chat/completions", chat(`, "regex": "(unclosed"`), "regex", 400},
		{"/v1/chat/completions", chat(`, "grammar": "root ::= undefined-rule"`), "grammar", 400},
		{"/v1/chat/completions", chat(`, "regex": "a", "grammar": "root ::= \"a\""`), "regex", 400},
		{"/v1/chat/completions", chat(`, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "not": {}}}}`), "response_format.json_schema.schema", 400},
		{"/v1/chat/completions", chat(`, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"$ref": "file:///etc/passwd"}}}`), "response_format.json_schema.schema", 400},
		{"/v1/chat/completions", chat(`, "response_format": {"type": "yaml"}`), "response_format.type", 400},
		{"/v1/chat/completions", chat(`, "frequency_penalty": 0.5`), "frequency_penalty", 400},
		{"/v1/chat/completions", chat(`, "tools": [{"type": "function"}]`), "tools", 400},
		{"/v1/chat/completions", chat(`, "tool_choice": "required"`), "tool_choice", 400},
		{"/v1/chat/completions", chat(`, "tool_choice": {"type": "function", "function": {"name": "f"}}`), "tool_choice", 400},
		{"/v1/completions", `{"prompt": "a", "best_of": 0}`, "best_of", 400},
		{"/v1/chat/completions", chat(`, "stop": ["a", ""]`), "stop[1]", 400},
		{"/v1/chat/completions", `{"messages": []}`, "messages", 400},
		{"/v1/chat/completions", `{"messages": [{"role": "wizard", "content": "hi"}]}`, "messages[0].role", 400},
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}`, "messages[0].content[0].type", 400},
		{"/v1/completions", `{"prompt": "` + long[:7000] + `"}`, "prompt", 400},
		{"/v1/completions", `{"prompt": "` + strings.Repeat("a", 9000) + `"}`, "prompt", 400},
		{"/v1/completions", `{"prompt": [1, 2, 3]}`, "prompt", 400},
		{"/v1/completions", `{"prompt": ""}`, "prompt", 400},
		{"/v1/completions", `{"prompt": "a", "logprobs": 1000}`, "logprobs", 400},
		{"/v1/completions", `{"prompt": "a", "regex": "` + strings.Repeat("a", 17<<10) + `"}`, "regex", 400},
		{"/v1/completions", `{"prompt": "a"} {"prompt": "b"}`, "", 400},
		{"/v1/completions", `[1, 2]`, "", 400},
		{"/v1/nothing", `{}`, "", 404},
		{"/v1/models", `{}`, "", 405},
	} {
		req, _ := http.NewRequest("POST", ts.URL+tc.path, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var out struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
			} `json:"error"`
		}
		if err := json.Unmarshal(data, &out); err != nil || resp.StatusCode != tc.status || out.Error.Message == "" {
			t.Errorf("%s %.80s: status %d, body %s; want %d in OpenAI's error shape", tc.path, tc.body, resp.StatusCode, data, tc.status)
			continue
		}
		param := ""
		if out.Error.Param != nil {
			param = *out.Error.Param
		}
		if param != tc.param {
			t.Errorf("%s %.80s: param %q, want %q (%s)", tc.path, tc.body, param, tc.param, out.Error.Message)
		}
		if strings.Contains(out.Error.Message, "server.") {
			t.Errorf("%s %.80s: the message names a Go type: %s", tc.path, tc.body, out.Error.Message)
		}
		if tc.status == 405 && resp.Header.Get("Allow") != "GET" {
			t.Errorf("%s: Allow %q, want GET", tc.path, resp.Header.Get("Allow"))
		}
	}
}

func TestOversizedBody(t *testing.T) {
	_, ts, _ := newTest(t, Config{Limits: Limits{MaxBodyBytes: 1 << 10}})
	code, out := post(t, ts.URL+"/v1/completions", `{"prompt": "`+strings.Repeat("a", 4<<10)+`"}`)
	if code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d: %v", code, out)
	}
}

func TestAPIKey(t *testing.T) {
	_, ts, _ := newTest(t, Config{APIKey: "sekret"})
	body := `{"prompt": "The", "max_tokens": 1}`
	if code, out := post(t, ts.URL+"/v1/completions", body); code != 401 {
		t.Errorf("no key: %d %v", code, out)
	}
	if code, out := post(t, ts.URL+"/v1/completions", body, "Authorization", "Bearer wrong"); code != 401 {
		t.Errorf("wrong key: %d %v", code, out)
	}
	if code, out := post(t, ts.URL+"/v1/completions", body, "Authorization", "Bearer sekret"); code != 200 {
		t.Errorf("right key: %d %v", code, out)
	}
	resp, err := http.Get(ts.URL + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("health without key: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestQueueFull holds the only slot, fills the queue, and expects 429
// with Retry-After for the next request.
func TestQueueFull(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 16)
	b := fixture.New().NewBackend()
	b.BeforeEval = func([]decode.EvalRequest) error {
		entered <- struct{}{}
		<-release
		return nil
	}
	s, ts, _ := newTest(t, Config{Backend: b, Parallel: 1, QueueSize: 1})
	body := `{"prompt": "The", "max_tokens": 1, "temperature": 0}`
	codes := make(chan int, 2)
	for range 2 {
		go func() {
			resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	<-entered // one decodes, the other is admitted and waits
	for deadline := time.Now().Add(5 * time.Second); s.Stats().InFlight < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the second request never came in: %+v", s.Stats())
		}
	}
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("with the queue full: status %d, Retry-After %q; want 429 and a Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	close(release)
	for range 2 {
		if c := <-codes; c != 200 {
			t.Errorf("queued request: status %d", c)
		}
	}
}

func TestModelsHealthMetrics(t *testing.T) {
	_, ts, _ := newTest(t, Config{ModelName: "builtin"})
	post(t, ts.URL+"/v1/completions", `{"prompt": "The", "max_tokens": 3, "regex": "[a-z]+"}`)
	for path, want := range map[string]string{
		"/v1/models": `"id":"builtin"`,
		"/health":    `"status":"ok"`,
		"/metrics":   "reins_mask_seconds_count",
	} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(data, []byte(want)) {
			t.Errorf("%s: %d %s; want %s", path, resp.StatusCode, data, want)
		}
	}
}

// TestBatchesAcrossRequests checks that concurrent requests are
// evaluated together: one call of the backend holds several sequences.
func TestBatchesAcrossRequests(t *testing.T) {
	b := fixture.New().NewBackend()
	var mu sync.Mutex
	most := 0
	b.BeforeEval = func(reqs []decode.EvalRequest) error {
		mu.Lock()
		most = max(most, len(reqs))
		mu.Unlock()
		time.Sleep(time.Millisecond) // an evaluation that takes time, as a real one does
		return nil
	}
	_, ts, _ := newTest(t, Config{Backend: b, Parallel: 4})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			code, out := post(t, ts.URL+"/v1/completions", fmt.Sprintf(`{"prompt": "The cat", "max_tokens": 30, "seed": %d}`, i))
			if code != 200 {
				t.Errorf("status %d: %v", code, out)
			}
		})
	}
	wg.Wait()
	if most < 2 {
		t.Errorf("at most %d sequences per evaluation with 4 requests at once", most)
	}
}

// TestBackendPanic: a panic in the backend's evaluation fails the
// request with a 500 and leaves the server serving.
func TestBackendPanic(t *testing.T) {
	b := fixture.New().NewBackend()
	var once sync.Once
	b.BeforeEval = func([]decode.EvalRequest) error {
		once.Do(func() { panic("boom") })
		return nil
	}
	_, ts, _ := newTest(t, Config{Backend: b})
	if code, out := post(t, ts.URL+"/v1/completions", `{"prompt": "The", "max_tokens": 3}`); code != 500 {
		t.Errorf("status %d: %v", code, out)
	}
	if code, out := post(t, ts.URL+"/v1/completions", `{"prompt": "The", "max_tokens": 3}`); code != 200 {
		t.Errorf("after the panic: status %d: %v", code, out)
	}
}

// TestHostileConstraints: constraints built to be expensive are refused
// or answered quickly (a budget that cannot hold the output is "length"
// with reins.unfinished saying why), never a hang.
func TestHostileConstraints(t *testing.T) {
	_, ts, _ := newTest(t, Config{})
	for _, tc := range []struct {
		field string
		code  int
	}{
		{`"regex": "((a{999}){999}){999}"`, 400},
		{`"regex": "(a|b)*x{900}(a|b)*y{900}"`, 200},
		{`"grammar": "root ::= x{1000}\nx ::= y{1000}\ny ::= \"ab\"{1000}"`, 200},
		{`"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": ` + strings.Repeat(`{"type": "array", "items": `, 120) + `{}` + strings.Repeat(`}`, 120) + `}}`, 200},
		{`"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": ` + strings.Repeat(`{"type": "array", "items": `, 200) + `{}` + strings.Repeat(`}`, 200) + `}}`, 400},
	} {
		t0 := time.Now()
		code, out := post(t, ts.URL+"/v1/completions", `{"prompt": "The", "max_tokens": 8, `+tc.field+`}`)
		if code != tc.code || time.Since(t0) > 10*time.Second {
			t.Errorf("%.60s: status %d in %s, want %d: %v", tc.field, code, time.Since(t0), tc.code, out)
		}
	}
}

// TestStreamEcho: a streamed completion with echo starts with the
// prompt and its logprobs, then the generated text, which is what the
// same request gives unstreamed.
func TestStreamEcho(t *testing.T) {
	_, ts, _ := newTest(t, Config{})
	body := `{"prompt": "The cat", "max_tokens": 6, "temperature": 0, "echo": true, "logprobs": 2, "stream": true}`
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	evs := events(t, resp.Body)
	var text strings.Builder
	var first map[string]any
	for _, e := range evs[:len(evs)-1] {
		var c map[string]any
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatal(err)
		}
		ch := c["choices"].([]any)[0].(map[string]any)
		if first == nil {
			first = ch
		}
		text.WriteString(ch["text"].(string))
	}
	if first["text"] != "The cat" || len(first["logprobs"].(map[string]any)["tokens"].([]any)) == 0 {
		t.Errorf("first event %v: want the prompt with its logprobs", first)
	}
	code, out := post(t, ts.URL+"/v1/completions", strings.Replace(body, `"stream": true`, `"stream": false`, 1))
	if code != 200 {
		t.Fatal(out)
	}
	if want := out["choices"].([]any)[0].(map[string]any)["text"]; text.String() != want {
		t.Errorf("streamed %q, unstreamed %q", text.String(), want)
	}
}

// TestTextOffsetCountsCharacters: text_offset is an index into the
// text's characters, as OpenAI's and vLLM's are, not its bytes; echoed
// and generated tokens alike, with and without streaming.
func TestTextOffsetCountsCharacters(t *testing.T) {
	_, ts, _ := newTest(t, Config{})
	const prompt = "Le café est là, the cat"
	check := func(name, text string, toks []string, offs []int, content []any) {
		t.Helper()
		rs := []rune(text)
		if len(offs) != len(toks) || len(content) != len(toks) {
			t.Fatalf("%s: %d tokens, %d offsets, %d entries", name, len(toks), len(offs), len(content))
		}
		checked := 0
		for i, e := range content {
			var b []byte
			for _, x := range e.(map[string]any)["bytes"].([]any) {
				b = append(b, byte(x.(float64)))
			}
			if !utf8.Valid(b) || len(b) == 0 {
				continue // a piece of a character: it has no index of its own
			}
			if offs[i] > len(rs) || !strings.HasPrefix(string(rs[offs[i]:]), string(b)) {
				t.Errorf("%s: token %d %q at text_offset %d, where the text has %q", name, i, b, offs[i], string(rs[min(offs[i], len(rs)):]))
			}
			checked++
		}
		if checked < 3 {
			t.Errorf("%s: only %d whole tokens", name, checked)
		}
	}
	code, out := post(t, ts.URL+"/v1/completions", `{"prompt": "`+prompt+`", "max_tokens": 5, "temperature": 0, "echo": true, "logprobs": 1}`)
	if code != 200 {
		t.Fatalf("status %d: %v", code, out)
	}
	ch := out["choices"].([]any)[0].(map[string]any)
	lp := ch["logprobs"].(map[string]any)
	var toks []string
	var offs []int
	for i, x := range lp["tokens"].([]any) {
		toks = append(toks, x.(string))
		offs = append(offs, int(lp["text_offset"].([]any)[i].(float64)))
	}
	check("echo", ch["text"].(string), toks, offs, lp["content"].([]any))
	last := offs[len(offs)-1]
	if want := utf8.RuneCountInString(prompt); last < want {
		t.Errorf("the last generated token at %d, before the prompt's %d characters end", last, want)
	}

	// Streamed, the offsets run on across chunks.
	req, _ := http.NewRequest("POST", ts.URL+"/v1/completions", strings.NewReader(`{"prompt": "`+prompt+`", "max_tokens": 5, "temperature": 0, "echo": true, "logprobs": 1, "stream": true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var text strings.Builder
	var content []any
	toks, offs = nil, nil
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Text     string `json:"text"`
				Logprobs *struct {
					Tokens     []string `json:"tokens"`
					TextOffset []int    `json:"text_offset"`
					Content    []any    `json:"content"`
				} `json:"logprobs"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatal(err)
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Text)
			if c.Logprobs != nil {
				toks = append(toks, c.Logprobs.Tokens...)
				offs = append(offs, c.Logprobs.TextOffset...)
				content = append(content, c.Logprobs.Content...)
			}
		}
	}
	check("stream", text.String(), toks, offs, content)
}

// TestTopLogprobsPastOpenAIs: more than OpenAI's 20 alternatives come
// back when asked for, up to Limits.MaxTopLogprobs.
func TestTopLogprobsPastOpenAIs(t *testing.T) {
	_, ts, _ := newTest(t, Config{})
	code, out := post(t, ts.URL+"/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "logprobs": true, "top_logprobs": 50}`)
	if code != 200 {
		t.Fatalf("status %d: %v", code, out)
	}
	content := out["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)["content"].([]any)
	if len(content) == 0 {
		t.Fatal("no tokens")
	}
	for i, e := range content {
		if n := len(e.(map[string]any)["top_logprobs"].([]any)); n != 50 {
			t.Errorf("token %d: %d alternatives, want 50", i, n)
		}
	}
}

// TestSlowBodiesHoldNoPlace: clients that send half a body and stop are
// not counted among the requests admitted (ten of them kept every other
// request out with 429 for the read timeout); a body that does not
// arrive within the read timeout is a 408.
func TestSlowBodiesHoldNoPlace(t *testing.T) {
	s, err := New(Config{Backend: fixture.New().NewBackend(), Parallel: 1, QueueSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(s)
	ts.Config.ReadTimeout = 2 * time.Second
	ts.Start()
	t.Cleanup(func() { ts.Close(); s.Close() })
	var conns []net.Conn
	for range 6 {
		c, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		fmt.Fprint(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	}
	time.Sleep(100 * time.Millisecond) // the handlers are reading
	if code, out := post(t, ts.URL+"/v1/completions", `{"prompt": "Once", "max_tokens": 1}`); code != http.StatusOK {
		t.Errorf("a whole request beside six half-sent bodies: %d %v", code, out)
	}
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "did not arrive within the server's read timeout") {
			t.Errorf("a half-sent body: %d %s", resp.StatusCode, body)
		}
		c.Close()
	}
}

// TestTypeErrorsNameJSON: a field of the wrong type is named with the
// JSON it wants, not a Go type ("server.chatMessage", "float64").
func TestTypeErrorsNameJSON(t *testing.T) {
	_, ts, _ := newTest(t, Config{})
	for body, want := range map[string]string{
		`{"messages": ["hi"]}`:                       "want a JSON object, got JSON string",
		`{"prompt": "x", "temperature": "hot"}`:      "want a number, got JSON string",
		`{"prompt": "x", "logit_bias": [1]}`:         "want a JSON object, got JSON array",
		`{"prompt": "x", "max_tokens": 1.5}`:         "want an integer, got JSON number",
		`{"prompt": "x", "echo": "yes"}`:             "want true or false, got JSON string",
		`{"messages": [{"role": 1, "content": ""}]}`: "want a JSON string, got JSON number",
	} {
		path := "/v1/completions"
		if strings.Contains(body, "messages") {
			path = "/v1/chat/completions"
		}
		code, out := post(t, ts.URL+path, body)
		msg, _ := out["error"].(map[string]any)["message"].(string)
		if code != http.StatusBadRequest || !strings.Contains(msg, want) {
			t.Errorf("%s: %d %q, want 400 %q", body, code, msg, want)
		}
	}
}

// TestLongPromptRefusedUntokenized: a prompt longer in bytes than the
// context could hold in the longest tokens is refused before it is
// tokenized, with context_length_exceeded.
func TestLongPromptRefusedUntokenized(t *testing.T) {
	s, ts, b := newTest(t, Config{})
	long := strings.Repeat("a", b.ContextSize()*s.longestToken)
	body, _ := json.Marshal(map[string]any{"prompt": long, "max_tokens": 1})
	code, out := post(t, ts.URL+"/v1/completions", string(body))
	e, _ := out["error"].(map[string]any)
	if msg, _ := e["message"].(string); code != http.StatusBadRequest || e["code"] != "context_length_exceeded" || !strings.Contains(msg, "bytes, at least") {
		t.Errorf("%d %v", code, out)
	}
	// One token's bytes shorter, it is tokenized and counted.
	body, _ = json.Marshal(map[string]any{"prompt": long[:len(long)-s.longestToken], "max_tokens": 1})
	_, out = post(t, ts.URL+"/v1/completions", string(body))
	if e, ok := out["error"].(map[string]any); ok && strings.Contains(e["message"].(string), "bytes, at least") {
		t.Errorf("refused untokenized: %v", out)
	}
}

// TestBindErrorNamesField: a constraint that compiles but cannot be
// bound to the model's vocabulary (a token id beyond it) is an error of
// the field that gave it, not of a field "constraint" no request has.
func TestBindErrorNamesField(t *testing.T) {
	_, ts, _ := newTest(t, Config{})
	code, out := post(t, ts.URL+"/v1/completions", `{"prompt": "Once", "max_tokens": 3, "grammar": "root ::= <[99999]>"}`)
	e, _ := out["error"].(map[string]any)
	if code != http.StatusBadRequest || e["param"] != "grammar" || !strings.Contains(e["message"].(string), "outside the vocabulary") {
		t.Errorf("%d %v", code, out)
	}
}

// TestTokenTerminalGrammars: a grammar that asks for an end-of-generation
// token is refused (generation ends on it, before the grammar could);
// one that asks for another special token is kept to by the masks, and
// its output is not judged again as text, which cannot show the token
// (that answered 500, "reins bug").
func TestTokenTerminalGrammars(t *testing.T) {
	_, ts, b := newTest(t, Config{})
	v := b.Vocab()
	body, _ := json.Marshal(map[string]any{"prompt": "Once", "max_tokens": 4, "grammar": fmt.Sprintf(`root ::= "a" <[%d]>`, v.EOS())})
	code, out := post(t, ts.URL+"/v1/completions", string(body))
	e, _ := out["error"].(map[string]any)
	if msg, _ := e["message"].(string); code != http.StatusBadRequest || e["param"] != "grammar" || !strings.Contains(msg, "ends generation") {
		t.Errorf("EOS terminal: %d %v", code, out)
	}
	body, _ = json.Marshal(map[string]any{"prompt": "Once", "max_tokens": 4, "grammar": fmt.Sprintf(`root ::= <[%d]>`, v.BOS())})
	if code, out = post(t, ts.URL+"/v1/completions", string(body)); code != http.StatusOK {
		t.Errorf("BOS terminal: %d %v", code, out)
	}
}

// TestBodyEndsCleanly: the JSON value of a request must be followed by
// the body's end: a body cut short of its Content-Length (the client
// closed its side) is a 400 that says so, not a request served with
// what arrived; junk after the value is a 400; best_of below 1 is a 400
// naming it.
func TestBodyEndsCleanly(t *testing.T) {
	_, ts, _ := newTest(t, Config{})
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"prompt": "Once", "max_tokens": 1}`
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body)+40, body)
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(got), "truncated body") {
		t.Errorf("a body cut short of its Content-Length: %d %s", resp.StatusCode, got)
	}

	// A broken chunked encoding is the transport's fault, not the JSON's.
	c2, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	fmt.Fprint(c2, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
	c2.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err = http.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(got), "the request body could not be read") {
		t.Errorf("a chunk size of zz: %d %s", resp.StatusCode, got)
	}

	for body, want := range map[string]string{
		`{"prompt": "Once", "max_tokens": 1}}`:               "malformed JSON",
		`{"prompt": "Once", "max_tokens": 1} {}`:             "more than one JSON value",
		`{"prompt": "Once", "max_tokens": 1, "best_of": 0}`:  "best_of",
		`{"prompt": "Once", "max_tokens": 1, "best_of": -3}`: "best_of",
	} {
		code, out := post(t, ts.URL+"/v1/completions", body)
		e, _ := out["error"].(map[string]any)
		msg, _ := e["message"].(string)
		param, _ := e["param"].(string)
		if code != http.StatusBadRequest || !strings.Contains(msg+" "+param, want) {
			t.Errorf("%s: %d %v, want 400 %q", body, code, out, want)
		}
	}
	code, out := post(t, ts.URL+"/v1/completions", `{"prompt": "Once", "max_tokens": 1, "best_of": 1} `)
	if code != http.StatusOK {
		t.Errorf("best_of 1 and a trailing space: %d %v", code, out)
	}
}

// TestToolChoiceWithoutTools: with no tools, a tool_choice that a reply
// without a tool call meets ("none", "auto") is served; one that asks
// for a call is a 400 naming tool_choice (TestBadRequests).
func TestToolChoiceWithoutTools(t *testing.T) {
	_, ts, _ := newTest(t, Config{})
	for _, extra := range []string{`"tool_choice": "auto"`, `"tool_choice": "none", "tools": []`, `"tool_choice": null`} {
		code, out := post(t, ts.URL+"/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, `+extra+`}`)
		if code != http.StatusOK {
			t.Errorf("%s: %d %v", extra, code, out)
		}
	}
}

// TestStopCutConstrainedIsLength: a stop string that cuts a constrained
// output before its end gives finish_reason "length" (a client reads
// "stop" as a complete output) and reins.unfinished, streamed or not.
func TestStopCutConstrainedIsLength(t *testing.T) {
	_, ts, _ := newTest(t, Config{})
	body := `{"prompt": "The", "max_tokens": 40, "regex": "ab{20}c", "stop": ["bb"]}`
	code, out := post(t, ts.URL+"/v1/completions", body)
	if code != http.StatusOK {
		t.Fatalf("status %d: %v", code, out)
	}
	ch := out["choices"].([]any)[0].(map[string]any)
	reinsInfo, _ := ch["reins"].(map[string]any)
	if ch["finish_reason"] != "length" || ch["text"] != "ab" && ch["text"] != "a" || !strings.Contains(fmt.Sprint(reinsInfo["unfinished"]), "a stop string cut the constrained output") {
		t.Errorf("a stop string cut the output: %v", ch)
	}
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(strings.Replace(body, `"stop"`, `"stream": true, "stop"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	evs := events(t, resp.Body)
	last := ""
	for _, e := range evs {
		var c map[string]any
		if json.Unmarshal([]byte(e), &c) != nil {
			continue
		}
		if chs, _ := c["choices"].([]any); len(chs) > 0 {
			if f, ok := chs[0].(map[string]any)["finish_reason"].(string); ok {
				last = f
			}
		}
	}
	if last != "length" {
		t.Errorf("streamed: finish_reason %q, want length", last)
	}
}
