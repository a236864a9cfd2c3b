package llama

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/gguf"
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

// syntheticModel writes a llama model with the fixture's vocabulary
// and random weights: embd dimensions, layers layers, a feed-forward of
// 2×embd, 4 heads. It has about layers×10×embd² + 2×265×embd
// parameters.
func syntheticModel(t testing.TB, embd, layers uint64) string {
	t.Helper()
	m := readModel(t, fixturePath(t))
	r := rand.New(rand.NewPCG(embd, layers))
	ff := 2 * embd
	weights := func(shape ...uint64) gguf.Tensor {
		n := uint64(1)
		for _, s := range shape {
			n *= s
		}
		d := make([]float32, n)
		scale := float32(1 / math.Sqrt(float64(shape[0])))
		for i := range d {
			d[i] = (r.Float32()*2 - 1) * scale
		}
		return gguf.Tensor{Shape: shape, Data: d}
	}
	ones := func(n uint64) gguf.Tensor {
		d := make([]float32, n)
		for i := range d {
			d[i] = 1
		}
		return gguf.Tensor{Shape: []uint64{n}, Data: d}
	}
	v := uint64(len(m.tokens()))
	named := func(name string, t gguf.Tensor) gguf.Tensor { t.Name = name; return t }
	m.tensors = []gguf.Tensor{
		named("token_embd.weight", weights(embd, v)),
		named("output_norm.weight", ones(embd)),
		named("output.weight", weights(embd, v)),
	}
	for l := range layers {
		p := fmt.Sprintf("blk.%d.", l)
		m.tensors = append(m.tensors,
			named(p+"attn_norm.weight", ones(embd)),
			named(p+"attn_q.weight", weights(embd, embd)),
			named(p+"attn_k.weight", weights(embd, embd)),
			named(p+"attn_v.weight", weights(embd, embd)),
			named(p+"attn_output.weight", weights(embd, embd)),
			named(p+"ffn_norm.weight", ones(embd)),
			named(p+"ffn_gate.weight", weights(embd, ff)),
			named(p+"ffn_down.weight", weights(ff, embd)),
			named(p+"ffn_up.weight", weights(embd, ff)),
		)
	}
	m.set("llama.embedding_length", uint32(embd)).set("llama.block_count", uint32(layers)).
		set("llama.feed_forward_length", uint32(ff)).set("llama.rope.dimension_count", uint32(embd/4))
	return m.write(t, filepath.Join(t.TempDir(), fmt.Sprintf("synthetic-%d-%d.gguf", embd, layers)))
}

// BenchmarkThreads times a generated token on models of several sizes
// with 1, 2 and all threads: the measurements behind DefaultThreads.
//
//	go test ./backends/llama -run '^$' -bench Threads -benchtime 20x
func BenchmarkThreads(b *testing.B) {
	sizes := []struct{ embd, layers uint64 }{{64, 1}, {128, 2}, {256, 4}, {384, 6}, {512, 6}, {768, 8}}
	threads := []int{1, 2}
	if runtime.NumCPU() > 2 {
		threads = append(threads, runtime.NumCPU())
	}
	for _, s := range sizes {
		path := syntheticModel(b, s.embd, s.layers)
		for _, th := range threads {
			m, err := Load(path, Options{ContextSize: 256, Sequences: 1, Threads: th})
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("params=%.1fM/threads=%d", float64(m.Params())/1e6, th), func(b *testing.B) {
				opts := decode.Options{MaxTokens: 32, Sampling: decode.SamplingOptions{Temperature: 1, Seed: 1}}
				tokens := 0
				for b.Loop() {
					c, err := decode.Complete(context.Background(), m, "Once upon", opts)
					if err != nil {
						b.Fatal(err)
					}
					tokens += len(c.Tokens)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(tokens), "ns/token")
			})
			m.Close()
		}
	}
}
