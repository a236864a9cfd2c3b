package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/reins-go/reins/chat"
	"github.com/reins-go/reins/internal/gguf"
	"github.com/reins-go/reins/server"
)

// serveEnvKey is the environment variable that may hold the API key, so
// that it need not appear in the process list.
const serveEnvKey = "REINS_API_KEY"

func cmdServe(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, args, stderr, nil)
}

// serve runs the server until ctx is done, then shuts it down: requests
// in flight get shutdownGrace to finish, then are cancelled. ready, when
// set, receives the address once the server listens.
func serve(ctx context.Context, args []string, stderr io.Writer, ready func(addr string)) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var mf modelFlags
	mf.register(fs)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on (loopback by default; a wider one, such as :8080, is served to the network: set an API key)")
	parallel := fs.Int("parallel", 4, "requests decoded together, one llama.cpp sequence each")
	queue := fs.Int("queue", 0, "requests that may wait for a free sequence before 429 (0: 4 × --parallel)")
	apiKey := fs.String("api-key", "", "require this key (Authorization: Bearer KEY); or set "+serveEnvKey)
	name := fs.String("name", "", "the model's id in /v1/models and responses (default: the --model value)")
	chatFormat := fs.String("chat-format", "auto", "chat format of /v1/chat/completions: auto (from the GGUF's chat template; plain when it has none), plain, chatml, llama3, gemma or phi3")
	strict := fs.Bool("strict", false, "refuse request fields the server does not know (400), instead of ignoring them")
	maxTokens := fs.Int("max-tokens", 0, "most tokens a request may ask for (0: 4096)")
	maxTop := fs.Int("max-top-logprobs", 0, "most alternatives per token a request may ask for (0: 100; OpenAI allows 20)")
	maxBody := fs.Int64("max-body", 0, "largest request body in bytes (0: 4 MiB)")
	cacheMB := fs.Int64("constraint-cache-mb", 0, "memory the compiled constraints kept between requests may hold together, in MiB, the caches their automata fill included; past it the least recently used are dropped (0: 256)")
	grace := fs.Duration("shutdown-grace", 30*time.Second, "on SIGINT or SIGTERM, how long requests in flight may take to finish before they are cancelled")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: reins serve [flags]\nServe the model over HTTP with OpenAI's API: POST /v1/chat/completions, /v1/completions; GET /v1/models, /health, /metrics.")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 0:
		return usagef("serve takes no arguments, got %q", pos)
	case *parallel < 1 || *parallel > 256:
		return usagef("--parallel %d: want 1 to 256", *parallel)
	case *queue < 0:
		return usagef("--queue %d: want 0 or more", *queue)
	case *maxTokens < 0 || *maxTokens > maxGenTokens:
		return usagef("--max-tokens %d: want 0 (4096) to %d", *maxTokens, maxGenTokens)
	case *maxTop < 0:
		return usagef("--max-top-logprobs %d: want 0 (100) or more", *maxTop)
	case *maxBody < 0:
		return usagef("--max-body %d: want 0 (4 MiB) or more", *maxBody)
	case *cacheMB < 0 || *cacheMB > 1<<30:
		return usagef("--constraint-cache-mb %d: want 0 (256) to %d", *cacheMB, 1<<30)
	}
	key := *apiKey
	if key == "" {
		key = os.Getenv(serveEnvKey)
	}
	var format *chat.Format
	if *chatFormat != "auto" {
		if format, err = chat.Known(*chatFormat); err != nil {
			return usagef("--chat-format: %v", err)
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return usagef("--addr %s: %v", *addr, err)
	}
	defer ln.Close()
	lm, err := mf.loadLlama(*parallel)
	if err != nil {
		return err
	}
	defer lm.Close()
	if format == nil {
		if format, err = chatFormatOf(lm.Path()); err != nil {
			fmt.Fprintf(stderr, "reins: %v; /v1/chat/completions will use the plain format (set --chat-format)\n", err)
			format, _ = chat.Known(chat.Plain)
		}
	}
	if *name == "" {
		*name = mf.model
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := server.New(server.Config{
		Backend: lm, ModelName: *name, Parallel: *parallel, QueueSize: *queue, APIKey: key, Chat: format, Strict: *strict,
		ConstraintCacheBytes: *cacheMB << 20,
		Limits:               server.Limits{MaxTokens: *maxTokens, MaxTopLogprobs: *maxTop, MaxBodyBytes: *maxBody}, Logger: logger,
	})
	if err != nil {
		return err
	}
	defer s.Close()
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	hs := s.HTTPServer(*addr)
	hs.BaseContext = func(net.Listener) context.Context { return base }
	hs.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	host, _, _ := net.SplitHostPort(ln.Addr().String())
	ip := net.ParseIP(host)
	fmt.Fprintf(stderr, "reins: serving %s on http://%s (%d sequences, chat format %s)\n", *name, ln.Addr(), *parallel, format.Name)
	if (ip == nil || !ip.IsLoopback()) && key == "" {
		fmt.Fprintf(stderr, "reins: warning: %s is reachable from other machines and no API key is set (--api-key or %s)\n", ln.Addr(), serveEnvKey)
	}
	if ready != nil {
		ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(stderr, "reins: shutting down: waiting for requests in flight")
	sctx, scancel := context.WithTimeout(context.Background(), *grace)
	defer scancel()
	if err := hs.Shutdown(sctx); err != nil {
		cancel() // what is still running is cancelled
		fmt.Fprintf(stderr, "reins: requests still running after %s were cancelled\n", *grace)
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer ccancel()
		if err := hs.Shutdown(cctx); err != nil {
			hs.Close()
		}
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// chatFormatOf recognises the chat template of a GGUF file.
func chatFormatOf(path string) (*chat.Format, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the chat template: %w", err)
	}
	tmpl, _ := f.String("tokenizer.chat_template")
	return chat.FromTemplate(tmpl)
}
