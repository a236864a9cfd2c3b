// Package ollama is reins' backend for an Ollama server, through its
// native API: /api/generate with raw prompts (the text is continued as
// given) or /api/chat (the server applies the model's chat template; the
// output so far is an assistant message it continues), both with
// logprobs and up to 20 alternatives per token. It implements
// decode.TextBackend: reins.New(b) gives a Model on which generation,
// choice and JSON extraction work as on a local one.
//
// Under a JSON Schema constraint the first request also sends the schema
// as Ollama's format, so that the server keeps to it itself; reins checks
// every byte all the same, and goes on without it once it refuses one.
//
// What Ollama does not say: token ids (they are -1), and the bytes of a
// token that holds part of a UTF-8 character (its JSON has U+FFFD in
// their place). Such tokens take their bytes from the answer's text, and
// a run of them becomes one token (its log-probability the run's sum, no
// alternatives); alternatives of that kind are left out and their
// probability counts as unseen.
//
// Ollama (v0.17.4) has no logit_bias and cannot echo a prompt with its
// log-probabilities: Score is decode.ErrCannotScore, and Choose follows
// each option through the alternatives (Option.TopK).
package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/reins-go/reins/backends/internal/remote"
	"github.com/reins-go/reins/decode"
)

// MaxTopLogprobs is the most alternatives Ollama returns per token.
const MaxTopLogprobs = 20

// DefaultURL is where Ollama listens by default.
const DefaultURL = "http://127.0.0.1:11434"

// Options configures a Backend. Model is required; the zero value of
// every other field is a sensible default.
type Options struct {
	// Model is the Ollama model name ("llama3.2:1b").
	Model string
	// URLs are the servers, taken in turn (each must serve Model); empty
	// means OLLAMA_HOST, else DefaultURL.
	URLs []string
	// Chat asks /api/chat (the prompt is a user message, the output an
	// assistant message the server continues) instead of /api/generate
	// with raw: true.
	Chat bool
	// System is the system message with Chat.
	System string
	// ServerOptions are more of Ollama's model options (num_ctx,
	// num_thread, ...), sent with every request. The sampling options
	// (temperature, top_k, top_p, min_p, seed, num_predict, stop,
	// repeat_penalty) are reins'.
	ServerOptions map[string]any
	// KeepAlive, when set, is how long the server keeps the model loaded
	// after a request (Ollama's keep_alive).
	KeepAlive time.Duration
	// NoFormat: do not send a JSON Schema constraint's schema as format.
	NoFormat bool
	// Stream asks for streamed answers: tokens reach TextRequest.Watch
	// as they come, and an answer that breaks off keeps what came. An
	// answer Watch stops is still read to its end: Ollama v0.17.4 leaks
	// the model's slot when a client leaves a streamed answer (its
	// generate handler blocks sending to a reader that left), and with
	// OLLAMA_NUM_PARALLEL=1 the model then answers no one. Without
	// Stream, whole answers; a client that leaves one is safe.
	Stream bool
	// Header is sent with every request.
	Header http.Header
	// HTTPClient, Timeout, IdleTimeout, Retries, Backoff, MaxBackoff,
	// MaxResponseBytes, Cooldown: see the fields of the same names in
	// backends/internal/remote.Options (a failed server rests Cooldown,
	// then is used again once GET /api/version answers).
	HTTPClient       *http.Client
	Timeout          time.Duration
	IdleTimeout      time.Duration
	Retries          int
	Backoff          time.Duration
	MaxBackoff       time.Duration
	MaxResponseBytes int64
	Cooldown         time.Duration
}

// Backend is an Ollama server serving one model. It is safe for
// concurrent use.
type Backend struct {
	opts Options
	c    *remote.Client
}

var _ decode.TextBackend = (*Backend)(nil)

// New checks opts and returns a Backend. It does not contact the server.
func New(opts Options) (*Backend, error) {
	if strings.TrimSpace(opts.Model) == "" {
		return nil, errors.New("ollama: no model name (Options.Model)")
	}
	urls := opts.URLs
	if len(urls) == 0 {
		urls = []string{hostURL(os.Getenv("OLLAMA_HOST"))}
	}
	for k := range opts.ServerOptions {
		if reserved[k] {
			return nil, fmt.Errorf("ollama: ServerOptions[%q]: reins sets it (use reins.Options)", k)
		}
	}
	c, err := remote.New(remote.Options{URLs: urls, Header: opts.Header, HTTPClient: opts.HTTPClient,
		Timeout: opts.Timeout, IdleTimeout: opts.IdleTimeout, Retries: opts.Retries, Backoff: opts.Backoff,
		MaxBackoff: opts.MaxBackoff, MaxResponseBytes: opts.MaxResponseBytes, Cooldown: opts.Cooldown, HealthPath: "/api/version"})
	if err != nil {
		return nil, fmt.Errorf("ollama: %w", err)
	}
	return &Backend{opts: opts, c: c}, nil
}

// reserved are the options reins sets on every request.
var reserved = map[string]bool{"temperature": true, "top_k": true, "top_p": true, "min_p": true, "seed": true,
	"num_predict": true, "stop": true, "repeat_penalty": true}

// hostURL turns OLLAMA_HOST (host, host:port, or a URL) into a URL.
func hostURL(h string) string {
	h = strings.TrimSpace(h)
	switch {
	case h == "":
		return DefaultURL
	case strings.HasPrefix(h, "http://") || strings.HasPrefix(h, "https://"):
		return h
	case !strings.Contains(h, ":"):
		return "http://" + h + ":11434"
	}
	return "http://" + h
}

// Capabilities: top-k only (20), no bias, no echo; raw continuation or
// the chat template; format. Not Stream: an answer costs all its tokens
// even when its reader stops early (see Options.Stream).
func (b *Backend) Capabilities() decode.Capabilities {
	return decode.Capabilities{TopLogprobs: MaxTopLogprobs, Chat: b.opts.Chat, Raw: !b.opts.Chat,
		JSONSchema: !b.opts.NoFormat}
}

// request is the body of /api/generate and /api/chat.
type request struct {
	Model       string          `json:"model"`
	Prompt      string          `json:"prompt,omitempty"`
	Raw         bool            `json:"raw,omitempty"`
	Messages    []message       `json:"messages,omitempty"`
	Stream      bool            `json:"stream"`
	Format      json.RawMessage `json:"format,omitempty"`
	Options     map[string]any  `json:"options"`
	Logprobs    bool            `json:"logprobs"`
	TopLogprobs int             `json:"top_logprobs,omitempty"`
	KeepAlive   string          `json:"keep_alive,omitempty"`
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// answer is one line of an answer (or the whole of it).
type answer struct {
	Response   string          `json:"response"`
	Message    *message        `json:"message"`
	Done       bool            `json:"done"`
	DoneReason string          `json:"done_reason"`
	Logprobs   []logprob       `json:"logprobs"`
	Error      json.RawMessage `json:"error"` // a string, or OpenAI's {"message": ...} from a proxy
}

type logprob struct {
	Token       string    `json:"token"`
	Logprob     *float64  `json:"logprob"`
	Bytes       []int     `json:"bytes"`
	TopLogprobs []logprob `json:"top_logprobs"`
}

func (l logprob) raw() remote.RawToken {
	t := remote.RawToken{ID: -1, Text: l.Token, Bytes: l.Bytes, HasBytes: l.Bytes != nil, Logprob: l.Logprob}
	for _, a := range l.TopLogprobs {
		t.Top = append(t.Top, a.raw())
	}
	return t
}

func (b *Backend) body(req decode.TextRequest, stream bool) request {
	opts := map[string]any{}
	for k, v := range b.opts.ServerOptions {
		opts[k] = v
	}
	s := req.Sampling
	opts["num_predict"] = req.MaxTokens
	opts["temperature"] = s.Temperature
	opts["top_k"] = s.TopK
	opts["top_p"] = 1.0
	if s.TopP > 0 {
		opts["top_p"] = s.TopP
	}
	opts["min_p"] = s.MinP
	opts["seed"] = int(s.Seed & 0x7fffffff)
	opts["repeat_penalty"] = 1.0 // the model's own distribution, as reins reports it
	if len(req.Stop) > 0 {
		opts["stop"] = req.Stop
	}
	r := request{Model: b.opts.Model, Stream: stream, Options: opts, Logprobs: true, TopLogprobs: req.TopLogprobs}
	if len(req.JSONSchema) > 0 && !b.opts.NoFormat {
		r.Format = req.JSONSchema
	}
	if b.opts.KeepAlive != 0 {
		r.KeepAlive = b.opts.KeepAlive.String()
	}
	if b.opts.Chat {
		if b.opts.System != "" {
			r.Messages = append(r.Messages, message{"system", b.opts.System})
		}
		r.Messages = append(r.Messages, message{"user", req.Prompt})
		if req.Output != "" {
			r.Messages = append(r.Messages, message{"assistant", req.Output})
		}
	} else {
		r.Prompt, r.Raw = req.Prompt+req.Output, true
	}
	return r
}

// Continue asks the server to continue req.Prompt+req.Output.
func (b *Backend) Continue(ctx context.Context, req decode.TextRequest) (*decode.TextResponse, error) {
	switch {
	case req.MaxTokens < 1:
		return nil, fmt.Errorf("ollama: MaxTokens %d: want ≥ 1", req.MaxTokens)
	case req.TopLogprobs < 0 || req.TopLogprobs > MaxTopLogprobs:
		return nil, fmt.Errorf("ollama: TopLogprobs %d: Ollama returns 0 to %d", req.TopLogprobs, MaxTopLogprobs)
	case len(req.Bias) > 0:
		return nil, errors.New("ollama: the server takes no logit bias")
	}
	path := "/api/generate"
	if b.opts.Chat {
		path = "/api/chat"
	}
	stream := b.opts.Stream
	resp := &decode.TextResponse{}
	var al remote.Aligner
	done, stopped := false, false
	var deliverErr error
	line := func(data []byte) (bool, error) {
		var a answer
		if err := json.Unmarshal(data, &a); err != nil {
			return false, fmt.Errorf("the server's answer is not JSON: %w (%q)", err, clip(data))
		}
		if remote.ReportsError(a.Error) {
			return false, fmt.Errorf("the server reports an error: %s", remote.ErrorMessage(data))
		}
		text := a.Response
		if a.Message != nil {
			text = a.Message.Content
		}
		// Bounded before any is converted (each takes many times its
		// JSON's size in memory).
		if len(a.Logprobs) > req.MaxTokens {
			return false, fmt.Errorf("the server returned more than the %d tokens asked for", req.MaxTokens)
		}
		toks := make([]decode.Token, len(a.Logprobs))
		blind := make([]bool, len(a.Logprobs))
		for i, l := range a.Logprobs {
			if len(l.TopLogprobs) > MaxTopLogprobs {
				return false, fmt.Errorf("the server returned %d alternatives to token %q, more than Ollama's %d", len(l.TopLogprobs), l.Token, MaxTopLogprobs)
			}
			t, bl, err := remote.Resolve(l.raw())
			if err != nil {
				return false, fmt.Errorf("%w", err)
			}
			if req.TopLogprobs > 0 && len(l.TopLogprobs) == 0 {
				return false, fmt.Errorf("the server returned token %q without the top_logprobs asked for (is it older than v0.12.11?)", l.Token)
			}
			toks[i], blind[i] = t, bl
		}
		al.Add(text, toks, blind)
		if a.Done {
			done = true
			resp.FinishReason = finishReason(a.DoneReason)
		}
		ready, err := al.Ready(a.Done)
		if err != nil {
			return false, fmt.Errorf("%w", err)
		}
		for _, t := range ready {
			if stopped {
				break // read on to the end: see Options.Stream
			}
			resp.Tokens = append(resp.Tokens, t)
			if len(resp.Tokens) > req.MaxTokens {
				return false, fmt.Errorf("the server returned more than the %d tokens asked for", req.MaxTokens)
			}
			if stream && req.Watch != nil && !req.Watch(t) {
				stopped = true
			}
		}
		return !a.Done, nil
	}
	err := b.c.Post(ctx, path, b.body(req, stream), line)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if stream && len(resp.Tokens) > 0 && errors.Is(err, remote.ErrStreamCut) {
			return resp, fmt.Errorf("ollama: %w", err)
		}
		return nil, fmt.Errorf("ollama: %w", err)
	}
	if !done {
		return nil, errors.New("ollama: the answer ended before the server said it was done (truncated)")
	}
	if !stream {
		if resp.Tokens, deliverErr = req.Deliver(resp.Tokens); deliverErr != nil {
			return nil, fmt.Errorf("ollama: %w", deliverErr)
		}
	}
	return resp, nil
}

// finishReason maps Ollama's done_reason.
func finishReason(r string) string {
	if r == "length" {
		return decode.FinishLength
	}
	return decode.FinishStop
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
