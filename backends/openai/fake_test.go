package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/backends/openai"
	"github.com/reins-go/reins/decode"
)

// fake serves h after reading the request body into req.
func fake(t *testing.T, h func(w http.ResponseWriter, r *http.Request, req map[string]any)) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &req)
		h(w, r, req)
	}))
	t.Cleanup(s.Close)
	return s
}

func backend(t *testing.T, url string, opts openai.Options) *openai.Backend {
	opts.Model, opts.URLs = "fake", []string{url}
	if opts.Backoff == 0 {
		opts.Backoff = time.Millisecond
	}
	b, err := openai.New(opts)
	require.NoError(t, err)
	return b
}

// legacy is a /completions answer in the legacy logprobs format (vLLM,
// OpenAI's completions): parallel lists, alternatives as objects.
func legacy(words []string, finish string) string {
	lp := map[string]any{"tokens": words, "token_logprobs": []float64{}, "top_logprobs": []map[string]float64{}, "text_offset": []int{}}
	off := 0
	for i, w := range words {
		x := -0.1 * float64(i+1)
		lp["token_logprobs"] = append(lp["token_logprobs"].([]float64), x)
		lp["top_logprobs"] = append(lp["top_logprobs"].([]map[string]float64), map[string]float64{w: x, "zz": x - 2, "q": x - 1})
		lp["text_offset"] = append(lp["text_offset"].([]int), off)
		off += len([]rune(w))
	}
	b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "text": strings.Join(words, ""), "logprobs": lp, "finish_reason": finish}}})
	return string(b)
}

// ints spells s as the JSON list of its bytes.
func ints(s string) []int {
	out := make([]int, len(s))
	for i := range len(s) {
		out[i] = int(s[i])
	}
	return out
}

// entry is a logprobs.content entry (chat format).
func entry(w string, lp float64) map[string]any {
	return map[string]any{"token": w, "logprob": lp, "bytes": ints(w), "top_logprobs": []any{
		map[string]any{"token": w, "logprob": lp, "bytes": ints(w)},
		map[string]any{"token": "zz", "logprob": lp - 2, "bytes": ints("zz")},
	}}
}

// chat is a /chat/completions answer.
func chat(words []string, finish string) string {
	var content []any
	for i, w := range words {
		content = append(content, entry(w, -0.1*float64(i+1)))
	}
	b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0,
		"message":  map[string]any{"role": "assistant", "content": strings.Join(words, "")},
		"logprobs": map[string]any{"content": content}, "finish_reason": finish}}})
	return string(b)
}

// TestLegacyCompletions: the legacy format's parallel lists become
// tokens with their alternatives, most probable first; the request
// carries what reins asked.
func TestLegacyCompletions(t *testing.T) {
	var got map[string]any
	s := fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) {
		got = req
		assert.Equal(t, "Bearer sk-test", r.Header.Get("Authorization"))
		assert.Equal(t, "/v1/completions", r.URL.Path)
		fmt.Fprint(w, legacy([]string{" upon", " a", " time"}, "length"))
	})
	b := backend(t, s.URL+"/v1", openai.Options{APIKey: "sk-test", TopLogprobs: 5})
	resp, err := b.Continue(context.Background(), decode.TextRequest{Prompt: "Once", Output: " ", MaxTokens: 3, TopLogprobs: 3,
		Sampling: decode.SamplingOptions{Temperature: 0.5, Seed: 7}, Stop: []string{"\n"}})
	require.NoError(t, err)
	assert.Equal(t, "Once ", got["prompt"])
	assert.EqualValues(t, 3, got["max_tokens"])
	assert.EqualValues(t, 3, got["logprobs"])
	assert.EqualValues(t, 7, got["seed"])
	assert.EqualValues(t, 0.5, got["temperature"])
	require.Len(t, resp.Tokens, 3)
	assert.Equal(t, decode.FinishLength, resp.FinishReason)
	tk := resp.Tokens[1]
	assert.Equal(t, " a", tk.Token)
	assert.InDelta(t, -0.2, tk.Logprob, 1e-12)
	require.Len(t, tk.TopLogprobs, 3)
	assert.Equal(t, []string{" a", "q", "zz"}, []string{tk.TopLogprobs[0].Token, tk.TopLogprobs[1].Token, tk.TopLogprobs[2].Token})
}

// TestVLLMSpellings: "bytes:\xNN" tokens and "token_id:N" tokens.
func TestVLLMSpellings(t *testing.T) {
	s := fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) {
		lp := map[string]any{
			"tokens": []string{" caf", `bytes:\xc3`, `bytes:\xa9`}, "token_logprobs": []float64{-0.1, -0.2, -0.3},
			"top_logprobs": []map[string]float64{{" caf": -0.1}, {`bytes:\xc3`: -0.2}, {`bytes:\xa9`: -0.3}}, "text_offset": []int{0, 4, 4}}
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"text": " café", "logprobs": lp, "finish_reason": "stop"}}})
		w.Write(b)
	})
	resp, err := backend(t, s.URL, openai.Options{}).Continue(context.Background(), decode.TextRequest{Prompt: "A", MaxTokens: 3, TopLogprobs: 1})
	require.NoError(t, err)
	require.Len(t, resp.Tokens, 3)
	assert.Equal(t, []byte{0xc3}, []byte(resp.Tokens[1].Bytes))
	assert.Equal(t, []byte{0xa9}, []byte(resp.Tokens[2].Bytes))

	s = fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) {
		e := entry(" up", -0.5)
		e["token"] = "token_id:1234"
		e["top_logprobs"] = []any{map[string]any{"token": "token_id:1234", "logprob": -0.5, "bytes": ints(" up")}}
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": " up"},
			"logprobs": map[string]any{"content": []any{e}}, "finish_reason": "length"}}})
		w.Write(b)
	})
	resp, err = backend(t, s.URL, openai.Options{Chat: true, Bias: true}).Continue(context.Background(),
		decode.TextRequest{Prompt: "A", MaxTokens: 1, TopLogprobs: 1, Bias: map[int]float64{99: -100}})
	require.NoError(t, err)
	assert.Equal(t, 1234, resp.Tokens[0].ID)
	assert.Equal(t, " up", resp.Tokens[0].Token)
}

// TestChatPrefill: the output so far is an assistant message, marked as
// each server wants; a server that cannot continue one says so.
func TestChatPrefill(t *testing.T) {
	var got map[string]any
	s := fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) {
		got = req
		fmt.Fprint(w, chat([]string{" time"}, "length"))
	})
	req := decode.TextRequest{Prompt: "Tell me", Output: "Once upon a", MaxTokens: 1, TopLogprobs: 2}
	for _, c := range []struct {
		p     openai.Prefill
		check func()
	}{
		{openai.PrefillLast, func() { assert.Nil(t, got["continue_final_message"]) }},
		{openai.PrefillVLLM, func() {
			assert.Equal(t, true, got["continue_final_message"])
			assert.Equal(t, false, got["add_generation_prompt"])
		}},
		{openai.PrefillPrefix, func() {
			msgs := got["messages"].([]any)
			assert.Equal(t, true, msgs[len(msgs)-1].(map[string]any)["prefix"])
		}},
	} {
		_, err := backend(t, s.URL, openai.Options{Chat: true, Prefill: c.p, System: "Be brief."}).Continue(context.Background(), req)
		require.NoError(t, err, c.p)
		msgs := got["messages"].([]any)
		require.Len(t, msgs, 3, c.p)
		assert.Equal(t, "system", msgs[0].(map[string]any)["role"])
		assert.Equal(t, "assistant", msgs[2].(map[string]any)["role"])
		assert.Equal(t, "Once upon a", msgs[2].(map[string]any)["content"])
		assert.Equal(t, true, got["logprobs"])
		assert.EqualValues(t, 2, got["top_logprobs"])
		c.check()
	}
	_, err := backend(t, s.URL, openai.Options{Chat: true, Prefill: openai.PrefillNone}).Continue(context.Background(), req)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot continue an assistant message")
}

// sse writes events for words, then [DONE] unless cut.
func sse(w http.ResponseWriter, words []string, delay time.Duration, sent *atomic.Int32, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	for i, word := range words {
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": word},
			"logprobs": map[string]any{"content": []any{entry(word, -0.1*float64(i+1))}}}}})
		if _, err := fmt.Fprintf(w, ": keep-alive\n\ndata: %s\n\n", b); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		sent.Add(1)
		select {
		case <-r.Context().Done():
			return
		case <-time.After(delay):
		}
	}
	fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
}

// TestStreamStopsEarly: a streamed answer reaches the generation token
// by token, and the first refused token ends the request, which spares
// the server the rest.
func TestStreamStopsEarly(t *testing.T) {
	var sent atomic.Int32
	var calls atomic.Int32
	var left sync.WaitGroup
	s := fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) {
		if calls.Add(1) == 1 {
			left.Add(1)
			defer left.Done()
			sse(w, []string{" up", "on", " a", " tim", "e", "!", " It", " was", " a", " day"}, 20*time.Millisecond, &sent, r)
			return
		}
		sse(w, []string{"."}, 0, &sent, r)
	})
	m := reins.New(backend(t, s.URL, openai.Options{Chat: true, Stream: true}))
	re, err := reins.Regex(` upon a time[.]`)
	require.NoError(t, err)
	out, err := m.Generate(context.Background(), "Once", reins.Options{Constraint: re, MaxTokens: 50})
	require.NoError(t, err)
	assert.Equal(t, " upon a time.", out.Text)
	left.Wait()
	assert.Less(t, int(sent.Load()), 9, "the server stopped soon after the refused token")
	assert.Equal(t, 5, out.Usage.Kept)
}

// TestEcho: scoring with echo takes the text's tokens after the prompt.
func TestEcho(t *testing.T) {
	s := fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) {
		assert.Equal(t, true, req["echo"])
		assert.Equal(t, "Lily was very happy", req["prompt"])
		words := []string{"Lily", " was", " very", " happy", "."}
		lp := map[string]any{"tokens": words, "token_logprobs": []any{nil, -1.0, -2.0, -3.0, -0.5},
			"top_logprobs": []any{nil, map[string]float64{" was": -1}, map[string]float64{" very": -2}, map[string]float64{" happy": -3, " sad": -3.5}, map[string]float64{".": -0.5}},
			"text_offset":  []int{0, 4, 8, 13, 19}}
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"text": "Lily was very happy.", "logprobs": lp, "finish_reason": "length"}}})
		w.Write(b)
	})
	m := reins.New(backend(t, s.URL, openai.Options{Echo: true}))
	res, err := m.Score(context.Background(), " happy", reins.ScoreOptions{Context: "Lily was very", TopLogprobs: 2})
	require.NoError(t, err)
	require.Len(t, res.Tokens, 1)
	assert.Equal(t, " happy", res.Tokens[0].Token)
	assert.InDelta(t, -3, res.Sum, 1e-12)
	assert.Len(t, res.Tokens[0].TopLogprobs, 2)
	sel, err := m.Choose(context.Background(), "Lily was very", []string{" happy"}, reins.ChooseOptions{})
	require.NoError(t, err)
	assert.False(t, sel.Options[0].TopK, "exact with echo")

	_, err = reins.New(backend(t, s.URL, openai.Options{})).Score(context.Background(), "x", reins.ScoreOptions{})
	assert.ErrorIs(t, err, decode.ErrCannotScore)
}

// TestEchoBoundaryPastNonASCII: where the text begins after a prompt
// with non-ASCII characters is found from the tokens' own bytes, whether
// the server counts text_offset in characters (OpenAI, vLLM), in bytes,
// or not at all.
func TestEchoBoundaryPastNonASCII(t *testing.T) {
	for name, offs := range map[string][]int{"characters": {0, 2, 6, 7, 11}, "bytes": {0, 2, 6, 8, 12}, "zeros": {0, 0, 0, 0, 0}} {
		s := fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) {
			assert.Equal(t, "Le café est", req["prompt"])
			lp := map[string]any{"tokens": []string{"Le", " caf", "é", " est", "."}, "token_logprobs": []any{nil, -1.0, -2.0, -3.0, -0.5},
				"top_logprobs": []any{nil, map[string]float64{" caf": -1}, map[string]float64{"é": -2}, map[string]float64{" est": -3}, map[string]float64{".": -0.5}},
				"text_offset":  offs}
			b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"text": "Le café est.", "logprobs": lp, "finish_reason": "length"}}})
			w.Write(b)
		})
		res, err := reins.New(backend(t, s.URL, openai.Options{Echo: true})).Score(context.Background(), " est", reins.ScoreOptions{Context: "Le café"})
		require.NoError(t, err, name)
		require.Len(t, res.Tokens, 1, name)
		assert.Equal(t, " est", res.Tokens[0].Token, name)
		assert.InDelta(t, -3, res.Sum, 1e-12, name)
	}

	// Tokens that do not spell the text (a server that normalises "é"
	// to "e"): the boundary comes from text_offset in characters.
	s := fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) {
		lp := map[string]any{"tokens": []string{"Le", " caf", "e", " est", "."}, "token_logprobs": []any{nil, -1.0, -2.0, -3.0, -0.5},
			"top_logprobs": []any{nil, map[string]float64{" caf": -1}, map[string]float64{"e": -2}, map[string]float64{" est": -3}, map[string]float64{".": -0.5}},
			"text_offset":  []int{0, 2, 6, 7, 11}}
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"text": "Le cafe est.", "logprobs": lp, "finish_reason": "length"}}})
		w.Write(b)
	})
	res, err := reins.New(backend(t, s.URL, openai.Options{Echo: true})).Score(context.Background(), " est", reins.ScoreOptions{Context: "Le café"})
	require.NoError(t, err)
	require.Len(t, res.Tokens, 1)
	assert.Equal(t, " est", res.Tokens[0].Token)
	assert.InDelta(t, -3, res.Sum, 1e-12)

	// Chat-shaped logprobs (content[], no text_offset) that do not spell
	// the text: an error, not a guess.
	s = fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) {
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"text": "Le cafe est.",
			"logprobs": map[string]any{"content": []any{entry("Le", -0.1), entry(" cafe", -1), entry(" est", -3)}}, "finish_reason": "length"}}})
		w.Write(b)
	})
	_, err = reins.New(backend(t, s.URL, openai.Options{Echo: true})).Score(context.Background(), " est", reins.ScoreOptions{Context: "Le café"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "text_offset")
}

// TestOpenAIFaults: what a server gets wrong is a clear error (or, for
// a busy server, a correct retry), never tokens.
func TestOpenAIFaults(t *testing.T) {
	var calls atomic.Int32
	s := fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error": {"message": "Rate limit reached", "type": "requests"}}`)
			return
		}
		fmt.Fprint(w, chat([]string{" up"}, "length"))
	})
	resp, err := backend(t, s.URL, openai.Options{Chat: true}).Continue(context.Background(), decode.TextRequest{Prompt: "A", MaxTokens: 1, TopLogprobs: 1})
	require.NoError(t, err)
	assert.Len(t, resp.Tokens, 1)
	assert.Equal(t, int32(2), calls.Load())

	noLogprobs := `{"choices":[{"message":{"content":" up"},"finish_reason":"length"}]}`
	mismatch := `{"choices":[{"message":{"content":" up"},"logprobs":{"content":[{"token":" UP","logprob":-0.1,"bytes":[32,117,112],"top_logprobs":[{"token":" up","logprob":-0.1,"bytes":[32,117,112]}]}]},"finish_reason":"length"}]}`
	noTop := `{"choices":[{"message":{"content":" up"},"logprobs":{"content":[{"token":" up","logprob":-0.1,"bytes":[32,117,112]}]},"finish_reason":"length"}]}`
	for _, c := range []struct{ name, body, want string }{
		{"no logprobs", noLogprobs, "without logprobs"},
		{"token and bytes differ", mismatch, "does not match its bytes"},
		{"no top_logprobs", noTop, "without the top_logprobs"},
		{"truncated", chat([]string{" up"}, "length")[:30], "not JSON"},
		{"malformed", `{"choices": "none"}`, "not JSON"},
		{"no choices", `{"choices": []}`, "no choices"},
		{"error object", `{"error": {"message": "context length exceeded"}}`, "context length exceeded"},
		{"text differs", strings.Replace(chat([]string{" up"}, "length"), `"content":" up"`, `"content":" down"`, 1), "do not spell"},
		{"another choice", strings.Replace(chat([]string{" up"}, "length"), `"index":0`, `"index":1`, 1), "choice 1 of 1"},
		{"two choices", strings.Replace(chat([]string{" up"}, "length"), `"choices":[`, `"choices":[{"index":1,"message":{"content":""}},`, 1), "choice 0 of 2"},
		{"more tokens than asked", chat([]string{" up", " up"}, "length"), "2 tokens, more than the 1 asked for"},
		{"alternatives without end", strings.Replace(chat([]string{" up"}, "length"), `"top_logprobs":[`, `"top_logprobs":[`+strings.Repeat(`{"token":"x","logprob":-9,"bytes":[120]},`, 30), 1), "more than the 21 it may"},
		{"below any model", strings.Replace(chat([]string{" up"}, "length"), `"logprob":-0.1`, `"logprob":-1.7e308`, 1), "which no model gives"},
	} {
		s := fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) { fmt.Fprint(w, c.body) })
		resp, err := backend(t, s.URL, openai.Options{Chat: true}).Continue(context.Background(), decode.TextRequest{Prompt: "A", MaxTokens: 1, TopLogprobs: 1})
		require.Error(t, err, c.name)
		assert.Nil(t, resp, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}

	// An "error" field that says nothing went wrong is no error.
	for _, e := range []string{"false", `""`, "{}"} {
		s := fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) {
			fmt.Fprint(w, strings.Replace(chat([]string{" up"}, "length"), `{"choices"`, `{"error":`+e+`,"choices"`, 1))
		})
		resp, err := backend(t, s.URL, openai.Options{Chat: true}).Continue(context.Background(), decode.TextRequest{Prompt: "A", MaxTokens: 1, TopLogprobs: 1})
		require.NoError(t, err, e)
		assert.Len(t, resp.Tokens, 1, e)
	}

	// A stream that ends without [DONE] or a finish reason is truncated.
	s = fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) {
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"delta": map[string]any{"content": " up"},
			"logprobs": map[string]any{"content": []any{entry(" up", -0.1)}}}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	})
	_, err = backend(t, s.URL, openai.Options{Chat: true, Stream: true}).Continue(context.Background(), decode.TextRequest{Prompt: "A", MaxTokens: 4, TopLogprobs: 1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "truncated")

	// Cancellation returns within 100 ms.
	hang := fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) { <-r.Context().Done() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan time.Time, 1)
	go func() {
		backend(t, hang.URL, openai.Options{}).Continue(ctx, decode.TextRequest{Prompt: "A", MaxTokens: 1})
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

// TestOptions: options are checked, and the API key comes from the
// environment when not given.
func TestOptions(t *testing.T) {
	_, err := openai.New(openai.Options{})
	assert.Error(t, err)
	_, err = openai.New(openai.Options{Model: "m", ExtraBody: map[string]any{"prompt": "x"}})
	assert.Error(t, err)
	_, err = openai.New(openai.Options{Model: "m", URLs: []string{"ftp://x"}})
	assert.Error(t, err)
	t.Setenv("OPENAI_API_KEY", "sk-env")
	var auth string
	s := fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) {
		auth = r.Header.Get("Authorization")
		assert.Equal(t, "yes", r.Header.Get("X-Extra"))
		fmt.Fprint(w, legacy([]string{"a"}, "length"))
	})
	b := backend(t, s.URL, openai.Options{Header: http.Header{"X-Extra": {"yes"}}})
	_, err = b.Continue(context.Background(), decode.TextRequest{Prompt: "A", MaxTokens: 1})
	require.NoError(t, err)
	assert.Equal(t, "Bearer sk-env", auth)
	p, err := openai.ParsePrefill("vllm")
	require.NoError(t, err)
	assert.Equal(t, openai.PrefillVLLM, p)
}

// TestEchoSpellsText: placed by text_offset (tokens that do not spell
// the prompt and text), the tokens scored must still spell the text up to
// accents; an answer about other words is refused, and one far longer
// than an echo of the request can be is refused before it is decoded.
func TestEchoSpellsText(t *testing.T) {
	echo := func(tokens []string, lps []any, offs []int, text string) string {
		lp := map[string]any{"tokens": tokens, "token_logprobs": lps, "text_offset": offs}
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"text": text, "logprobs": lp, "finish_reason": "length"}}})
		return string(b)
	}
	for _, c := range []struct{ name, body, want string }{
		{"other words", echo([]string{"Lily", " was", " very", " sad"}, []any{nil, -1.0, -2.0, -0.01}, []int{0, 4, 8, 13}, "Lily was very sad"), `scores the tokens " sad", which do not spell the text " happy"`},
		{"prompt tokens pulled in", echo([]string{"Lilly", " was", " very", " happy"}, []any{nil, -1.0, -2.0, -3.0}, []int{0, 13, 13, 13}, "Lilly was very happy"), `scores the tokens " was very happy"`},
		{"too many tokens", `{"choices":[{"logprobs":{"content":[` + strings.Repeat(`{},`, 100) + `{}]}}]}`, "101 tokens, more than the 23"},
		// Many tiny values, a line each (lines are bounded on their own),
		// are refused before they are decoded.
		{"too many objects", `{"choices":[{"logprobs":{"content":[` + strings.Repeat("{},\n", 400000) + `{}]}}]}`, "more than 1099 objects and arrays"},
		{"too many values", `{"choices":[{"logprobs":{"text_offset":[` + strings.Repeat("0,\n", 400000) + `0]}}]}`, "more than 39480 values"},
		{"too long", `{"choices":[{"text":"` + strings.Repeat("x", 3<<20) + `"}]}`, "longer than"},
	} {
		s := fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) { fmt.Fprint(w, c.body) })
		_, err := reins.New(backend(t, s.URL, openai.Options{Echo: true})).Score(context.Background(), " happy", reins.ScoreOptions{Context: "Lily was very"})
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
	// The most an echo can hold passes the bounds: a token per byte, and
	// the spare tokens (three that spell nothing, the one generated), in
	// the content shape, each with as many alternatives as a server may
	// give (one more than asked), each with its bytes.
	long := strings.Repeat("Lily was very ", 20)
	for _, top := range []int{1, 5, 20} {
		s := fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) {
			var content []any
			for _, c := range slices.Concat([]string{"", "", ""}, strings.Split(long+" happy", ""), []string{"!"}) {
				e := entry(c, -0.1)
				alts := []any{map[string]any{"token": c, "logprob": -0.1, "bytes": ints(c)}}
				for k := range top {
					alts = append(alts, map[string]any{"token": fmt.Sprint(k), "logprob": -3.0 - float64(k), "bytes": ints(fmt.Sprint(k))})
				}
				e["top_logprobs"] = alts
				content = append(content, e)
			}
			b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"text": long + " happy!", "logprobs": map[string]any{"content": content}, "finish_reason": "length"}}})
			w.Write(b)
		})
		res, err := reins.New(backend(t, s.URL, openai.Options{Echo: true, TopLogprobs: top})).Score(context.Background(), " happy", reins.ScoreOptions{Context: long})
		require.NoError(t, err, top)
		assert.Len(t, res.Tokens, 6, top)
	}

	// Accents a server drops still spell the text.
	s := fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) {
		fmt.Fprint(w, echo([]string{"Le", " caf", "e"}, []any{nil, -1.0, -2.0}, []int{0, 2, 6}, "Le cafe"))
	})
	res, err := reins.New(backend(t, s.URL, openai.Options{Echo: true})).Score(context.Background(), "é", reins.ScoreOptions{Context: "Le caf"})
	require.NoError(t, err)
	require.Len(t, res.Tokens, 1)
	assert.Equal(t, "e", res.Tokens[0].Token)
}

// TestNoRedirect: a redirect is not followed (the request, its API key
// with it, goes only to the URL given); the error says where the server
// points. A Retry-After past MaxBackoff, however large, fails at once.
func TestNoRedirect(t *testing.T) {
	var elsewhere atomic.Int32
	other := fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) {
		elsewhere.Add(1)
		fmt.Fprint(w, chat([]string{" up"}, "length"))
	})
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		s := fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) {
			http.Redirect(w, r, other.URL+"/chat/completions", code)
		})
		_, err := backend(t, s.URL, openai.Options{Chat: true, APIKey: "sk-secret"}).Continue(context.Background(), decode.TextRequest{Prompt: "A", MaxTokens: 1, TopLogprobs: 1})
		require.Error(t, err, code)
		assert.Contains(t, err.Error(), "redirects to \""+other.URL, code)
	}
	assert.Zero(t, elsewhere.Load(), "nothing reached the other server")

	for _, after := range []string{"1e7", "99999999999999999999"} {
		var calls atomic.Int32
		s := fake(t, func(w http.ResponseWriter, r *http.Request, req map[string]any) {
			calls.Add(1)
			w.Header().Set("Retry-After", after)
			w.WriteHeader(http.StatusTooManyRequests)
		})
		_, err := backend(t, s.URL, openai.Options{Chat: true}).Continue(context.Background(), decode.TextRequest{Prompt: "A", MaxTokens: 1, TopLogprobs: 1})
		require.Error(t, err, after)
		assert.Contains(t, err.Error(), "not retried: it asks for a wait of", after)
		assert.Equal(t, int32(1), calls.Load(), after)
	}
}
