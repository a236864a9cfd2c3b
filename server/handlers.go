package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/reins-go/reins/chat"
	"github.com/reins-go/reins/decode"
)

// entry is one token of logprobs.content[]: OpenAI's fields (token,
// logprob, bytes, top_logprobs) and reins' (id; constrained, the same
// under the constrained distribution; forced).
type entry struct {
	ID          int                 `json:"id"`
	Token       string              `json:"token"`
	Logprob     float64             `json:"logprob"`
	Bytes       decode.Bytes        `json:"bytes"`
	TopLogprobs []decode.TopLogprob `json:"top_logprobs"`
	Constrained *decode.Logprobs    `json:"constrained,omitempty"`
	Forced      bool                `json:"forced,omitempty"`
}

func entryOf(t decode.Token) entry {
	e := entry{ID: t.ID, Token: t.Token, Logprob: t.Logprob, Bytes: t.Bytes, TopLogprobs: t.TopLogprobs, Constrained: t.Constrained, Forced: t.Forced}
	if e.TopLogprobs == nil {
		e.TopLogprobs = []decode.TopLogprob{}
	}
	if e.Bytes == nil {
		e.Bytes = decode.Bytes{}
	}
	if c := e.Constrained; c != nil && c.TopLogprobs == nil {
		cc := *c
		cc.TopLogprobs = []decode.TopLogprob{}
		e.Constrained = &cc
	}
	return e
}

func entries(toks []decode.Token) []entry {
	out := make([]entry, len(toks))
	for i, t := range toks {
		out[i] = entryOf(t)
	}
	return out
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// head is the start of every response object and chunk.
type head struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Created           int64  `json:"created"`
	Model             string `json:"model"`
	SystemFingerprint string `json:"system_fingerprint"`
}

func headOf(base map[string]any, object string) head {
	return head{ID: base["id"].(string), Object: object, Created: base["created"].(int64), Model: base["model"].(string), SystemFingerprint: "reins"}
}

// chatChunk and textChunk are streamed chunks, typed: one is encoded
// per token.
type chatChunk struct {
	head
	Choices []chatChunkChoice `json:"choices"`
	Usage   *usage            `json:"usage,omitempty"`
}

type chatChunkChoice struct {
	Index        int           `json:"index"`
	Delta        chatDelta     `json:"delta"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
	Reins        *reinsInfo    `json:"reins,omitempty"`
}

type chatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type chatLogprobs struct {
	Content []entry `json:"content"`
	Refusal *string `json:"refusal"`
}

type textChunk struct {
	head
	Choices []textChoice `json:"choices"`
	Usage   *usage       `json:"usage,omitempty"`
}

type textChoice struct {
	Index        int        `json:"index"`
	Text         string     `json:"text"`
	Logprobs     *legacy    `json:"logprobs"`
	FinishReason *string    `json:"finish_reason"`
	Reins        *reinsInfo `json:"reins,omitempty"`
}

// reinsInfo is reins' addition to a choice: why a constrained output was
// cut short.
type reinsInfo struct {
	Unfinished string `json:"unfinished,omitempty"`
}

func info(r *result) *reinsInfo {
	if r.unfinished == "" {
		return nil
	}
	return &reinsInfo{Unfinished: r.unfinished}
}

// sse writes server-sent events; it sends the headers with the first
// event, so that an error before any can still be a JSON response. It is
// safe for concurrent use (choices stream together).
type sse struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	stall   time.Duration
	started bool
	err     error
}

func newSSE(w http.ResponseWriter, stall time.Duration) *sse {
	return &sse{w: w, rc: http.NewResponseController(w), stall: stall}
}

func (e *sse) send(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return e.raw(data)
}

func (e *sse) raw(data []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return e.err
	}
	if !e.started {
		e.started = true
		h := e.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		e.w.WriteHeader(http.StatusOK)
	}
	_ = e.rc.SetWriteDeadline(time.Now().Add(e.stall))
	if _, err := fmt.Fprintf(e.w, "data: %s\n\n", data); err != nil {
		e.err = err
		return err
	}
	if err := e.rc.Flush(); err != nil {
		e.err = err
	}
	return e.err
}

func (e *sse) isStarted() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.started
}

// fail ends a stream: an error response before any event, else an
// error event.
func (e *sse) fail(w http.ResponseWriter, ae *apiError) {
	if ae == nil {
		return
	}
	if !e.isStarted() {
		writeError(w, ae)
		return
	}
	_ = e.send(map[string]any{"error": ae})
}

// commonParams checks the shared fields; maxTokens is the field that
// sets the budget (its name for errors).
func (s *Server) commonParams(c *common, maxTokens *int, maxName string, top int, extraStop []string) (*job, int, *apiError) {
	n, max, ae := c.counts(maxTokens, maxName, s.lim)
	if ae != nil {
		return nil, 0, ae
	}
	so, ae := c.sampling(s.randomSeed)
	if ae != nil {
		return nil, 0, ae
	}
	stop, ae := parseStop(c.Stop, s.lim)
	if ae != nil {
		return nil, 0, ae
	}
	con, param, ae := s.constraint(c)
	if ae != nil {
		return nil, 0, ae
	}
	j := &job{maxTokens: max, topLogprobs: top, con: con, conParam: param, started: time.Now(),
		opts: decode.Options{MaxTokens: max, Stop: append(stop, extraStop...), TopLogprobs: top, Sampling: so}}
	if con != nil {
		f, err := s.decodeConstraint(con)
		if err != nil {
			return nil, 0, constraintError(param, err)
		}
		j.opts.Constraint = f
	}
	return j, n, nil
}

// checkTop bounds a top_logprobs count.
func (s *Server) checkTop(param string, top int) *apiError {
	limit := min(s.lim.MaxTopLogprobs, s.cfg.Backend.Vocab().Len())
	if top < 0 || top > limit {
		return badRequest(param, fmt.Sprintf("%d: want 0 to %d (OpenAI allows 20; this server up to %d)", top, limit, limit))
	}
	return nil
}

// expand makes n jobs of each prompt from the template t, choice k of a
// prompt seeded Seed+k.
func expand(t *job, prompts []string, counts []int, n int, chat bool) []*job {
	var jobs []*job
	for p, prompt := range prompts {
		for k := range n {
			j := *t
			j.index = len(jobs)
			j.prompt, j.promptToks, j.chat = prompt, counts[p], chat
			j.opts.Sampling.Seed += uint64(k)
			jobs = append(jobs, &j)
		}
	}
	return jobs
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if ae := s.readBody(w, r, &req); ae != nil {
		writeError(w, ae)
		return
	}
	if ae := s.admit(); ae != nil {
		writeError(w, ae)
		return
	}
	defer s.done()
	prompt, ae := s.chatPrompt(&req)
	if ae != nil {
		writeError(w, ae)
		return
	}
	top := 0
	if req.TopLogprobs != nil {
		if !req.Logprobs {
			writeError(w, badRequest("top_logprobs", "needs logprobs: true"))
			return
		}
		top = *req.TopLogprobs
		if ae := s.checkTop("top_logprobs", top); ae != nil {
			writeError(w, ae)
			return
		}
	}
	maxTokens, maxName := req.MaxTokens, "max_tokens"
	if req.MaxCompletionTokens != nil {
		maxTokens, maxName = req.MaxCompletionTokens, "max_completion_tokens"
	}
	t, n, ae := s.commonParams(&req.common, maxTokens, maxName, top, s.cfg.Chat.Stop)
	if ae != nil {
		writeError(w, ae)
		return
	}
	if t.maxTokens == 0 {
		writeError(w, badRequest(maxName, "0: a chat reply needs at least one token (to score a text, use /v1/completions with echo)"))
		return
	}
	count, ae := s.countTokens("messages", prompt, true)
	if ae != nil {
		writeError(w, ae)
		return
	}
	jobs := expand(t, []string{prompt}, []int{count}, n, true)
	id := s.newID("chatcmpl")
	base := map[string]any{"id": id, "created": time.Now().Unix(), "model": s.cfg.ModelName, "system_fingerprint": "reins"}
	if req.Stream {
		s.streamChat(w, r, jobs, base, req.Logprobs, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}
	results, err := s.runAll(r.Context(), jobs, nil)
	if err != nil {
		if ae := s.runError(r, err); ae != nil {
			writeError(w, ae)
		}
		return
	}
	choices := make([]map[string]any, len(results))
	u := usage{PromptTokens: count}
	for i, res := range results {
		var lp any
		if req.Logprobs {
			lp = map[string]any{"content": entries(res.tokens), "refusal": nil}
		}
		choices[i] = map[string]any{"index": i, "message": map[string]any{"role": "assistant", "content": res.text, "refusal": nil},
			"logprobs": lp, "finish_reason": res.finish}
		if in := info(res); in != nil {
			choices[i]["reins"] = in
		}
		u.CompletionTokens += len(res.tokens)
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	resp := withBase(base, "chat.completion")
	resp["choices"], resp["usage"] = choices, u
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.lim.StreamStall))
	writeJSON(w, http.StatusOK, resp)
}

func withBase(base map[string]any, object string) map[string]any {
	m := map[string]any{"object": object}
	for k, v := range base {
		m[k] = v
	}
	return m
}

// toolChoiceNeedsNoTool reports whether a chat request's tool_choice
// can be met by a reply without a tool call: absent, null, "none" or
// "auto".
func toolChoiceNeedsNoTool(choice json.RawMessage) bool {
	switch strings.TrimSpace(string(choice)) {
	case "", "null", `"none"`, `"auto"`:
		return true
	}
	return false
}

// chatPrompt checks the messages and writes the prompt.
func (s *Server) chatPrompt(req *chatRequest) (string, *apiError) {
	switch {
	case len(req.Messages) == 0:
		return "", badRequest("messages", "empty: give at least one message")
	case len(req.Messages) > s.lim.MaxMessages:
		return "", badRequest("messages", fmt.Sprintf("%d messages: at most %d", len(req.Messages), s.lim.MaxMessages))
	case len(req.Tools) > 0 && string(req.Tools) != "null" && string(req.Tools) != "[]":
		return "", badRequest("tools", "not supported: use response_format or grammar to constrain the reply")
	case !toolChoiceNeedsNoTool(req.ToolChoice):
		return "", badRequest("tool_choice", fmt.Sprintf("%.60s asks for a tool call, and there are no tools (not supported): leave it out, or use \"none\" or \"auto\"", req.ToolChoice))
	}
	msgs := make([]chat.Message, len(req.Messages))
	size := 0
	for i, m := range req.Messages {
		role, ok := roleOf(m.Role)
		if !ok {
			return "", badRequest(fmt.Sprintf("messages[%d].role", i), fmt.Sprintf("%q: want system, developer, user or assistant", m.Role))
		}
		content, ae := chatContent(m.Content, i)
		if ae != nil {
			return "", ae
		}
		if size += len(content); size > s.lim.MaxPromptBytes {
			return "", badRequest("messages", fmt.Sprintf("more than %d bytes of content", s.lim.MaxPromptBytes))
		}
		msgs[i] = chat.Message{Role: role, Content: content}
	}
	prompt, err := s.cfg.Chat.Render(msgs)
	var me *chat.MarkerError
	switch {
	case errors.As(err, &me):
		return "", badRequest(fmt.Sprintf("messages[%d].content", me.Message), fmt.Sprintf("the content holds %q, a special token of the model's chat format", me.Marker))
	case err != nil:
		return "", badRequest("messages", err.Error())
	}
	return prompt, nil
}

func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, jobs []*job, base map[string]any, logprobs, includeUsage bool) {
	out := newSSE(w, s.lim.StreamStall)
	h := headOf(base, "chat.completion.chunk")
	chunk := func(index int, delta chatDelta, t *decode.Token, finish *string, in *reinsInfo) chatChunk {
		ch := chatChunkChoice{Index: index, Delta: delta, FinishReason: finish, Reins: in}
		if logprobs && t != nil {
			ch.Logprobs = &chatLogprobs{Content: []entry{entryOf(*t)}}
		}
		return chatChunk{head: h, Choices: []chatChunkChoice{ch}}
	}
	u := usage{PromptTokens: jobs[0].promptToks}
	usageChunk := func(u usage) any { return chatChunk{head: h, Choices: []chatChunkChoice{}, Usage: &u} }
	s.streamJobs(w, r, out, jobs, &u, includeUsage, usageChunk, func(j *job) *choiceStream {
		first := true
		cs := &choiceStream{hold: len(j.opts.Stop) > 0}
		cs.write = func(text string, t *decode.Token) error {
			delta := chatDelta{Content: &text}
			if first {
				first = false
				delta.Role = "assistant"
			}
			return out.send(chunk(j.index, delta, t, nil, nil))
		}
		cs.end = func(res *result) error {
			delta := chatDelta{}
			if first {
				empty := ""
				delta = chatDelta{Role: "assistant", Content: &empty}
			}
			finish := res.finish
			return out.send(chunk(j.index, delta, nil, &finish, info(res)))
		}
		return cs
	})
}

// choiceStream sends one choice's tokens as they come: text only in
// whole UTF-8 characters (a token may end inside one), and, with stop
// strings, each token once the next has come, so that the last, which
// may straddle the stop string, is clipped to the output.
type choiceStream struct {
	hold    bool
	held    *decode.Token
	pending []byte
	sent    int // bytes of output sent or pending
	write   func(text string, t *decode.Token) error
	end     func(res *result) error
	before  func() error // runs before the first write (the echo)
}

func (c *choiceStream) token(t decode.Token) error {
	if !c.hold {
		return c.send(t, -1)
	}
	var err error
	if c.held != nil {
		err = c.send(*c.held, -1)
	}
	c.held = &t
	return err
}

func (c *choiceStream) send(t decode.Token, clip int) error {
	if c.before != nil {
		if err := c.before(); err != nil {
			return err
		}
		c.before = nil
	}
	b := t.Bytes
	if clip >= 0 && len(b) > clip {
		b = b[:clip]
	}
	c.pending = append(c.pending, b...)
	c.sent += len(b)
	whole, rest := utf8Split(c.pending)
	err := c.write(string(whole), &t)
	c.pending = append(c.pending[:0], rest...)
	return err
}

// finish sends what is held and the end of the choice.
func (c *choiceStream) finish(res *result) error {
	if c.held != nil {
		if err := c.send(*c.held, max(0, len(res.text)-c.sent)); err != nil {
			return err
		}
	}
	if c.before != nil {
		if err := c.before(); err != nil {
			return err
		}
	}
	if len(c.pending) > 0 {
		if err := c.write(string(c.pending), nil); err != nil {
			return err
		}
	}
	return c.end(res)
}

// streamJobs runs the jobs together, each streaming through its
// choiceStream, then sends the usage (when asked) and [DONE]; a failure
// ends the stream with an error event (or a JSON error before any).
func (s *Server) streamJobs(w http.ResponseWriter, r *http.Request, out *sse, jobs []*job, u *usage, includeUsage bool, usageChunk func(usage) any, stream func(j *job) *choiceStream) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	for _, j := range jobs {
		wg.Go(func() {
			cs := stream(j)
			res, err := s.run(ctx, j, cs.token)
			if err == nil {
				err = cs.finish(res)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
				cancel()
			}
			if res != nil {
				u.CompletionTokens += len(res.tokens)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		out.fail(w, s.runError(r, firstErr))
		return
	}
	if includeUsage {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		_ = out.send(usageChunk(*u))
	}
	_ = out.raw([]byte("[DONE]"))
}

func roleOf(role string) (int, bool) {
	switch role {
	case "system", "developer":
		return 0, true
	case "user":
		return 1, true
	case "assistant":
		return 2, true
	}
	return 0, false
}

// legacy is the logprobs object of /v1/completions: OpenAI's parallel
// arrays, and reins' entries (exact bytes, ids, the constrained
// distribution) in content.
type legacy struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
	Content       []entry              `json:"content"`
}

func (l *legacy) add(t decode.Token, offset int) {
	lp := t.Logprob
	l.Tokens = append(l.Tokens, tokenText(t))
	l.TokenLogprobs = append(l.TokenLogprobs, &lp)
	top := make(map[string]float64, len(t.TopLogprobs))
	for _, a := range t.TopLogprobs {
		if _, dup := top[a.Token]; !dup {
			top[a.Token] = a.Logprob
		}
	}
	l.TopLogprobs = append(l.TopLogprobs, top)
	l.TextOffset = append(l.TextOffset, offset)
	l.Content = append(l.Content, entryOf(t))
}

// addEcho adds the prompt's tokens: those nothing conditions (the first,
// on a model without BOS) with a null logprob, as OpenAI's echo does.
func (s *Server) addEcho(l *legacy, sr *decode.ScoreResult, off *textOffset) {
	for _, text := range unscoredText(s.cfg.Backend.Vocab(), sr.Unscored) {
		l.Tokens = append(l.Tokens, text)
		l.TokenLogprobs = append(l.TokenLogprobs, nil)
		l.TopLogprobs = append(l.TopLogprobs, nil)
		l.TextOffset = append(l.TextOffset, off.next([]byte(text)))
	}
	for _, t := range sr.Tokens {
		l.add(t, off.next(t.Bytes))
	}
}

// textOffset counts characters, the unit of text_offset (OpenAI's and
// vLLM's are indices into a string of characters, not bytes), as Go
// decodes a string: each invalid byte is one character (U+FFFD). A
// character still cut short at a token's end is taken to complete (the
// tokens after it are not known yet when a token is streamed).
type textOffset struct {
	tail    []byte // the bytes from the first character not yet passed
	chars   int    // the characters before tail
	counted bool   // tail begins with a character, cut short, already in chars
}

// next returns where a token of bytes b begins, in characters of the
// text before it, and moves past b. A token that continues a character
// begun before it begins after that character.
func (o *textOffset) next(b []byte) int {
	p := len(o.tail)
	o.tail = append(o.tail, b...)
	i := 0
	for i < p { // count every character that begins before b
		if !utf8.FullRune(o.tail[i:]) { // its end is still to come
			if !o.counted {
				o.chars++
				o.counted = true
			}
			break
		}
		_, w := utf8.DecodeRune(o.tail[i:])
		if !o.counted {
			o.chars++
		}
		o.counted = false
		i += w
	}
	o.tail = o.tail[i:]
	return o.chars
}

// textOffsetAfter returns a textOffset that has passed text.
func textOffsetAfter(text string) textOffset {
	var o textOffset
	o.next([]byte(text))
	return o
}

func newLegacy() *legacy {
	return &legacy{Tokens: []string{}, TokenLogprobs: []*float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}, Content: []entry{}}
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if ae := s.readBody(w, r, &req); ae != nil {
		writeError(w, ae)
		return
	}
	if ae := s.admit(); ae != nil {
		writeError(w, ae)
		return
	}
	defer s.done()
	switch {
	case req.Suffix != nil && *req.Suffix != "":
		writeError(w, badRequest("suffix", "not supported"))
		return
	case req.BestOf != nil && *req.BestOf > 1:
		writeError(w, badRequest("best_of", "not supported: use n"))
		return
	case req.BestOf != nil && *req.BestOf < 1:
		writeError(w, badRequest("best_of", fmt.Sprintf("%d: want 1 (the one completion of each choice), or leave it out", *req.BestOf)))
		return
	}
	prompts, ae := parsePrompts(req.Prompt, s.lim)
	if ae != nil {
		writeError(w, ae)
		return
	}
	top, withLogprobs := 0, req.Logprobs != nil
	if withLogprobs {
		top = *req.Logprobs
		if ae := s.checkTop("logprobs", top); ae != nil {
			writeError(w, ae)
			return
		}
	}
	t, n, ae := s.commonParams(&req.common, req.MaxTokens, "max_tokens", top, nil)
	if ae != nil {
		writeError(w, ae)
		return
	}
	if len(prompts)*n > s.lim.MaxN {
		writeError(w, badRequest("n", fmt.Sprintf("%d prompts × n %d: at most %d choices in all", len(prompts), n, s.lim.MaxN)))
		return
	}
	t.echo = req.Echo && withLogprobs
	counts := make([]int, len(prompts))
	for i, p := range prompts {
		param := "prompt"
		if len(prompts) > 1 {
			param = fmt.Sprintf("prompt[%d]", i)
		}
		if counts[i], ae = s.countTokens(param, p, false); ae != nil {
			writeError(w, ae)
			return
		}
	}
	jobs := expand(t, prompts, counts, n, false)
	base := map[string]any{"id": s.newID("cmpl"), "created": time.Now().Unix(), "model": s.cfg.ModelName, "system_fingerprint": "reins"}
	u := usage{}
	for _, c := range counts {
		u.PromptTokens += c
	}
	if req.Stream {
		s.streamCompletions(w, r, jobs, base, req.Echo, withLogprobs, req.StreamOptions != nil && req.StreamOptions.IncludeUsage, u)
		return
	}
	results, err := s.runAll(r.Context(), jobs, nil)
	if err != nil {
		if ae := s.runError(r, err); ae != nil {
			writeError(w, ae)
		}
		return
	}
	choices := make([]map[string]any, len(results))
	for i, res := range results {
		j := jobs[i]
		text := res.text
		var lp *legacy
		if withLogprobs {
			lp = newLegacy()
		}
		var off textOffset
		if req.Echo {
			text = j.prompt + text
			if lp != nil && res.echoed != nil {
				s.addEcho(lp, res.echoed, new(textOffset))
			}
			off = textOffsetAfter(j.prompt)
		}
		if lp != nil {
			for _, tok := range res.tokens {
				lp.add(tok, off.next(tok.Bytes))
			}
		}
		var lpAny any
		if lp != nil {
			lpAny = lp
		}
		choices[i] = map[string]any{"index": i, "text": text, "logprobs": lpAny, "finish_reason": res.finish}
		if in := info(res); in != nil {
			choices[i]["reins"] = in
		}
		u.CompletionTokens += len(res.tokens)
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	resp := withBase(base, "text_completion")
	resp["choices"], resp["usage"] = choices, u
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.lim.StreamStall))
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) streamCompletions(w http.ResponseWriter, r *http.Request, jobs []*job, base map[string]any, echo, withLogprobs, includeUsage bool, u usage) {
	out := newSSE(w, s.lim.StreamStall)
	h := headOf(base, "text_completion")
	chunk := func(index int, text string, lp *legacy, finish *string, in *reinsInfo) textChunk {
		return textChunk{head: h, Choices: []textChoice{{Index: index, Text: text, Logprobs: lp, FinishReason: finish, Reins: in}}}
	}
	usageChunk := func(u usage) any { return textChunk{head: h, Choices: []textChoice{}, Usage: &u} }
	s.streamJobs(w, r, out, jobs, &u, includeUsage, usageChunk, func(j *job) *choiceStream {
		var off textOffset
		cs := &choiceStream{hold: len(j.opts.Stop) > 0}
		cs.write = func(text string, t *decode.Token) error {
			var lp *legacy
			if withLogprobs && t != nil {
				lp = newLegacy()
				lp.add(*t, off.next(t.Bytes))
			}
			return out.send(chunk(j.index, text, lp, nil, nil))
		}
		if echo {
			// The prompt goes first, scored when logprobs are asked for
			// (run scores before it generates).
			cs.before = func() error {
				var lp *legacy
				if withLogprobs && j.echoed != nil {
					lp = newLegacy()
					s.addEcho(lp, j.echoed, new(textOffset))
				}
				off = textOffsetAfter(j.prompt)
				return out.send(chunk(j.index, j.prompt, lp, nil, nil))
			}
		}
		cs.end = func(res *result) error {
			finish := res.finish
			return out.send(chunk(j.index, "", nil, &finish, info(res)))
		}
		return cs
	})
}
