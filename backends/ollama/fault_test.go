package ollama_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/backends/ollama"
	"github.com/reins-go/reins/decode"
)

// fakeToken is one token of a fake answer, with two alternatives.
type fakeToken struct {
	Token       string    `json:"token"`
	Logprob     float64   `json:"logprob"`
	Bytes       []int     `json:"bytes,omitempty"`
	TopLogprobs []fakeAlt `json:"top_logprobs,omitempty"`
}

type fakeAlt struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes,omitempty"`
}

func byteInts(s string) []int {
	out := make([]int, len(s))
	for i := range len(s) {
		out[i] = int(s[i])
	}
	return out
}

// tok makes a well-formed token with two alternatives after it.
func tok(s string, lp float64) fakeToken {
	return fakeToken{Token: s, Logprob: lp, Bytes: byteInts(s), TopLogprobs: []fakeAlt{
		{Token: s, Logprob: lp, Bytes: byteInts(s)},
		{Token: "zz", Logprob: lp - 1, Bytes: byteInts("zz")},
	}}
}

// line is one answer line (NDJSON, or the whole answer unstreamed).
func line(text string, done bool, toks ...fakeToken) string {
	m := map[string]any{"model": "fake", "response": text, "done": done, "logprobs": toks}
	if done {
		m["done_reason"] = "length"
	}
	b, _ := json.Marshal(m)
	return string(b) + "\n"
}

// answer is a whole well-formed answer spelling words.
func answer(words ...string) string {
	var toks []fakeToken
	for _, w := range words {
		toks = append(toks, tok(w, -0.5))
	}
	return line(strings.Join(words, ""), true, toks...)
}

// fake serves h; the request body is read first, so that the server
// notices a client that leaves (it watches the connection only then).
func fake(t *testing.T, h http.HandlerFunc) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func backend(t *testing.T, url string, opts ollama.Options) *ollama.Backend {
	opts.Model, opts.URLs = "fake", []string{url}
	if opts.Backoff == 0 {
		opts.Backoff = time.Millisecond
	}
	b, err := ollama.New(opts)
	require.NoError(t, err)
	return b
}

func continue1(b *ollama.Backend, ctx context.Context) (*decode.TextResponse, error) {
	return b.Continue(ctx, decode.TextRequest{Prompt: "Once", MaxTokens: 8, TopLogprobs: 2})
}

// TestRetryAfter: 429 and 503 with Retry-After are tried again after the
// wait the server asks for, and the answer is the next one's.
func TestRetryAfter(t *testing.T) {
	for _, code := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		var calls atomic.Int32
		var first time.Time
		var waited time.Duration
		s := fake(t, func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				first = time.Now()
				w.Header().Set("Retry-After", "1")
				http.Error(w, `{"error":"busy"}`, code)
				return
			}
			waited = time.Since(first)
			fmt.Fprint(w, answer(" upon", " a"))
		})
		resp, err := continue1(backend(t, s.URL, ollama.Options{}), context.Background())
		require.NoError(t, err, code)
		assert.Equal(t, int32(2), calls.Load())
		assert.GreaterOrEqual(t, waited, time.Second, "Retry-After honoured")
		require.Len(t, resp.Tokens, 2)
		assert.Equal(t, " upon", resp.Tokens[0].Token)
	}
}

// TestRetriesBounded: a server that always fails is tried 1+Retries
// times with backoff, then the error says what it answered.
func TestRetriesBounded(t *testing.T) {
	var calls atomic.Int32
	s := fake(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, `{"error":"model runner crashed"}`, http.StatusInternalServerError)
	})
	_, err := continue1(backend(t, s.URL, ollama.Options{Retries: 2}), context.Background())
	require.Error(t, err)
	assert.Equal(t, int32(3), calls.Load())
	assert.Contains(t, err.Error(), "HTTP 500")
	assert.Contains(t, err.Error(), "model runner crashed")

	// A client error is not tried again.
	calls.Store(0)
	s = fake(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, `{"error":"model 'fake' not found"}`, http.StatusNotFound)
	})
	_, err = continue1(backend(t, s.URL, ollama.Options{}), context.Background())
	require.Error(t, err)
	assert.Equal(t, int32(1), calls.Load())
	assert.Contains(t, err.Error(), "not found")

	// A Retry-After beyond MaxBackoff fails at once, saying so.
	s = fake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		http.Error(w, "slow down", http.StatusTooManyRequests)
	})
	start := time.Now()
	_, err = continue1(backend(t, s.URL, ollama.Options{}), context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1h0m0s")
	assert.Less(t, time.Since(start), 5*time.Second)
}

// TestTimeout: a server that does not answer in time is an error that
// says so.
func TestTimeout(t *testing.T) {
	s := fake(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	start := time.Now()
	_, err := continue1(backend(t, s.URL, ollama.Options{Timeout: 100 * time.Millisecond, Retries: -1}), context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no answer within 100ms")
	assert.Less(t, time.Since(start), 2*time.Second)

	// Idle: headers, then nothing.
	s = fake(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	_, err = continue1(backend(t, s.URL, ollama.Options{IdleTimeout: 100 * time.Millisecond, Retries: -1}), context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no answer or line of it from the server within 100ms")
}

// TestCancel: cancelling the context returns within 100 ms, whether the
// server has not answered or waits to be tried again.
func TestCancel(t *testing.T) {
	hang := fake(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	busy := fake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "5")
		http.Error(w, "busy", http.StatusServiceUnavailable)
	})
	for _, s := range []*httptest.Server{hang, busy} {
		ctx, cancel := context.WithCancel(context.Background())
		b := backend(t, s.URL, ollama.Options{MaxBackoff: time.Minute})
		done := make(chan time.Time, 1)
		go func() {
			continue1(b, ctx)
			done <- time.Now()
		}()
		time.Sleep(50 * time.Millisecond)
		at := time.Now()
		cancel()
		select {
		case end := <-done:
			assert.Less(t, end.Sub(at), 100*time.Millisecond)
		case <-time.After(time.Second):
			t.Fatal("Continue did not return after the cancellation")
		}
	}
	// Through the front door: an *UnfinishedError that wraps the cause.
	m := reins.New(backend(t, hang.URL, ollama.Options{}))
	re, err := reins.Regex(`[a-z ]+\.`)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = m.Generate(ctx, "Once", reins.Options{Constraint: re})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, reins.ErrUnfinished)
	assert.Less(t, time.Since(start), 150*time.Millisecond)
}

// reset answers with the first line of a stream and then resets the
// connection.
func reset(w http.ResponseWriter, first string) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(200)
	fmt.Fprint(w, first)
	w.(http.Flusher).Flush()
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0) // RST, not FIN
	}
	conn.Close()
}

// TestResetMidStream: a streamed answer cut by a reset keeps the tokens
// that came, and the generation asks again from there; an unstreamed
// one cut before its end is tried again whole.
func TestResetMidStream(t *testing.T) {
	var calls atomic.Int32
	s := fake(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Prompt string `json:"prompt"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if calls.Add(1) == 1 {
			reset(w, line(" upon a", false, tok(" upon", -0.1), tok(" a", -0.2)))
			return
		}
		if req.Prompt != "Once upon a" {
			http.Error(w, "wrong prompt "+req.Prompt, 400)
			return
		}
		fmt.Fprint(w, line(" time.", false, tok(" time", -0.3), tok(".", -0.4)))
		fmt.Fprint(w, line("", true))
	})
	m := reins.New(backend(t, s.URL, ollama.Options{Stream: true}))
	re, err := reins.Regex(` upon a time\.`)
	require.NoError(t, err)
	out, err := m.Generate(context.Background(), "Once", reins.Options{Constraint: re, MaxTokens: 8})
	require.NoError(t, err)
	assert.Equal(t, " upon a time.", out.Text)
	assert.Equal(t, 1, out.Usage.Broken)
	assert.Equal(t, 2, out.Usage.Requests)

	calls.Store(0)
	s = fake(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			full := answer(" upon", " a")
			reset(w, full[:len(full)/2])
			return
		}
		fmt.Fprint(w, answer(" upon", " a"))
	})
	resp, err := continue1(backend(t, s.URL, ollama.Options{}), context.Background())
	require.NoError(t, err)
	assert.Len(t, resp.Tokens, 2)
	assert.Equal(t, int32(2), calls.Load())
}

// TestMalformedAnswers: what a server gets wrong is a clear error, never
// tokens.
func TestMalformedAnswers(t *testing.T) {
	bad := tok(" upon", -0.1)
	bad.Bytes = byteInts(" uPon")
	noTop := tok(" upon", -0.1)
	noTop.TopLogprobs = nil
	positive := tok(" upon", 2)
	for _, c := range []struct{ name, body, want string }{
		{"truncated", answer(" upon", " a")[:40], "not JSON"},
		{"malformed", `{"response": 5, "done": true}` + "\n", "not JSON"},
		{"not done", line(" upon", false, tok(" upon", -0.1)), "truncated"},
		{"bytes differ", line(" upon", true, bad), "does not match its bytes"},
		{"no top_logprobs", line(" upon", true, noTop), "without the top_logprobs"},
		{"text differs", line(" upon a", true, tok(" upon", -0.1), tok(" b", -0.1)), "do not spell"},
		{"positive logprob", line(" upon", true, positive), "log-probability 2"},
		{"error line", `{"error":"out of memory"}` + "\n", "out of memory"},
		{"error object", `{"error":{"message":"model is loading"}}` + "\n", "reports an error: model is loading"},
		{"too many tokens", answer(" a", " b", " c", " d", " e", " f", " g", " h", " i"), "more than the 8 tokens"},
	} {
		s := fake(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, c.body) })
		resp, err := continue1(backend(t, s.URL, ollama.Options{}), context.Background())
		require.Error(t, err, c.name)
		assert.Nil(t, resp, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
	// An answer larger than the bound is refused, not read whole.
	s := fake(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"response":"`+strings.Repeat("a", 1<<20)+`"}`)
	})
	_, err := continue1(backend(t, s.URL, ollama.Options{MaxResponseBytes: 1 << 16}), context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "longer than 65536 bytes")
}

// TestSplitCharacter: Ollama's JSON puts U+FFFD for the bytes of tokens
// that split a character (and derives "bytes" from that); the backend
// takes the bytes from the answer's text and merges the run.
func TestSplitCharacter(t *testing.T) {
	fffd := "\uFFFD"
	s := fake(t, func(w http.ResponseWriter, r *http.Request) {
		a, b := tok(fffd, -0.5), tok(fffd, -0.25)
		a.TopLogprobs = append(a.TopLogprobs, fakeAlt{Token: fffd, Logprob: -3, Bytes: byteInts(fffd)})
		fmt.Fprint(w, line(" café!", true, tok(" caf", -0.1), a, b, tok("!", -0.2)))
	})
	resp, err := continue1(backend(t, s.URL, ollama.Options{}), context.Background())
	require.NoError(t, err)
	require.Len(t, resp.Tokens, 3)
	assert.Equal(t, "é", resp.Tokens[1].Token)
	assert.Equal(t, []byte("é"), []byte(resp.Tokens[1].Bytes))
	assert.InDelta(t, -0.75, resp.Tokens[1].Logprob, 1e-9)
	assert.Empty(t, resp.Tokens[1].TopLogprobs)
}

// TestRoundRobin: requests go to the endpoints in turn; one that fails
// is left out, and used again once its health check passes.
func TestRoundRobin(t *testing.T) {
	var a, b atomic.Int32
	var down atomic.Bool
	down.Store(true)
	sa := fake(t, func(w http.ResponseWriter, r *http.Request) {
		a.Add(1)
		fmt.Fprint(w, answer(" a"))
	})
	sb := fake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/version" {
			if down.Load() {
				http.Error(w, "down", 503)
				return
			}
			fmt.Fprint(w, `{"version":"0.17.4"}`)
			return
		}
		b.Add(1)
		if down.Load() {
			http.Error(w, "down", 503)
			return
		}
		fmt.Fprint(w, answer(" b"))
	})
	be, err := ollama.New(ollama.Options{Model: "fake", URLs: []string{sa.URL, sb.URL}, Backoff: time.Millisecond, Cooldown: cooldown})
	require.NoError(t, err)
	for range 6 {
		_, err := continue1(be, context.Background())
		require.NoError(t, err)
	}
	assert.Equal(t, int32(1), b.Load(), "the failing endpoint is tried once, then left out")
	assert.Equal(t, int32(6), a.Load())
	down.Store(false)
	time.Sleep(cooldown + 50*time.Millisecond)
	for range 4 {
		_, err := continue1(be, context.Background())
		require.NoError(t, err)
	}
	assert.Equal(t, int32(3), b.Load(), "back in turn once healthy")
}

// cooldown is how long a failed endpoint rests here.
const cooldown = 200 * time.Millisecond

// TestFaultyServerNeverInvalid: through the front door, a server whose
// tokens never fit the constraint gives an error that says where and
// why, never an output outside the language.
func TestFaultyServerNeverInvalid(t *testing.T) {
	s := fake(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, answer("#", "#"))
	})
	m := reins.New(backend(t, s.URL, ollama.Options{}))
	re, err := reins.Regex(`[0-9]+`)
	require.NoError(t, err)
	out, err := m.Generate(context.Background(), "Once", reins.Options{Constraint: re})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "expected '0'-'9'")
	if out != nil {
		assert.Empty(t, out.Text)
	}
}
