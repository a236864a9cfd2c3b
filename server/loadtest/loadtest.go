// Package loadtest drives a reins server (or any OpenAI-compatible one
// that takes reins' regex field) with many concurrent streaming clients,
// free and constrained, and reports throughput, latency to the first
// token and between tokens, and errors; every constrained output is
// validated. It only talks to the address it is given: loopback, in
// reins' tests and benchmarks.
package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Kind is a kind of request.
type Kind int

// Kinds of requests.
const (
	Free    Kind = iota // no constraint
	Regex               // reins' regex field, a long output
	Schema              // response_format json_schema, a short object
	Grammar             // reins' grammar field (GBNF)
)

func (k Kind) String() string {
	return [...]string{"free", "regex", "schema", "grammar"}[k]
}

// Options configure a run.
type Options struct {
	BaseURL   string // http://127.0.0.1:PORT
	APIKey    string
	Clients   int // concurrent clients
	Requests  int // requests in all
	MaxTokens int // per request
	// MaxTokensOf, when set, is request i's max_tokens (the lengths of
	// another run's outputs, Report.Lengths, to compare kinds on the same
	// amount of output).
	MaxTokensOf func(i int) int
	Kinds       []Kind // cycled through, request by request
	TopLogprobs int
	Prompt      string
	Client      *http.Client
}

// Stats are the figures of one kind of request, or of all.
type Stats struct {
	Requests, Errors, Invalid int
	Tokens                    int
	// Throughput is tokens per second of the run's wall time.
	Throughput float64
	// TTFT is the time to the first token; TPOT the time between tokens
	// of one stream (p50 and p99 over all gaps).
	TTFT50, TTFT99, TPOT50, TPOT99 time.Duration
	FirstErr                       string
}

// Report is the result of a run.
type Report struct {
	Wall   time.Duration
	All    Stats
	ByKind map[Kind]*Stats
	// Lengths are the tokens each request's output had, by request.
	Lengths []int
}

func (r *Report) String() string {
	var b strings.Builder
	line := func(name string, s *Stats) {
		fmt.Fprintf(&b, "%-8s %5d req %6d tok %8.0f tok/s  ttft p50 %7s p99 %7s  per token p50 %7s p99 %7s  errors %d invalid %d\n",
			name, s.Requests, s.Tokens, s.Throughput, s.TTFT50.Round(10*time.Microsecond), s.TTFT99.Round(10*time.Microsecond),
			s.TPOT50.Round(time.Microsecond), s.TPOT99.Round(time.Microsecond), s.Errors, s.Invalid)
	}
	fmt.Fprintf(&b, "wall %s\n", r.Wall.Round(time.Millisecond))
	line("all", &r.All)
	for k := Free; k <= Grammar; k++ {
		if s, ok := r.ByKind[k]; ok {
			line(k.String(), s)
		}
	}
	return b.String()
}

// The constraints of each kind, and their validators.
const (
	regexSrc   = `[a-z ,]{20,900}\.`
	schemaSrc  = `{"type": "object", "properties": {"mood": {"enum": ["happy", "sad", "calm"]}, "n": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["mood", "n"], "additionalProperties": false}`
	grammarSrc = `root ::= "[" item ("," item)* "]"
item ::= [a-z]+`
)

// Validator returns a function that reports whether text is an output
// of kind k's constraint.
func Validator() func(k Kind, text string) bool {
	regexOK := regexp.MustCompile(`^[a-z ,]{20,900}\.$`)
	grammarOK := regexp.MustCompile(`^\[[a-z]+(,[a-z]+)*\]$`)
	return func(k Kind, text string) bool { return validate(regexOK, grammarOK, k, text) }
}

func validate(regexOK, grammarOK *regexp.Regexp, k Kind, text string) bool {
	switch k {
	case Regex:
		return regexOK.MatchString(text)
	case Grammar:
		return grammarOK.MatchString(text)
	case Schema:
		var v struct {
			Mood *string `json:"mood"`
			N    *int    `json:"n"`
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if dec.Decode(&v) != nil || v.Mood == nil || v.N == nil || *v.N < 0 || *v.N > 99 {
			return false
		}
		return slices.Contains([]string{"happy", "sad", "calm"}, *v.Mood)
	}
	return true
}

func body(k Kind, o *Options, seed int) []byte {
	maxTokens := o.MaxTokens
	if o.MaxTokensOf != nil {
		maxTokens = o.MaxTokensOf(seed)
	}
	req := map[string]any{"prompt": o.Prompt, "max_tokens": maxTokens, "stream": true, "seed": seed, "temperature": 0.8}
	if o.TopLogprobs > 0 {
		req["logprobs"] = o.TopLogprobs
	}
	switch k {
	case Regex:
		req["regex"] = regexSrc
	case Schema:
		req["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "s", "strict": true, "schema": json.RawMessage(schemaSrc)}}
	case Grammar:
		req["grammar"] = grammarSrc
	}
	data, _ := json.Marshal(req)
	return data
}

type sample struct {
	i       int // the request's number
	kind    Kind
	err     string
	invalid bool
	tokens  int
	ttft    time.Duration
	gaps    []time.Duration
}

// Run runs the load and returns its report.
func Run(ctx context.Context, o Options) *Report {
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 5 * time.Minute}
	}
	if len(o.Kinds) == 0 {
		o.Kinds = []Kind{Free}
	}
	if o.Prompt == "" {
		o.Prompt = "Once upon a time"
	}
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range o.Requests {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	valid := Validator()
	var mu sync.Mutex
	var samples []sample
	t0 := time.Now()
	var wg sync.WaitGroup
	for range max(1, o.Clients) {
		wg.Go(func() {
			for i := range next {
				k := o.Kinds[i%len(o.Kinds)]
				s := one(ctx, &o, k, i, valid)
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	wall := time.Since(t0)
	rep := &Report{Wall: wall, ByKind: map[Kind]*Stats{}, Lengths: make([]int, o.Requests)}
	for _, s := range samples {
		rep.Lengths[s.i] = s.tokens
	}
	rep.All = stats(samples, wall)
	for _, k := range o.Kinds {
		if _, done := rep.ByKind[k]; done {
			continue
		}
		var ks []sample
		for _, s := range samples {
			if s.kind == k {
				ks = append(ks, s)
			}
		}
		st := stats(ks, wall)
		rep.ByKind[k] = &st
	}
	return rep
}

func stats(samples []sample, wall time.Duration) Stats {
	var s Stats
	var ttft, gaps []time.Duration
	for _, x := range samples {
		s.Requests++
		s.Tokens += x.tokens
		if x.err != "" {
			s.Errors++
			if s.FirstErr == "" {
				s.FirstErr = x.err
			}
			continue
		}
		if x.invalid {
			s.Invalid++
		}
		ttft = append(ttft, x.ttft)
		gaps = append(gaps, x.gaps...)
	}
	s.Throughput = float64(s.Tokens) / wall.Seconds()
	s.TTFT50, s.TTFT99 = pct(ttft, 0.5), pct(ttft, 0.99)
	s.TPOT50, s.TPOT99 = pct(gaps, 0.5), pct(gaps, 0.99)
	return s
}

func pct(xs []time.Duration, q float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[min(len(xs)-1, int(q*float64(len(xs))))]
}

// one sends one streaming request and reads it to the end.
func one(ctx context.Context, o *Options, k Kind, i int, valid func(Kind, string) bool) sample {
	s := sample{kind: k, i: i}
	req, err := http.NewRequestWithContext(ctx, "POST", o.BaseURL+"/v1/completions", bytes.NewReader(body(k, o, i)))
	if err != nil {
		s.err = err.Error()
		return s
	}
	req.Header.Set("Content-Type", "application/json")
	if o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	t0 := time.Now()
	resp, err := o.Client.Do(req)
	if err != nil {
		s.err = err.Error()
		return s
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		s.err = fmt.Sprintf("status %d: %s", resp.StatusCode, data)
		return s
	}
	var text strings.Builder
	last := t0
	done := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			break
		}
		var chunk struct {
			Choices []struct {
				Text     string `json:"text"`
				Logprobs *struct {
					Tokens []string `json:"tokens"`
				} `json:"logprobs"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			s.err = "bad event: " + err.Error()
			return s
		}
		if chunk.Error != nil {
			s.err = "error event: " + chunk.Error.Message
			return s
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Text)
			if c.FinishReason != nil {
				continue
			}
			now := time.Now()
			if s.tokens == 0 {
				s.ttft = now.Sub(t0)
			} else {
				s.gaps = append(s.gaps, now.Sub(last))
			}
			last = now
			s.tokens++
		}
	}
	if err := sc.Err(); err != nil {
		s.err = err.Error()
		return s
	}
	if !done {
		s.err = "the stream ended without [DONE]"
		return s
	}
	s.invalid = !valid(k, text.String())
	return s
}
