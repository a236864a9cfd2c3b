package llama

import (
	"context"
	"testing"
	"time"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/shared"
)

// BenchmarkTokenStories260K measures one generated token on a real
// trained model, with 20 alternatives per token, and splits its time
// between llama.cpp's decode and everything reins does around it
// (log-softmax, top-N, sampling, records, cache bookkeeping).
func BenchmarkTokenStories260K(b *testing.B) {
	m, err := Load(shared.Path(b, "models/stories260K.gguf"), Options{ContextSize: 512, Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	opts := decode.Options{MaxTokens: 64, TopLogprobs: 20, Sampling: decode.SamplingOptions{Temperature: 1, Seed: 1}}
	ctx := context.Background()
	tokens := 0
	llama0 := m.LlamaTime()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		c, err := decode.Complete(ctx, m, "Once upon a time", opts)
		if err != nil {
			b.Fatal(err)
		}
		tokens += len(c.Tokens) + 1
	}
	total := time.Since(start)
	inLlama := m.LlamaTime() - llama0
	b.ReportMetric(float64(total.Nanoseconds())/float64(tokens), "ns/token")
	b.ReportMetric(float64(inLlama.Nanoseconds())/float64(tokens), "llama-ns/token")
	b.ReportMetric(100*float64(total-inLlama)/float64(total), "reins-%")
}
