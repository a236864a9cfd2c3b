// Package openai is reins' backend for any OpenAI-compatible server:
// OpenAI itself, vLLM, SGLang, TGI, llama.cpp's server, Ollama's /v1.
// It continues raw text through /completions, or a conversation through
// /chat/completions (the output so far an assistant message the server
// continues, where it can: see Prefill), each token with its
// log-probability and up to Options.TopLogprobs alternatives. It
// implements decode.TextBackend, and decode.PromptScorer for a server
// that echoes a prompt with its log-probabilities (Options.Echo):
// reins.New(b) gives a Model on which generation, choice, scoring and
// JSON extraction work as on a local one.
//
// A server reports a token's bytes ("bytes", chat format) or only its
// text (the legacy completions format): bytes are checked against the
// text, and a token whose bytes its JSON could not carry (U+FFFD) takes
// them from the answer's text. vLLM's "bytes:\xNN" tokens and
// "token_id:N" tokens (return_tokens_as_token_ids) are understood.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/reins-go/reins/backends/internal/remote"
	"github.com/reins-go/reins/decode"
)

// DefaultURL is OpenAI's API.
const DefaultURL = "https://api.openai.com/v1"

// DefaultTopLogprobs is the most alternatives OpenAI's chat API returns
// per token, and the default of Options.TopLogprobs.
const DefaultTopLogprobs = 20

// Prefill says how a chat server continues an assistant message that the
// conversation ends with.
type Prefill int

const (
	// PrefillLast ends the conversation with the assistant message; the
	// server continues it (llama.cpp's server, Ollama).
	PrefillLast Prefill = iota
	// PrefillVLLM also sends continue_final_message: true and
	// add_generation_prompt: false (vLLM, SGLang).
	PrefillVLLM
	// PrefillPrefix marks the message "prefix": true (DeepSeek, Mistral).
	PrefillPrefix
	// PrefillNone: the server cannot continue a message (OpenAI's own
	// chat API); only answers from the start can be asked for, and a
	// constrained output that needs a second request fails.
	PrefillNone
)

func (p Prefill) String() string {
	switch p {
	case PrefillLast:
		return "last"
	case PrefillVLLM:
		return "vllm"
	case PrefillPrefix:
		return "prefix"
	case PrefillNone:
		return "none"
	}
	return fmt.Sprintf("Prefill(%d)", int(p))
}

// ParsePrefill reads a Prefill by its String.
func ParsePrefill(s string) (Prefill, error) {
	for p := PrefillLast; p <= PrefillNone; p++ {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("prefill %q: want last, vllm, prefix or none", s)
}

// Options configures a Backend. Model is required; the zero value of
// every other field is a sensible default.
type Options struct {
	// Model is the model name the server knows.
	Model string
	// URLs are the servers' base URLs, API version included
	// ("http://127.0.0.1:8000/v1"), taken in turn; empty means
	// OPENAI_BASE_URL, else DefaultURL.
	URLs []string
	// APIKey is sent as a bearer token; empty means OPENAI_API_KEY (none
	// when that is empty too).
	APIKey string
	// Header is sent with every request (organisation, project, ...).
	Header http.Header
	// Chat asks /chat/completions (the prompt is a user message) instead
	// of /completions.
	Chat bool
	// System is the system message with Chat.
	System string
	// Prefill is how the chat server continues the output.
	Prefill Prefill
	// TopLogprobs is the most alternatives the server returns per token
	// (DefaultTopLogprobs; OpenAI's legacy completions return 5).
	TopLogprobs int
	// Echo: the server echoes a prompt with its log-probabilities on
	// /completions (vLLM; OpenAI's legacy models): Score works, and
	// Choose is exact.
	Echo bool
	// Bias: the server takes logit_bias by token id.
	Bias bool
	// ResponseFormat: the server keeps an output to a JSON Schema
	// itself (response_format json_schema), asked on a JSON Schema
	// constraint's first request; reins checks every byte anyway.
	ResponseFormat bool
	// Stream asks for streamed answers (server-sent events): tokens
	// reach the generation as they come, and an answer it stops ends
	// there, which saves the server the rest.
	Stream bool
	// ExtraBody are more fields sent with every request (vLLM's top_k,
	// repetition_penalty, ...). They may not replace reins' own.
	ExtraBody map[string]any
	// HTTPClient, Timeout, IdleTimeout, Retries, Backoff, MaxBackoff,
	// MaxResponseBytes, Cooldown: see backends/internal/remote.Options (a
	// failed server rests Cooldown, then is used again once GET /models
	// answers).
	HTTPClient       *http.Client
	Timeout          time.Duration
	IdleTimeout      time.Duration
	Retries          int
	Backoff          time.Duration
	MaxBackoff       time.Duration
	MaxResponseBytes int64
	Cooldown         time.Duration
}

// Backend is an OpenAI-compatible server serving one model. It is safe
// for concurrent use.
type Backend struct {
	opts Options
	c    *remote.Client
}

var (
	_ decode.TextBackend  = (*Backend)(nil)
	_ decode.PromptScorer = (*Backend)(nil)
)

// reservedBody are the fields reins sets.
var reservedBody = []string{"model", "prompt", "messages", "max_tokens", "temperature", "top_p", "seed", "logprobs",
	"top_logprobs", "stop", "stream", "echo", "logit_bias", "response_format"}

// New checks opts and returns a Backend. It does not contact the server.
func New(opts Options) (*Backend, error) {
	if strings.TrimSpace(opts.Model) == "" {
		return nil, errors.New("openai: no model name (Options.Model)")
	}
	switch {
	case opts.TopLogprobs == 0:
		opts.TopLogprobs = DefaultTopLogprobs
	case opts.TopLogprobs < 0:
		return nil, fmt.Errorf("openai: TopLogprobs %d: want ≥ 0", opts.TopLogprobs)
	}
	if opts.Prefill < PrefillLast || opts.Prefill > PrefillNone {
		return nil, fmt.Errorf("openai: %v: unknown", opts.Prefill)
	}
	for k := range opts.ExtraBody {
		if slices.Contains(reservedBody, k) {
			return nil, fmt.Errorf("openai: ExtraBody[%q]: reins sets it", k)
		}
	}
	urls := opts.URLs
	if len(urls) == 0 {
		u := os.Getenv("OPENAI_BASE_URL")
		if u == "" {
			u = DefaultURL
		}
		urls = []string{u}
	}
	if opts.APIKey == "" {
		opts.APIKey = os.Getenv("OPENAI_API_KEY")
	}
	h := opts.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if opts.APIKey != "" {
		h.Set("Authorization", "Bearer "+opts.APIKey)
	}
	c, err := remote.New(remote.Options{URLs: urls, Header: h, HTTPClient: opts.HTTPClient, Timeout: opts.Timeout,
		IdleTimeout: opts.IdleTimeout, Retries: opts.Retries, Backoff: opts.Backoff, MaxBackoff: opts.MaxBackoff,
		MaxResponseBytes: opts.MaxResponseBytes, Cooldown: opts.Cooldown, HealthPath: "/models"})
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	return &Backend{opts: opts, c: c}, nil
}

// Capabilities are what Options say the server does.
func (b *Backend) Capabilities() decode.Capabilities {
	return decode.Capabilities{TopLogprobs: b.opts.TopLogprobs, Bias: b.opts.Bias, Echo: b.opts.Echo, Chat: b.opts.Chat,
		Raw: !b.opts.Chat, JSONSchema: b.opts.ResponseFormat, Stream: b.opts.Stream}
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	Prefix  bool   `json:"prefix,omitempty"`
}

// body builds a request's fields.
func (b *Backend) body(req decode.TextRequest, stream bool) (map[string]any, error) {
	m := maps.Clone(b.opts.ExtraBody)
	if m == nil {
		m = map[string]any{}
	}
	s := req.Sampling
	m["model"] = b.opts.Model
	m["max_tokens"] = req.MaxTokens
	m["temperature"] = s.Temperature
	if s.TopP > 0 {
		m["top_p"] = s.TopP
	}
	if s.TopK > 0 {
		m["top_k"] = s.TopK // not OpenAI's; vLLM, llama.cpp and SGLang take it
	}
	if s.MinP > 0 {
		m["min_p"] = s.MinP
	}
	m["seed"] = int64(s.Seed & (1<<53 - 1)) // an integer JSON keeps exact
	if len(req.Stop) > 0 {
		m["stop"] = req.Stop
	}
	if stream {
		m["stream"] = true
	}
	if len(req.Bias) > 0 {
		if !b.opts.Bias {
			return nil, errors.New("openai: the server takes no logit_bias (Options.Bias)")
		}
		lb := map[string]float64{}
		for id, v := range req.Bias {
			lb[strconv.Itoa(id)] = v
		}
		m["logit_bias"] = lb
	}
	if len(req.JSONSchema) > 0 && b.opts.ResponseFormat {
		m["response_format"] = map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": "output", "schema": req.JSONSchema}}
	}
	if !b.opts.Chat {
		m["prompt"] = req.Prompt + req.Output
		m["logprobs"] = max(1, req.TopLogprobs) // the legacy field: how many alternatives
		return m, nil
	}
	var msgs []message
	if b.opts.System != "" {
		msgs = append(msgs, message{Role: "system", Content: b.opts.System})
	}
	msgs = append(msgs, message{Role: "user", Content: req.Prompt})
	if req.Output != "" {
		switch b.opts.Prefill {
		case PrefillNone:
			return nil, errors.New("openai: the server cannot continue an assistant message (Options.Prefill is none): a constrained output that needs more than one answer cannot be made on it; use /completions or a server that prefills")
		case PrefillVLLM:
			m["continue_final_message"] = true
			m["add_generation_prompt"] = false
		}
		msgs = append(msgs, message{Role: "assistant", Content: req.Output, Prefix: b.opts.Prefill == PrefillPrefix})
	}
	m["messages"] = msgs
	m["logprobs"] = true
	if req.TopLogprobs > 0 {
		m["top_logprobs"] = req.TopLogprobs
	}
	return m, nil
}

// answer is a completion, a chat completion, or a chunk of either.
type answer struct {
	Choices []struct {
		Index        int       `json:"index"`
		Text         *string   `json:"text"`
		Message      *content  `json:"message"`
		Delta        *content  `json:"delta"`
		Logprobs     *logprobs `json:"logprobs"`
		FinishReason *string   `json:"finish_reason"`
	} `json:"choices"`
	Error json.RawMessage `json:"error"`
}

type content struct {
	Content *string `json:"content"`
}

// logprobs is either format: chat's content list, or the legacy lists.
type logprobs struct {
	Content       []entry              `json:"content"`
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

type entry struct {
	Token       string   `json:"token"`
	Logprob     *float64 `json:"logprob"`
	Bytes       []int    `json:"bytes"`
	TopLogprobs []entry  `json:"top_logprobs"`
}

func (e entry) raw() remote.RawToken {
	t := rawToken(e.Token, e.Bytes, e.Logprob)
	for _, a := range e.TopLogprobs {
		t.Top = append(t.Top, a.raw())
	}
	return t
}

// rawToken reads vLLM's "token_id:N" spelling.
func rawToken(text string, bs []int, lp *float64) remote.RawToken {
	t := remote.RawToken{ID: -1, Text: text, Bytes: bs, HasBytes: bs != nil, Logprob: lp}
	if rest, ok := strings.CutPrefix(text, "token_id:"); ok {
		if id, err := strconv.Atoi(rest); err == nil && id >= 0 {
			t.ID = id
			if t.HasBytes {
				b := make([]byte, len(bs))
				for i, x := range bs {
					b[i] = byte(x)
				}
				t.Text = string(b)
			} else {
				t.Text = "\uFFFD" // bytes unknown: the answer's text tells
			}
		}
	}
	return t
}

// tokens turns one choice's logprobs into tokens; blind marks those
// whose bytes the text must tell. An answer of more than maxToks tokens,
// or of more than maxAlts alternatives to one, is refused before any is
// converted (each takes many times its JSON's size in memory).
func (l *logprobs) tokens(maxToks, maxAlts int) ([]decode.Token, []bool, error) {
	if n := max(len(l.Content), len(l.Tokens)); n > maxToks {
		return nil, nil, fmt.Errorf("the server returned %d tokens, more than the %d asked for", n, maxToks)
	}
	for i, e := range l.Content {
		if len(e.TopLogprobs) > maxAlts {
			return nil, nil, fmt.Errorf("the server returned %d alternatives to token %d, more than the %d it may (Options.TopLogprobs and the token)", len(e.TopLogprobs), i, maxAlts)
		}
	}
	for i, m := range l.TopLogprobs {
		if len(m) > maxAlts {
			return nil, nil, fmt.Errorf("the server returned %d alternatives to token %d, more than the %d it may (Options.TopLogprobs and the token)", len(m), i, maxAlts)
		}
	}
	var raws []remote.RawToken
	if len(l.Content) > 0 {
		for _, e := range l.Content {
			raws = append(raws, e.raw())
		}
	} else {
		if len(l.TokenLogprobs) != len(l.Tokens) || (l.TopLogprobs != nil && len(l.TopLogprobs) != len(l.Tokens)) {
			return nil, nil, fmt.Errorf("logprobs: %d tokens, %d logprobs, %d top_logprobs", len(l.Tokens), len(l.TokenLogprobs), len(l.TopLogprobs))
		}
		for i, s := range l.Tokens {
			t := rawToken(s, nil, l.TokenLogprobs[i])
			if l.TopLogprobs != nil {
				for a, lp := range l.TopLogprobs[i] {
					t.Top = append(t.Top, rawToken(a, nil, &lp))
				}
			}
			raws = append(raws, t)
		}
	}
	toks := make([]decode.Token, len(raws))
	blind := make([]bool, len(raws))
	for i, r := range raws {
		t, bl, err := remote.Resolve(r)
		if err != nil {
			return nil, nil, err
		}
		toks[i], blind[i] = t, bl
	}
	return toks, blind, nil
}

func (l *logprobs) empty() bool { return l == nil || len(l.Content) == 0 && len(l.Tokens) == 0 }

// Continue asks the server to continue req.Prompt+req.Output.
func (b *Backend) Continue(ctx context.Context, req decode.TextRequest) (*decode.TextResponse, error) {
	switch {
	case req.MaxTokens < 1:
		return nil, fmt.Errorf("openai: MaxTokens %d: want ≥ 1", req.MaxTokens)
	case req.TopLogprobs < 0 || req.TopLogprobs > b.opts.TopLogprobs:
		return nil, fmt.Errorf("openai: TopLogprobs %d: the server returns 0 to %d (Options.TopLogprobs)", req.TopLogprobs, b.opts.TopLogprobs)
	}
	stream := b.opts.Stream
	body, err := b.body(req, stream)
	if err != nil {
		return nil, err
	}
	path := "/completions"
	if b.opts.Chat {
		path = "/chat/completions"
	}
	resp := &decode.TextResponse{}
	var al remote.Aligner
	done, stopped := false, false
	line := func(data []byte) (bool, error) {
		if stream {
			d, ok := sseData(data)
			if !ok {
				return true, nil // a comment, an event name, an id
			}
			if string(d) == "[DONE]" {
				done = true
				return false, nil
			}
			data = d
		}
		var a answer
		if err := json.Unmarshal(data, &a); err != nil {
			return false, fmt.Errorf("the server's answer is not JSON: %w (%q)", err, clip(data))
		}
		if remote.ReportsError(a.Error) {
			return false, fmt.Errorf("the server reports an error: %s", clip(a.Error))
		}
		if len(a.Choices) == 0 {
			if stream {
				return true, nil // usage chunks
			}
			return false, errors.New("the answer has no choices")
		}
		if err := oneChoice(&a); err != nil {
			return false, err
		}
		ch := a.Choices[0]
		var text string
		switch {
		case ch.Text != nil:
			text = *ch.Text
		case ch.Message != nil && ch.Message.Content != nil:
			text = *ch.Message.Content
		case ch.Delta != nil && ch.Delta.Content != nil:
			text = *ch.Delta.Content
		}
		if text != "" && ch.Logprobs.empty() {
			return false, errors.New("the server returned text without logprobs: it may not support them")
		}
		var toks []decode.Token
		var blind []bool
		if !ch.Logprobs.empty() {
			if toks, blind, err = ch.Logprobs.tokens(req.MaxTokens, b.maxAlternatives()); err != nil {
				return false, fmt.Errorf("%w", err)
			}
			if req.TopLogprobs > 0 {
				for i, t := range toks {
					if len(t.TopLogprobs) == 0 && !blind[i] && !hadTop(ch.Logprobs, i) {
						return false, fmt.Errorf("the server returned token %q without the top_logprobs asked for", t.Token)
					}
				}
			}
		}
		al.Add(text, toks, blind)
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			resp.FinishReason = finishReason(*ch.FinishReason)
		}
		if !stream {
			done = true // the whole answer
		}
		ready, err := al.Ready(done || resp.FinishReason != "")
		if err != nil {
			return false, fmt.Errorf("%w", err)
		}
		for _, t := range ready {
			resp.Tokens = append(resp.Tokens, t)
			if len(resp.Tokens) > req.MaxTokens {
				return false, fmt.Errorf("the server returned more than the %d tokens asked for", req.MaxTokens)
			}
			if stream && req.Watch != nil && !req.Watch(t) {
				stopped = true
				return false, nil // leave: the server stops generating
			}
		}
		return !done, nil
	}
	if err := b.c.Post(ctx, path, body, line); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if stream && len(resp.Tokens) > 0 && errors.Is(err, remote.ErrStreamCut) {
			return resp, fmt.Errorf("openai: %w", err)
		}
		return nil, fmt.Errorf("openai: %w", err)
	}
	if stopped {
		return resp, nil
	}
	if stream && !done && resp.FinishReason != "" {
		done = true // some servers end with the finish reason and no [DONE]
	}
	if !done {
		return nil, errors.New("openai: the answer ended before it was complete (truncated)")
	}
	if al.Pending() > 0 {
		return nil, fmt.Errorf("openai: %w: tokens without text at the end", remote.ErrMisaligned)
	}
	if !stream {
		if resp.Tokens, err = req.Deliver(resp.Tokens); err != nil {
			return nil, fmt.Errorf("openai: %w", err)
		}
	}
	return resp, nil
}

// oneChoice checks that an answer holds the one choice asked for (n is
// never sent: the server's default, 1), choice 0: another's text would
// be taken for it.
func oneChoice(a *answer) error {
	if len(a.Choices) > 1 || a.Choices[0].Index != 0 {
		return fmt.Errorf("the answer holds choice %d of %d; reins asks for one, choice 0", a.Choices[len(a.Choices)-1].Index, len(a.Choices))
	}
	return nil
}

// maxAlternatives is how many alternatives a token may come with: as
// many as the server returns (Options.TopLogprobs), and the chosen token
// that some (vLLM) add to them.
func (b *Backend) maxAlternatives() int { return b.opts.TopLogprobs + 1 }

// hadTop reports whether the server sent alternatives for token i (all
// of which may have been left out as blind).
func hadTop(l *logprobs, i int) bool {
	if len(l.Content) > i {
		return len(l.Content[i].TopLogprobs) > 0
	}
	return len(l.TopLogprobs) > i && len(l.TopLogprobs[i]) > 0
}

// sseData returns the data of a server-sent event line.
func sseData(line []byte) ([]byte, bool) {
	s := strings.TrimSpace(string(line))
	if d, ok := strings.CutPrefix(s, "data:"); ok {
		return []byte(strings.TrimSpace(d)), true
	}
	return nil, false
}

// finishReason maps OpenAI's finish_reason.
func finishReason(r string) string {
	if r == "length" {
		return decode.FinishLength
	}
	return decode.FinishStop
}

// ScorePrompt scores text after prompt with echo: the server returns the
// prompt's tokens with their log-probabilities. Tokens from the first
// that begins at or after prompt's end are scored (a token that
// straddles that end, which the server's tokenizer may make, is scored
// whole); the rest are Unscored. It needs Options.Echo.
func (b *Backend) ScorePrompt(ctx context.Context, prompt, text string, topN int) (*decode.ScoreResult, error) {
	if !b.opts.Echo {
		return nil, decode.ErrCannotScore
	}
	if topN < 0 || topN > b.opts.TopLogprobs {
		return nil, fmt.Errorf("openai: TopLogprobs %d: want 0 to %d", topN, b.opts.TopLogprobs)
	}
	body := maps.Clone(b.opts.ExtraBody)
	if body == nil {
		body = map[string]any{}
	}
	body["model"], body["prompt"], body["echo"] = b.opts.Model, prompt+text, true
	body["max_tokens"], body["temperature"], body["logprobs"] = 1, 0, max(1, topN)
	// Echoed, each token spells at least a byte of prompt+text, and then
	// comes the one generated: its entries are at most a few KB each.
	whole := prompt + text
	maxToks, maxAlts := len(whole)+echoSpare, b.maxAlternatives()
	var a answer
	// Each token is at most an object with an array of bytes and one
	// of alternatives, each an object with its own bytes.
	entries := maxToks * (maxAlts + 1)
	shape := remote.Shape{Containers: maxToks*(2*maxAlts+3) + 64, Values: entries*(maxEntryValues+4) + 1024}
	if err := b.c.PostJSON(ctx, "/completions", body, &a, int64(64<<10+4<<10*maxToks*(maxAlts+1)), shape); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("openai: %w", err)
	}
	if len(a.Choices) == 0 || a.Choices[0].Logprobs.empty() {
		return nil, errors.New("openai: the echo answer has no logprobs: the server may not echo them")
	}
	if err := oneChoice(&a); err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	l := a.Choices[0].Logprobs
	if len(l.TextOffset) != len(l.Tokens) {
		return nil, errors.New("openai: the echo answer has no text_offset for its tokens")
	}
	// The tokens' log-probabilities: the first has none (nothing before it).
	first := l.TokenLogprobs
	zero := 0.0
	if len(first) > 0 && first[0] == nil {
		first[0] = &zero
	}
	toks, _, err := l.tokens(maxToks, maxAlts)
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	// Where each token begins: summed from the tokens' bytes when they
	// spell the prompt and text (exact, whatever unit the server counts
	// text_offset in), else text_offset in characters, as OpenAI and
	// vLLM count it.
	offs, start, end := l.TextOffset, utf8.RuneCountInString(prompt), utf8.RuneCountInString(whole)
	var spelled []byte
	for _, t := range toks {
		spelled = append(spelled, t.Bytes...)
	}
	spells := bytes.HasPrefix(spelled, []byte(whole))
	if spells {
		offs, start, end = make([]int, len(toks)), len(prompt), len(whole)
		at := 0
		for i, t := range toks {
			offs[i] = at
			at += len(t.Bytes)
		}
	}
	if len(offs) != len(toks) {
		return nil, fmt.Errorf("openai: the echo answer's %d tokens do not spell the prompt and text, and it gives %d text_offset values", len(toks), len(offs))
	}
	res := &decode.ScoreResult{}
	for i, t := range toks {
		off := offs[i]
		switch {
		case off >= end:
			continue // generated, not echoed
		case off < start && (i+1 >= len(toks) || offs[i+1] <= start):
			res.Unscored = append(res.Unscored, t.ID)
			continue
		case i == 0:
			return nil, errors.New("openai: the echo answer scores no token before the text: give a prompt")
		}
		t.TopLogprobs = t.TopLogprobs[:min(len(t.TopLogprobs), topN)]
		res.Tokens = append(res.Tokens, t)
		res.Sum += t.Logprob
	}
	if len(res.Tokens) == 0 {
		return nil, errors.New("openai: the echo answer has no tokens of the text")
	}
	if !spells {
		// Placed by text_offset: the tokens scored must still spell the
		// text (ending it, from a token that may straddle its start), up
		// to how a server may normalise it (compatibility forms, accents).
		var scored []byte
		for _, t := range res.Tokens {
			scored = append(scored, t.Bytes...)
		}
		f, ft := fold(string(scored)), fold(text)
		straddle := len(f) - len(ft) // folded bytes of the prompt scored: the first token's only
		if !strings.HasSuffix(fold(whole), f) || !strings.HasSuffix(f, ft) || straddle >= max(1, len(fold(string(res.Tokens[0].Bytes)))) {
			return nil, fmt.Errorf("openai: the echo answer scores the tokens %q, which do not spell the text %q", clip(scored), clip([]byte(text)))
		}
	}
	res.Mean = res.Sum / float64(len(res.Tokens))
	return res, nil
}

// maxEntryValues is the most values an echo answer's entry of a token
// or an alternative holds on average: its bytes (tokens are rarely
// longer than 64) and its fields.
const maxEntryValues = 64 + 8

// echoSpare is how many tokens an echo answer may hold beyond one per
// byte of its prompt: the generated one, and tokens that spell nothing
// (a beginning-of-text token).
const echoSpare = 4

// fold is s in Unicode's compatibility decomposition without its
// combining marks: "é" and "ﬁ" as "e" and "fi".
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Mn, r) {
			return -1
		}
		return r
	}, norm.NFKD.String(s))
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
