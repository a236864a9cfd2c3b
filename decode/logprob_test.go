package decode

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExpNonPositiveMatchesMathExp(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		x := -r.Float64() * 800
		want := math.Exp(x)
		got := expNonPositive(x)
		if want < 1e-300 {
			assert.InDelta(t, want, got, 1e-300)
			continue
		}
		require.InEpsilon(t, want, got, 3e-7, "x=%v", x)
	}
	assert.Equal(t, 1.0, expNonPositive(0))
	assert.Equal(t, 0.0, expNonPositive(math.Inf(-1)))
}

func TestLogSoftmax(t *testing.T) {
	ninf := float32(math.Inf(-1))
	tests := []struct {
		name   string
		logits []float32
	}{
		{"uniform", []float32{0, 0, 0, 0}},
		{"large", []float32{1000, 999, 998}},
		{"very negative", []float32{-1e4, -1e4 - 1}},
		{"masked", []float32{ninf, 2, ninf, 1}},
		{"one", []float32{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := make([]float32, len(tt.logits))
			logZ := LogSoftmax(dst, tt.logits)
			// Reference in float64 with math.Exp.
			m := math.Inf(-1)
			for _, x := range tt.logits {
				m = math.Max(m, float64(x))
			}
			var sum float64
			for _, x := range tt.logits {
				sum += math.Exp(float64(x) - m)
			}
			assert.InDelta(t, m+math.Log(sum), logZ, 1e-9)
			var total float64
			for i, x := range tt.logits {
				if x == ninf {
					assert.True(t, math.IsInf(float64(dst[i]), -1))
					continue
				}
				assert.InDelta(t, float64(x)-m-math.Log(sum), float64(dst[i]), 1e-5)
				total += math.Exp(float64(dst[i]))
			}
			assert.InDelta(t, 1, total, 1e-6)
		})
	}
}

func TestLogSoftmaxRefusesDegenerate(t *testing.T) {
	ninf := float32(math.Inf(-1))
	for _, logits := range [][]float32{{ninf, ninf}, {1, float32(math.NaN())}, {float32(math.Inf(1)), 0}} {
		dst := []float32{7, 7}
		assert.True(t, math.IsNaN(LogSoftmax(dst, logits)))
		assert.Equal(t, []float32{7, 7}, dst, "dst untouched")
	}
}

func TestTopN(t *testing.T) {
	ninf := float32(math.Inf(-1))
	xs := []float32{0.5, 3, ninf, 3, -1, 7, 0.5}
	tests := []struct {
		n    int
		want []int
	}{
		{0, nil},
		{1, []int{5}},
		{3, []int{5, 1, 3}},
		{5, []int{5, 1, 3, 0, 6}},
		{7, []int{5, 1, 3, 0, 6, 4}}, // -Inf never returned
		{100, []int{5, 1, 3, 0, 6, 4}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, TopN(nil, xs, tt.n), "n=%d", tt.n)
	}
	// Appends to dst.
	assert.Equal(t, []int{42, 5, 1}, TopN([]int{42}, xs, 2))
}

func TestTopNAgainstSort(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		xs := make([]float32, 1+r.IntN(500))
		for i := range xs {
			xs[i] = float32(r.IntN(50)) // many ties
		}
		ids := make([]int, len(xs))
		for i := range ids {
			ids[i] = i
		}
		sort.SliceStable(ids, func(a, b int) bool { return xs[ids[a]] > xs[ids[b]] })
		n := r.IntN(len(xs) + 2)
		want := ids[:min(n, len(ids))]
		got := TopN(nil, xs, n)
		if n == 0 {
			want = nil
		}
		require.True(t, slices.Equal(want, got), "n=%d want %v got %v", n, want, got)
	}
}

func benchLogits(n int) []float32 {
	r := rand.New(rand.NewPCG(5, 6))
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(r.NormFloat64() * 4)
	}
	return xs
}

// BenchmarkLogSoftmaxTop20 is the per-token cost of turning a Llama-3
// sized logit vector (128,256) into log-probabilities plus the top 20.
func BenchmarkLogSoftmaxTop20(b *testing.B) {
	logits := benchLogits(128256)
	dst := make([]float32, len(logits))
	top := make([]int, 0, 20)
	b.ReportAllocs()
	for b.Loop() {
		LogSoftmax(dst, logits)
		top = TopN(top[:0], dst, 20)
	}
}

func BenchmarkLogSoftmax128k(b *testing.B) {
	logits := benchLogits(128256)
	dst := make([]float32, len(logits))
	for b.Loop() {
		LogSoftmax(dst, logits)
	}
}

func BenchmarkTop20Of128k(b *testing.B) {
	logits := benchLogits(128256)
	top := make([]int, 0, 20)
	for b.Loop() {
		top = TopN(top[:0], logits, 20)
	}
}

func TestSumExpMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, n := range []int{0, 1, 7, 8, 9, 63, 1000, 128256} {
		xs := make([]float32, n)
		m := float32(math.Inf(-1))
		for i := range xs {
			xs[i] = float32(r.NormFloat64()*6 - 3)
			if i%97 == 5 {
				xs[i] = float32(math.Inf(-1)) // masked
			}
			if i%131 == 7 {
				xs[i] = -200 // far below the rest
			}
			m = max(m, xs[i])
		}
		if n == 0 {
			m = 0
		}
		var want float64
		for _, x := range xs {
			want += math.Exp(float64(x) - float64(m))
		}
		got := sumExp(xs, m)
		if n == 0 {
			assert.Zero(t, got)
			continue
		}
		assert.InEpsilon(t, want, got, 3e-7, "n=%d", n)
		assert.InEpsilon(t, want, sumExpGeneric(xs, m), 3e-7, "generic, n=%d", n)
	}
}
