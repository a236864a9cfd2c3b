package llama

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/fixture"
	"github.com/reins-go/reins/internal/shared"
)

// evalClock is a backend that records when each evaluation starts and
// ends, so that a generation's time splits into the model's and reins'.
type evalClock struct {
	decode.LogitsBackend
	spans [][2]time.Time
}

func (c *evalClock) Eval(ctx context.Context, reqs []decode.EvalRequest) error {
	start := time.Now()
	err := c.LogitsBackend.Eval(ctx, reqs)
	c.spans = append(c.spans, [2]time.Time{start, time.Now()})
	return err
}

// between returns the times between one evaluation's end and the next
// one's start: what reins does for a token (mask, log-softmax, top-N,
// sampling, advance), less what it does during the evaluation.
func (c *evalClock) between() []time.Duration {
	var out []time.Duration
	for i := 1; i < len(c.spans); i++ {
		out = append(out, c.spans[i][0].Sub(c.spans[i-1][1]))
	}
	return out
}

// BenchmarkConstrainedJSON generates JSON under a MaskBench schema and
// free text with the same model, a llama with Llama-3's 128,256-token
// vocabulary, random weights and small layers (one token's evaluation
// takes a few milliseconds, as a small real model's does here), one after
// the other in each iteration. It reports both rates, their ratio, and
// reins' own time per token at p50 and p99 for each. Masks are filled
// while the model evaluates, so a constrained token should cost what a
// free one does.
func BenchmarkConstrainedJSON(b *testing.B) {
	path := filepath.Join(b.TempDir(), "random-llama3.gguf")
	shape := fixture.RandomShape{Embd: 64, Layers: 2, Heads: 4, FF: 128, Context: 4096, Seed: 1}
	if err := fixture.WriteRandom(path, shared.Path(b, "vocab/ggml-vocab-llama-bpe.gguf"), shape); err != nil {
		b.Fatal(err)
	}
	lm, err := Load(path, Options{ContextSize: 1024, Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer lm.Close()
	raw, err := os.ReadFile(shared.Path(b, "maskbench-dev/Glaiveai2K---analyze_health_data_ecfa5553.json"))
	if err != nil {
		b.Fatal(err)
	}
	var file struct{ Schema json.RawMessage }
	if err := json.Unmarshal(raw, &file); err != nil {
		b.Fatal(err)
	}
	schema, err := reins.JSONSchema(file.Schema, nil)
	if err != nil {
		b.Fatal(err)
	}
	clock := &evalClock{LogitsBackend: lm}
	m := reins.New(clock)
	ctx := context.Background()
	const maxTokens = 96
	type run struct {
		tokens int
		time   time.Duration
		reins  []time.Duration
	}
	var free, constrained run
	measure := func(r *run, opts reins.Options) {
		clock.spans = clock.spans[:0]
		start := time.Now()
		out, err := m.Generate(ctx, "Data:", opts)
		if err != nil {
			b.Fatal(err)
		}
		r.time += time.Since(start)
		r.tokens += len(out.Tokens)
		r.reins = append(r.reins, clock.between()...)
	}
	// Warm the automaton's caches once, as a server would be warm.
	measure(&run{}, reins.Options{Constraint: schema, MaxTokens: maxTokens, Temperature: 1})
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		measure(&free, reins.Options{MaxTokens: maxTokens, Temperature: 1, Seed: uint64(i)})
		measure(&constrained, reins.Options{Constraint: schema, MaxTokens: maxTokens, Temperature: 1, Seed: uint64(i)})
	}
	rate := func(r run) float64 { return float64(r.tokens) / r.time.Seconds() }
	pct := func(ds []time.Duration, q float64) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[int(q*float64(len(s)-1))].Microseconds())
	}
	b.ReportMetric(rate(free), "free-tok/s")
	b.ReportMetric(rate(constrained), "json-tok/s")
	b.ReportMetric(100*rate(constrained)/rate(free), "json/free-%")
	b.ReportMetric(pct(free.reins, 0.5), "free-reins-p50-µs")
	b.ReportMetric(pct(free.reins, 0.99), "free-reins-p99-µs")
	b.ReportMetric(pct(constrained.reins, 0.5), "json-reins-p50-µs")
	b.ReportMetric(pct(constrained.reins, 0.99), "json-reins-p99-µs")
}
