package decode

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Sampler picks the next token from a vector of log-probabilities, one
// per logit. Disallowed tokens (masked by a constraint) hold -Inf and
// must not be picked; a sampler that finds nothing to pick returns an
// error (ErrNoToken, or its own).
type Sampler interface {
	Sample(logprobs []float32) (int, error)
}

// SamplerFunc adapts a function to the Sampler interface, for users who
// bring their own sampling rule.
type SamplerFunc func(logprobs []float32) (int, error)

// Sample calls f.
func (f SamplerFunc) Sample(logprobs []float32) (int, error) { return f(logprobs) }

// SamplingOptions configures the built-in sampler. The zero value is
// greedy decoding.
//
// The filters apply in this order: top-k on the log-probabilities, then
// temperature, then top-p and min-p on the tempered distribution; the
// token is drawn from what remains, renormalised.
type SamplingOptions struct {
	Temperature float64 // 0 is greedy (argmax); otherwise > 0
	TopK        int     // keep the k most likely tokens; 0 keeps all
	TopP        float64 // keep the smallest set whose probability reaches p; 0 or 1 keeps all
	MinP        float64 // keep tokens with probability ≥ MinP × the best one's; 0 keeps all
	Seed        uint64  // seed of the random source; the same seed gives the same draws
}

// Validate reports the first option that is out of range.
func (o SamplingOptions) Validate() error {
	switch {
	case o.Temperature < 0 || math.IsNaN(o.Temperature) || math.IsInf(o.Temperature, 0):
		return &OptionError{"Temperature", fmt.Sprint(o.Temperature), "want a finite number ≥ 0"}
	case o.TopK < 0:
		return &OptionError{"TopK", fmt.Sprint(o.TopK), "want ≥ 0"}
	case !(o.TopP >= 0 && o.TopP <= 1):
		return &OptionError{"TopP", fmt.Sprint(o.TopP), "want a number in [0, 1]"}
	case !(o.MinP >= 0 && o.MinP <= 1):
		return &OptionError{"MinP", fmt.Sprint(o.MinP), "want a number in [0, 1]"}
	}
	return nil
}

// NewSampler returns the built-in sampler for o. A sampler holds its
// random source and scratch space: use one per sequence, not concurrently.
func NewSampler(o SamplingOptions) (Sampler, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &sampler{opts: o, rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))}, nil
}

type sampler struct {
	opts  SamplingOptions
	rng   *rand.Rand
	cand  []int     // candidate ids
	probs []float64 // their tempered, unnormalised probabilities
}

// ErrNoToken is what the built-in sampler returns when no token has a
// finite log-probability: there is nothing to sample.
var ErrNoToken = errors.New("decode: no token has a finite log-probability: nothing to sample")

func (s *sampler) Sample(lp []float32) (int, error) {
	if s.opts.Temperature == 0 {
		best := TopN(s.cand[:0], lp, 1)
		if len(best) == 0 {
			return 0, ErrNoToken
		}
		return best[0], nil
	}
	// Top-k, or every finite token.
	if k := s.opts.TopK; k > 0 {
		s.cand = TopN(s.cand[:0], lp, k)
	} else {
		s.cand = s.cand[:0]
		for id, x := range lp {
			if !math.IsInf(float64(x), -1) && x == x {
				s.cand = append(s.cand, id)
			}
		}
	}
	if len(s.cand) == 0 {
		return 0, ErrNoToken
	}
	// Temperature: p ∝ exp(lp / T), relative to the best candidate.
	best := float32(math.Inf(-1))
	for _, id := range s.cand {
		best = max(best, lp[id])
	}
	invT := 1 / s.opts.Temperature
	s.probs = s.probs[:0]
	var total float64
	for _, id := range s.cand {
		var p float64
		if math.IsInf(float64(best), 1) {
			// A token at +Inf takes all the probability (shared with any
			// other at +Inf), as it does in the limit.
			if math.IsInf(float64(lp[id]), 1) {
				p = 1
			}
		} else if d := float64(lp[id] - best); d == 0 {
			p = 1 // the best, also where invT overflows to +Inf (T below 1/MaxFloat64), where 0·Inf is NaN
		} else {
			p = expNonPositive(d * invT)
		}
		s.probs = append(s.probs, p)
		total += p
	}
	// min-p: relative to the best, whose weight is 1.
	if mp := s.opts.MinP; mp > 0 {
		total = s.keep(func(p float64) bool { return p >= mp })
	}
	// top-p: the smallest set, most likely first, reaching p of the mass.
	if tp := s.opts.TopP; tp > 0 && tp < 1 {
		total = s.nucleus(tp * total)
	}
	if len(s.cand) == 0 {
		return 0, ErrNoToken
	}
	u := s.rng.Float64() * total
	for i, p := range s.probs {
		if u < p {
			return s.cand[i], nil
		}
		u -= p
	}
	return s.cand[len(s.cand)-1], nil // rounding left u ≥ the last weight
}

// keep drops the candidates whose weight fails ok and returns the new total.
func (s *sampler) keep(ok func(float64) bool) float64 {
	n := 0
	var total float64
	for i, p := range s.probs {
		if ok(p) {
			s.cand[n], s.probs[n] = s.cand[i], p
			total += p
			n++
		}
	}
	s.cand, s.probs = s.cand[:n], s.probs[:n]
	return total
}

// nucleus keeps the most likely candidates until their weight reaches
// mass, and returns their total. It orders candidates with a max-heap it
// pops only as far as needed, so it costs O(n + k log n) for the k it keeps.
func (s *sampler) nucleus(mass float64) float64 {
	n := len(s.cand)
	less := func(i, j int) bool { // heap order: larger weight first, then lower id
		if s.probs[i] != s.probs[j] {
			return s.probs[i] > s.probs[j]
		}
		return s.cand[i] < s.cand[j]
	}
	swap := func(i, j int) {
		s.cand[i], s.cand[j] = s.cand[j], s.cand[i]
		s.probs[i], s.probs[j] = s.probs[j], s.probs[i]
	}
	down := func(i, size int) { // sift down in the heap [0, size)
		for {
			l := 2*i + 1
			if l >= size {
				return
			}
			c := l
			if r := l + 1; r < size && less(r, l) {
				c = r
			}
			if !less(c, i) {
				return
			}
			swap(i, c)
			i = c
		}
	}
	for i := n/2 - 1; i >= 0; i-- {
		down(i, n)
	}
	// Pop the best to the end of the heap until the kept mass is reached;
	// the kept candidates end up in [size, n).
	var total float64
	size := n
	for size > 0 && total < mass {
		total += s.probs[0]
		swap(0, size-1)
		size--
		down(0, size)
	}
	s.cand, s.probs = s.cand[size:], s.probs[size:]
	return total
}
