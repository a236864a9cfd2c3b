package decode

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// logprobsOf returns log-probabilities for the given probabilities.
func logprobsOf(ps ...float64) []float32 {
	out := make([]float32, len(ps))
	for i, p := range ps {
		out[i] = float32(math.Log(p))
	}
	return out
}

// frequencies draws n samples and returns how often each token came up.
func frequencies(t *testing.T, o SamplingOptions, lp []float32, n int) []float64 {
	t.Helper()
	s, err := NewSampler(o)
	require.NoError(t, err)
	counts := make([]float64, len(lp))
	for range n {
		id, err := s.Sample(lp)
		require.NoError(t, err)
		counts[id]++
	}
	for i := range counts {
		counts[i] /= float64(n)
	}
	return counts
}

func TestSamplerFilters(t *testing.T) {
	lp := logprobsOf(0.5, 0.25, 0.15, 0.07, 0.03)
	const n = 40000
	tests := []struct {
		name string
		opts SamplingOptions
		want []float64 // expected frequencies
	}{
		{"greedy", SamplingOptions{}, []float64{1, 0, 0, 0, 0}},
		{"temperature 1", SamplingOptions{Temperature: 1}, []float64{0.5, 0.25, 0.15, 0.07, 0.03}},
		{"top-k 2", SamplingOptions{Temperature: 1, TopK: 2}, []float64{2.0 / 3, 1.0 / 3, 0, 0, 0}},
		{"top-p 0.8", SamplingOptions{Temperature: 1, TopP: 0.8}, []float64{0.5 / 0.9, 0.25 / 0.9, 0.15 / 0.9, 0, 0}},
		{"min-p 0.2", SamplingOptions{Temperature: 1, MinP: 0.2}, []float64{0.5 / 0.9, 0.25 / 0.9, 0.15 / 0.9, 0, 0}},
		{"temperature 0.5", SamplingOptions{Temperature: 0.5}, normalise(0.25, 0.0625, 0.0225, 0.0049, 0.0009)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := frequencies(t, tt.opts, lp, n)
			for i := range got {
				assert.InDelta(t, tt.want[i], got[i], 0.012, "token %d", i)
				if tt.want[i] == 0 {
					assert.Zero(t, got[i], "token %d filtered out", i)
				}
			}
		})
	}
}

func normalise(ps ...float64) []float64 {
	var s float64
	for _, p := range ps {
		s += p
	}
	for i := range ps {
		ps[i] /= s
	}
	return ps
}

func TestSamplerNeverPicksMasked(t *testing.T) {
	ninf := float32(math.Inf(-1))
	lp := []float32{ninf, -2, ninf, -0.2, ninf}
	got := frequencies(t, SamplingOptions{Temperature: 2, TopP: 0.99}, lp, 5000)
	assert.Zero(t, got[0]+got[2]+got[4])
}

func TestSamplerOptionsValidate(t *testing.T) {
	for _, o := range []SamplingOptions{{Temperature: -1}, {Temperature: math.NaN()}, {TopK: -1}, {TopP: 2}, {MinP: -0.1}} {
		_, err := NewSampler(o)
		assert.Error(t, err, "%+v", o)
	}
}

// TestSamplerDegenerateInput: a vector with no finite log-probability
// (all -Inf, all NaN, empty) is ErrNoToken under every option, never a
// panic; a token at +Inf takes all the probability.
func TestSamplerDegenerateInput(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	options := []SamplingOptions{
		{}, {Temperature: 1}, {Temperature: 1, TopK: 2}, {Temperature: 1, TopP: 0.5}, {Temperature: 1, MinP: 0.5},
		{Temperature: 0.7, TopK: 3, TopP: 0.9, MinP: 0.1},
	}
	for _, o := range options {
		s, err := NewSampler(o)
		require.NoError(t, err)
		for _, lp := range [][]float32{{}, {-inf, -inf}, {nan, nan}, {nan, -inf}} {
			_, err := s.Sample(lp)
			assert.ErrorIs(t, err, ErrNoToken, "%+v %v", o, lp)
		}
		for range 20 {
			id, err := s.Sample([]float32{0, inf, -inf, -1})
			require.NoError(t, err, "%+v", o)
			assert.Equal(t, 1, id, "%+v: the token at +Inf", o)
		}
	}
}

// TestSamplerTinyTemperature: a temperature so small that 1/T overflows
// (below about 5.6e-309) is greedy, as the limit is, with and without
// the filters; it drew other tokens (0·Inf is NaN) or found none.
func TestSamplerTinyTemperature(t *testing.T) {
	lp := logprobsOf(0.1, 0.6, 0.3)
	for _, o := range []SamplingOptions{
		{Temperature: 1e-320}, {Temperature: 5e-324, TopP: 0.5}, {Temperature: 1e-310, MinP: 0.5}, {Temperature: 1e-320, TopK: 2},
	} {
		f := frequencies(t, o, lp, 200)
		assert.Equal(t, []float64{0, 1, 0}, f, "%+v", o)
	}
}
