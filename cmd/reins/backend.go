package main

import (
	"encoding/json"
	"flag"
	"net/http"
	"strings"
	"time"

	"github.com/reins-go/reins/backends/ollama"
	"github.com/reins-go/reins/backends/openai"
	"github.com/reins-go/reins/decode"
)

// Backends --backend names.
const (
	backendLlama  = "llama"
	backendOllama = "ollama"
	backendOpenAI = "openai"
)

// remoteFlags choose a server to generate on instead of llama.cpp in
// process: --backend ollama|openai, --url, and what each server needs.
type remoteFlags struct {
	backend        string
	urls           listFlag
	apiKey         string
	chat           bool
	system         string
	headers        listFlag
	timeout        time.Duration
	retries        int
	serverOptions  listFlag
	maxAlts        int
	echo           bool
	prefill        string
	responseFormat bool
	stream         bool
}

// registerServer adds the flags that choose a server, for the commands
// that can run on one.
func (m *modelFlags) registerServer(fs *flag.FlagSet) { m.remote.register(fs, true) }

// registerRawServer is registerServer without the chat API's flags, for
// a command that writes the whole prompt itself (run).
func (m *modelFlags) registerRawServer(fs *flag.FlagSet) { m.remote.register(fs, false) }

func (r *remoteFlags) register(fs *flag.FlagSet, chatAPI bool) {
	fs.StringVar(&r.backend, "backend", backendLlama, "where the model runs: llama (in process; --model is a GGUF file), ollama or openai (a server at --url; --model is its model name)")
	fs.Var(&r.urls, "url", "server base URL (repeat, or separate with commas, for several servers taken in turn); ollama: default $OLLAMA_HOST or "+ollama.DefaultURL+"; openai: with the API version, e.g. http://127.0.0.1:8000/v1, default $OPENAI_BASE_URL or "+openai.DefaultURL)
	fs.StringVar(&r.apiKey, "api-key", "", "openai: API key (default $OPENAI_API_KEY)")
	if chatAPI {
		fs.BoolVar(&r.chat, "chat", false, "ask the server's chat API: the prompt is a user message, the server applies the chat template and continues the output as an assistant message")
		fs.StringVar(&r.system, "system", "", "with --chat: a system message")
		fs.StringVar(&r.prefill, "chat-continue", "last", "openai with --chat: how the server continues an assistant message: last, vllm, prefix or none")
	}
	fs.Var(&r.headers, "header", "an extra HTTP header, NAME:VALUE (repeatable)")
	fs.DurationVar(&r.timeout, "timeout", 0, "the longest one request may take (0: 5m)")
	fs.IntVar(&r.retries, "retries", 0, "how many times a request that failed with 429, 5xx or a timeout is tried again (0: 3; -1: never)")
	fs.Var(&r.serverOptions, "server-option", "ollama: a model option KEY=VALUE sent with every request, e.g. num_ctx=8192 (repeatable; VALUE is read as JSON, else as text)")
	fs.IntVar(&r.maxAlts, "server-top-logprobs", 0, "openai: the most alternatives per token the server returns (0: 20)")
	fs.BoolVar(&r.echo, "echo", false, "openai: the server echoes a prompt with its logprobs on /completions (vLLM): score works and choose is exact")
	fs.BoolVar(&r.responseFormat, "response-format", false, "openai: the server takes response_format json_schema, asked on a --schema's first request")
	fs.BoolVar(&r.stream, "stream", false, "openai: ask for streamed answers (a refused token ends the request early)")
}

// remote reports whether a server was asked for.
func (r *remoteFlags) remote() bool { return r.backend != "" && r.backend != backendLlama }

// urlList returns the URLs given, commas split.
func (r *remoteFlags) urlList() []string {
	var out []string
	for _, u := range r.urls {
		for _, s := range strings.Split(u, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// open returns the server backend the flags name, for model.
func (r *remoteFlags) open(model string) (decode.TextBackend, error) {
	if r.backend != backendOllama && r.backend != backendOpenAI {
		return nil, usagef("--backend %q: want llama, ollama or openai", r.backend)
	}
	if model == BuiltinModel || strings.TrimSpace(model) == "" {
		return nil, usagef("--backend %s: give --model, the server's name for the model", r.backend)
	}
	switch {
	case r.timeout < 0:
		return nil, usagef("--timeout %v: want ≥ 0", r.timeout)
	case r.retries < -1:
		return nil, usagef("--retries %d: want -1 (never), 0 (the default) or more", r.retries)
	}
	header := http.Header{}
	for _, h := range r.headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usagef("--header %q: want NAME:VALUE", h)
		}
		header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	switch r.backend {
	case backendOllama:
		opts := ollama.Options{Model: model, URLs: r.urlList(), Chat: r.chat, System: r.system, Header: header,
			Timeout: r.timeout, Retries: r.retries, ServerOptions: map[string]any{}}
		for _, kv := range r.serverOptions {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, usagef("--server-option %q: want KEY=VALUE", kv)
			}
			var x any
			if json.Unmarshal([]byte(v), &x) != nil {
				x = v
			}
			opts.ServerOptions[k] = x
		}
		b, err := ollama.New(opts)
		if err != nil {
			return nil, usageError{err.Error()}
		}
		return b, nil
	case backendOpenAI:
		if len(r.serverOptions) > 0 {
			return nil, usagef("--server-option is for --backend ollama")
		}
		var p openai.Prefill // PrefillLast, without the chat flags (run)
		if r.prefill != "" {
			var err error
			if p, err = openai.ParsePrefill(r.prefill); err != nil {
				return nil, usagef("--chat-continue: %v", err)
			}
		}
		b, err := openai.New(openai.Options{Model: model, URLs: r.urlList(), APIKey: r.apiKey, Header: header, Chat: r.chat,
			System: r.system, Prefill: p, TopLogprobs: r.maxAlts, Echo: r.echo, ResponseFormat: r.responseFormat,
			Stream: r.stream, Timeout: r.timeout, Retries: r.retries})
		if err != nil {
			return nil, usageError{err.Error()}
		}
		return b, nil
	}
	return nil, usagef("--backend %q: want llama, ollama or openai", r.backend)
}
