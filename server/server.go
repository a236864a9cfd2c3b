// Package server is reins' OpenAI-compatible HTTP server: POST
// /v1/chat/completions and /v1/completions in OpenAI's request and
// response shapes (streamed as server-sent events or not), with every
// token's logprob and alternatives under the model's distribution and,
// under a constraint, the constrained one beside it; GET /v1/models,
// GET /health and GET /metrics (Prometheus).
//
// # Fields
//
// Beyond OpenAI's fields, a request may carry reins' own: "grammar" (a
// GBNF grammar), "regex" (Go syntax, the whole output), "top_k" and
// "min_p". response_format json_object and json_schema compile to exact
// token masks, strict or not (reins always keeps the output in the
// schema; a schema it cannot compile exactly is a 400 naming the
// keyword's JSON pointer). top_logprobs (chat) and logprobs
// (completions) take 0 to 20 as OpenAI does, and more, up to
// Limits.MaxTopLogprobs (100 by default; reins serve
// --max-top-logprobs): ask for the number. Each logprobs entry has
// OpenAI's token, logprob, bytes and top_logprobs, and reins' id,
// constrained (the logprob and alternatives under the constrained
// distribution) and forced. /v1/completions with "echo": true and
// "logprobs" returns the prompt's own token logprobs (the first token
// null when nothing conditions it), and "max_tokens": 0 scores the
// prompt without generating.
//
// Defaults follow OpenAI's: temperature 1, top_p 1, n 1; a request
// without a seed gets a random one (with one, the same request gives the
// same output). max_tokens defaults to Limits.DefaultMaxTokens (256).
// A constrained output the budget cannot finish, or a stop string cut
// before its end, comes back with finish_reason "length" (not "stop",
// which a client reads as complete), its partial text, and "reins":
// {"unfinished": why}. (A grammar with token terminals cannot be judged
// on its text: a stop string that cuts it gives "stop".) Unsupported
// fields with an effect (tools, logit_bias, penalties, suffix, best_of)
// are a 400 naming the field; unknown fields are ignored, or refused
// with Config.Strict.
//
// # Chat
//
// reins does not run the Jinja chat templates of GGUF files: the
// server writes the conversation in the template family the GGUF's
// tokenizer.chat_template names (chatml, llama3, gemma, phi3; see
// chat.FromTemplate), its markers tokenized as the model's special
// tokens and refused inside messages; a model without a template gets
// a plain transcript ("User: ...\nAssistant: "), stopped at the next
// "\nUser:".
//
// # Concurrency
//
// Requests are decoded together: each choice holds one of the backend's
// sequences (a slot) while it runs, and one loop evaluates the queued
// tokens of every busy slot in one call of the backend (for llama.cpp,
// one batch): continuous batching, since reins.Model alone takes turns
// at its backend, one call's evaluation at a time. The sequences'
// caches are kept between requests, so a prompt that shares a prefix
// with an earlier one (a system message) evaluates only the rest. Past
// Config.Parallel slots, requests wait in a queue of Config.QueueSize;
// past that they get 429 with Retry-After.
//
// # Safety
//
// Every size a request can ask for is bounded (Limits), and so is the
// memory of the compiled constraints kept between requests
// (Config.ConstraintCacheBytes); a JSON Schema's
// $ref outside the document is refused (nothing is read from the
// server's files or the network; GBNF has no includes); an API key is
// compared in constant time; a client that goes away cancels its
// generation and frees its slot, and one that stops reading is cut off
// after Limits.StreamStall. A panic in a generation fails that request
// only.
package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/chat"
	"github.com/reins-go/reins/decode"
)

// Limits bound what one request may ask for. The zero value of a field
// means its default (DefaultLimits).
type Limits struct {
	MaxBodyBytes     int64 // request body
	MaxPromptBytes   int   // one prompt, or a chat's messages together
	MaxMessages      int   // messages of a chat request
	MaxPrompts       int   // prompts of one completion request
	MaxTokens        int   // max_tokens
	DefaultMaxTokens int   // max_tokens when the request gives none
	MaxN             int   // n (choices per prompt); with several prompts, choices in all
	MaxTopLogprobs   int   // top_logprobs (and the completions' logprobs); OpenAI allows 20
	MaxStop          int   // stop strings
	MaxStopBytes     int   // bytes of one stop string
	MaxGrammarBytes  int   // a GBNF grammar
	MaxRegexBytes    int   // a regular expression
	MaxSchemaBytes   int   // a JSON Schema
	// StreamStall is how long a write to a client may block: a client
	// that reads nothing for this long is cut off and its slot freed.
	StreamStall time.Duration
}

// DefaultLimits returns the limits a zero Limits field takes.
func DefaultLimits() Limits {
	return Limits{
		MaxBodyBytes:     4 << 20,
		MaxPromptBytes:   1 << 20,
		MaxMessages:      1024,
		MaxPrompts:       16,
		MaxTokens:        4096,
		DefaultMaxTokens: decode.DefaultMaxTokens,
		MaxN:             8,
		MaxTopLogprobs:   100,
		MaxStop:          16,
		MaxStopBytes:     256,
		MaxGrammarBytes:  64 << 10,
		MaxRegexBytes:    16 << 10,
		MaxSchemaBytes:   256 << 10,
		StreamStall:      30 * time.Second,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	set := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = d.MaxBodyBytes
	}
	set(&l.MaxPromptBytes, d.MaxPromptBytes)
	set(&l.MaxMessages, d.MaxMessages)
	set(&l.MaxPrompts, d.MaxPrompts)
	set(&l.MaxTokens, d.MaxTokens)
	set(&l.DefaultMaxTokens, min(d.DefaultMaxTokens, l.MaxTokens))
	set(&l.MaxN, d.MaxN)
	set(&l.MaxTopLogprobs, d.MaxTopLogprobs)
	set(&l.MaxStop, d.MaxStop)
	set(&l.MaxStopBytes, d.MaxStopBytes)
	set(&l.MaxGrammarBytes, d.MaxGrammarBytes)
	set(&l.MaxRegexBytes, d.MaxRegexBytes)
	set(&l.MaxSchemaBytes, d.MaxSchemaBytes)
	if l.StreamStall == 0 {
		l.StreamStall = d.StreamStall
	}
	return l
}

// Config configures a Server.
type Config struct {
	// Backend is the model: a local one whose logits reins reads
	// (backends/llama; the server uses its sequences, one per slot).
	// The server does not close it.
	Backend decode.LogitsBackend
	// ModelName is the id /v1/models lists and responses carry.
	ModelName string
	// Parallel is how many requests (choices) decode at once, one
	// sequence each; 0 means all of Backend.MaxSequences(), more is an
	// error.
	Parallel int
	// QueueSize is how many requests may wait for a slot; past it a
	// request gets 429. 0 means 4 × Parallel; -1 means none wait.
	QueueSize int
	// APIKey, when set, is required as "Authorization: Bearer KEY" on
	// every path but /health.
	APIKey string
	// Chat is the chat format of /v1/chat/completions; nil means plain.
	Chat *chat.Format
	// Strict refuses request fields the server does not know (400
	// naming the field); by default they are ignored, as OpenAI's
	// clients send fields a server may not have.
	Strict bool
	// Limits bound requests; zero fields take DefaultLimits().
	Limits Limits
	// BatchWait, when above 0, lets the batch loop wait up to that long
	// (and about one evaluation's time) for every busy slot to queue its
	// evaluation; 0 evaluates what is queued at once (continuous
	// batching), which keeps the model busy.
	BatchWait time.Duration
	// Logger receives one line per failed request; nil discards.
	Logger *slog.Logger
	// ConstraintCacheBytes bounds the memory of the compiled constraints
	// the server keeps between requests (up to 64 of them, with the
	// caches their automata fill as they are used): past it the least
	// recently used are dropped. 0 means DefaultConstraintCacheBytes.
	ConstraintCacheBytes int64
}

// DefaultConstraintCacheBytes is Config.ConstraintCacheBytes's default.
// Each automaton's caches are bounded on their own, at a few hundred MB
// however hostile its constraint, and the constraints of ordinary
// requests take well under 10 MB each. The bound is on live memory:
// with Go's collector at its default the process may take about twice
// as much from the system.
const DefaultConstraintCacheBytes = 256 << 20

// Server serves the OpenAI-compatible API. Close it after the
// http.Server that runs it has shut down.
type Server struct {
	cfg     Config
	lim     Limits
	mux     *http.ServeMux
	bt      *batcher
	slots   chan *view
	trie    *automaton.Trie
	markers map[string]int
	keyHash [32]byte
	created int64
	log     *slog.Logger
	// longestToken is the most bytes a token of the vocabulary spells: a
	// prompt of n bytes is at least n/longestToken tokens.
	longestToken int

	inflight atomic.Int64 // requests admitted and not finished
	reading  atomic.Int64 // request bodies being read (see readBody)
	waiting  atomic.Int64 // choices waiting for a slot
	cache    *constraintCache
	metrics  *metrics
	reqID    atomic.Uint64

	closeOnce sync.Once
}

// New returns a server over cfg.Backend.
func New(cfg Config) (*Server, error) {
	if cfg.Backend == nil {
		return nil, errors.New("server: no backend")
	}
	n := cfg.Backend.MaxSequences()
	switch {
	case cfg.Parallel == 0:
		cfg.Parallel = n
	case cfg.Parallel < 0 || cfg.Parallel > n:
		return nil, fmt.Errorf("server: Parallel %d: the backend has %d sequences", cfg.Parallel, n)
	}
	switch {
	case cfg.QueueSize == 0:
		cfg.QueueSize = 4 * cfg.Parallel
	case cfg.QueueSize < 0:
		cfg.QueueSize = 0
	}
	switch {
	case cfg.ConstraintCacheBytes == 0:
		cfg.ConstraintCacheBytes = DefaultConstraintCacheBytes
	case cfg.ConstraintCacheBytes < 0:
		return nil, fmt.Errorf("server: ConstraintCacheBytes %d: want 0 or more", cfg.ConstraintCacheBytes)
	}
	if cfg.ModelName == "" {
		cfg.ModelName = "reins"
	}
	if cfg.Chat == nil {
		cfg.Chat, _ = chat.Known(chat.Plain)
	}
	s := &Server{cfg: cfg, lim: cfg.Limits.withDefaults(), created: time.Now().Unix(), log: cfg.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if s.markers, err = cfg.Chat.MarkerIDs(cfg.Backend.Vocab()); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if cfg.APIKey != "" {
		s.keyHash = sha256.Sum256([]byte(cfg.APIKey))
	}
	s.trie = automaton.NewTrie(cfg.Backend.Vocab())
	v := cfg.Backend.Vocab()
	for id := range v.Len() {
		s.longestToken = max(s.longestToken, len(v.Bytes(id)))
	}
	for m := range s.markers { // a chat marker is one token
		s.longestToken = max(s.longestToken, len(m))
	}
	s.cache = newConstraintCache(64, cfg.ConstraintCacheBytes)
	s.metrics = newMetrics(s)
	s.bt = newBatcher(cfg.Backend, cfg.BatchWait)
	s.bt.observe = s.metrics.observeBatch
	s.slots = make(chan *view, cfg.Parallel)
	for i := range cfg.Parallel {
		s.slots <- newView(s.bt, i)
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /v1/completions", s.handleCompletions)
	s.mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	s.mux.HandleFunc("GET /v1/models", s.handleModels)
	s.mux.HandleFunc("GET /health", s.handleHealth)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	return s, nil
}

// HTTPServer returns an http.Server for s on addr with timeouts that
// keep a slow or silent client from holding a connection: headers
// within 10s, the whole body within 60s; a streamed response's writes
// are bounded by Limits.StreamStall.
func (s *Server) HTTPServer(addr string) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}

// Close stops the batch loop once every slot is free: call it after the
// http.Server's Shutdown (requests in flight end first). It does not
// close the backend.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		for range s.cfg.Parallel {
			<-s.slots
		}
		s.bt.close()
	})
	return nil
}

// Stats is what the server holds now, for tests and /health.
type Stats struct {
	Parallel  int   `json:"parallel"`
	FreeSlots int   `json:"free_slots"`
	InFlight  int64 `json:"in_flight"`
	Waiting   int64 `json:"waiting"`
}

// Stats returns the server's occupancy.
func (s *Server) Stats() Stats {
	return Stats{Parallel: s.cfg.Parallel, FreeSlots: len(s.slots), InFlight: s.inflight.Load(), Waiting: s.waiting.Load()}
}

// ServeHTTP checks the API key, recovers a panic as a 500, and counts
// the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	rec := &statusWriter{ResponseWriter: w}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("panic in handler", "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
			if !rec.wrote {
				writeError(rec, &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: "internal error (a bug in reins)"})
			}
		}
		s.metrics.observeRequest(r.URL.Path, rec.status, time.Since(t0))
	}()
	if s.cfg.APIKey != "" && r.URL.Path != "/health" && !s.authorized(r) {
		writeError(rec, withCode(&apiError{Status: http.StatusUnauthorized, Type: "invalid_request_error",
			Message: "missing or incorrect API key: send Authorization: Bearer KEY"}, "invalid_api_key"))
		return
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		writeError(rec, noRoute(s.mux, r))
		return
	}
	s.mux.ServeHTTP(rec, r)
}

// noRoute is the error, in OpenAI's shape, of a request no route takes:
// 405 with the methods the path takes, else 404.
func noRoute(mux *http.ServeMux, r *http.Request) *apiError {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		other := *r
		other.Method = m
		if _, pattern := mux.Handler(&other); pattern != "" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		return &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
			Message: fmt.Sprintf("%s %s: the path takes %s", r.Method, r.URL.Path, strings.Join(allowed, ", ")), allow: strings.Join(allowed, ", ")}
	}
	return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error",
		Message: fmt.Sprintf("%s %s: no such endpoint (the server has /v1/completions, /v1/chat/completions, /v1/models, /health and /metrics)", r.Method, r.URL.Path)}
}

// authorized compares the bearer token with the key in constant time
// (hashes of both, so that the length does not show either).
func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(h) < len(prefix) || h[:len(prefix)] != prefix {
		return false
	}
	got := sha256.Sum256([]byte(h[len(prefix):]))
	return subtle.ConstantTimeCompare(got[:], s.keyHash[:]) == 1
}

// admit counts a request in, or refuses it with 429 past the queue.
func (s *Server) admit() *apiError {
	if n := s.inflight.Add(1); n > int64(s.cfg.Parallel+s.cfg.QueueSize) {
		s.inflight.Add(-1)
		s.metrics.rejected.Inc()
		return &apiError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", retryAfter: 1,
			Message: fmt.Sprintf("the server is busy: %d requests decoding and %d waiting; retry later", s.cfg.Parallel, s.cfg.QueueSize)}
	}
	return nil
}

func (s *Server) done() { s.inflight.Add(-1) }

// readBody decodes the request's JSON body into v before the request is
// admitted: a client that sends its body slowly, or never, holds no
// place among the requests decoding and waiting (ten clients that sent
// half a body kept every other out for the read timeout). Bodies being
// read are bounded apart, at maxReading(), which bounds their memory.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, v any) *apiError {
	if n := s.reading.Add(1); n > s.maxReading() {
		s.reading.Add(-1)
		s.metrics.rejected.Inc()
		return &apiError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", retryAfter: 1,
			Message: fmt.Sprintf("the server is reading %d request bodies; retry later", n-1)}
	}
	defer s.reading.Add(-1)
	return decodeBody(r, s.lim.MaxBodyBytes, v, s.cfg.Strict, w)
}

// maxReading is how many request bodies may be read at once: four
// times the requests the server admits, and at least 64.
func (s *Server) maxReading() int64 {
	return max(64, 4*int64(s.cfg.Parallel+s.cfg.QueueSize))
}

// acquire waits for a free slot.
func (s *Server) acquire(ctx context.Context) (*view, error) {
	select {
	case v := <-s.slots:
		s.bt.busy.Add(1)
		return v, nil
	default:
	}
	s.waiting.Add(1)
	s.metrics.queue.Inc()
	defer func() { s.waiting.Add(-1); s.metrics.queue.Dec() }()
	select {
	case v := <-s.slots:
		s.bt.busy.Add(1)
		return v, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *Server) release(v *view) {
	v.markers = nil
	s.bt.busy.Add(-1)
	s.slots <- v
}

func (s *Server) newID(prefix string) string {
	return fmt.Sprintf("%s-%x%06x", prefix, time.Now().UnixNano()&0xffffffff, s.reqID.Add(1))
}

func (s *Server) randomSeed() uint64 { return rand.Uint64() }

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
		map[string]any{"id": s.cfg.ModelName, "object": "model", "created": s.created, "owned_by": "reins",
			"context_length": s.cfg.Backend.ContextSize(), "vocab_size": s.cfg.Backend.Vocab().Len()},
	}})
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "model": s.cfg.ModelName, "stats": s.Stats()})
}

// statusWriter records the status for metrics and whether anything was
// written; Unwrap lets http.ResponseController reach the connection.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	if e.allow != "" {
		w.Header().Set("Allow", e.allow)
	}
	writeJSON(w, e.Status, map[string]any{"error": e})
}

// metrics are the server's Prometheus metrics, in a registry of its own.
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	tokens    *prometheus.CounterVec
	mask      prometheus.Histogram
	queue     prometheus.Gauge
	rejected  prometheus.Counter
	batchSize prometheus.Histogram
	evalTime  prometheus.Histogram
	ttft      prometheus.Histogram
}

func newMetrics(s *Server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "reins_http_requests_total", Help: "HTTP requests by path and status code."}, []string{"path", "code"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "reins_http_request_seconds", Help: "Time to serve a request, to its last byte.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}, []string{"path"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "reins_tokens_total", Help: "Tokens by kind: prompt (evaluated), completion (generated), scored (echo)."}, []string{"kind"})
	m.mask = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "reins_mask_seconds", Help: "Time to fill one token mask under a constraint (it runs while the model evaluates).",
		Buckets: prometheus.ExponentialBuckets(1e-6, 4, 10)})
	m.queue = prometheus.NewGauge(prometheus.GaugeOpts{Name: "reins_queue_depth", Help: "Choices waiting for a free slot."})
	m.rejected = prometheus.NewCounter(prometheus.CounterOpts{Name: "reins_rejected_total", Help: "Requests refused with 429: the queue was full."})
	m.batchSize = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "reins_batch_sequences", Help: "Sequences evaluated together in one call of the backend.",
		Buckets: prometheus.LinearBuckets(1, 1, 16)})
	m.evalTime = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "reins_eval_seconds", Help: "Time of one batched evaluation.",
		Buckets: prometheus.ExponentialBuckets(1e-5, 4, 10)})
	m.ttft = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "reins_time_to_first_token_seconds", Help: "From a request's arrival to its first generated token.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)})
	busy := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "reins_slots_busy", Help: "Slots (sequences) in use."},
		func() float64 { return float64(s.cfg.Parallel - len(s.slots)) })
	m.reg.MustRegister(m.requests, m.duration, m.tokens, m.mask, m.queue, m.rejected, m.batchSize, m.evalTime, m.ttft, busy)
	return m
}

func (m *metrics) observeRequest(path string, status int, d time.Duration) {
	switch path {
	case "/v1/completions", "/v1/chat/completions", "/v1/models", "/health", "/metrics":
	default:
		path = "other" // bounded label values
	}
	if status == 0 {
		status = http.StatusOK
	}
	m.requests.WithLabelValues(path, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(path).Observe(d.Seconds())
}

func (m *metrics) observeBatch(seqs int, d time.Duration) {
	m.batchSize.Observe(float64(seqs))
	m.evalTime.Observe(d.Seconds())
}
