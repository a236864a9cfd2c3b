package decode

import (
	"math"
)

// LogSoftmax writes into dst the log-probabilities of the distribution
// whose logits are given, and returns log Σ exp(logits), the log of the
// normaliser. dst may be logits itself. Logits of -Inf (masked tokens)
// get log-probability -Inf. It is numerically stable: the largest logit
// is subtracted before exponentiation, and the sum is kept in float64.
//
// When every logit is -Inf, or the logits hold a NaN or +Inf, dst is left
// unchanged and LogSoftmax returns NaN.
func LogSoftmax(dst, logits []float32) float64 {
	dst = dst[:len(logits)]
	maxLogit := float32(math.Inf(-1))
	for _, x := range logits {
		if x > maxLogit {
			maxLogit = x
		}
		if x != x {
			return math.NaN()
		}
	}
	if math.IsInf(float64(maxLogit), 0) {
		return math.NaN()
	}
	m := float64(maxLogit)
	sum := sumExp(logits, maxLogit)
	// x - max is exact or nearly so in float32; subtracting the small
	// log Σ after that keeps every log-probability precise however large
	// the logits are.
	logSum := math.Log(sum)
	shift := float32(logSum)
	for i, x := range logits {
		dst[i] = (x - maxLogit) - shift
	}
	logZ := m + logSum
	return logZ
}

// sumExpGeneric returns Σ e^(x-m) over xs, for m ≥ every x, four elements per
// iteration with separate sums so that the arithmetic overlaps.
func sumExpGeneric(xs []float32, m float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(xs); i += 4 {
		s0 += expNonPositive(float64(xs[i] - m))
		s1 += expNonPositive(float64(xs[i+1] - m))
		s2 += expNonPositive(float64(xs[i+2] - m))
		s3 += expNonPositive(float64(xs[i+3] - m))
	}
	for ; i < len(xs); i++ {
		s0 += expNonPositive(float64(xs[i] - m))
	}
	return (s0 + s1) + (s2 + s3)
}

// exp2Frac holds 2^(j/256) for j in [0, 256). Computed once, never changed.
var exp2Frac = func() (t [256]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 256)
	}
	return t
}()

// expNonPositive returns e^y for y ≤ 0, to a relative error below 3·10⁻⁷
// (finer than a float32 logit), at a fraction of math.Exp's cost. It
// writes y = (256k + j)·ln2/256 + r with |r| ≤ ln2/512, so that
// e^y = 2^k · 2^(j/256) · e^r, takes 2^(j/256) from a table and e^r from
// its cubic Taylor polynomial, and applies 2^k to the exponent bits.
func expNonPositive(y float64) float64 {
	if y < -708 { // beyond here the result is not a normal float64
		return 0
	}
	kj := int64(y*(256*math.Log2E) - 0.5) // round to nearest, for y ≤ 0
	r := y - float64(kj)*(math.Ln2/256)
	p := 1 + r*(1+r*(0.5+r*(1.0/6)))
	return math.Float64frombits(math.Float64bits(exp2Frac[kj&255]*p) + uint64(kj>>8)<<52)
}

// TopN returns the ids of the n largest values of xs in decreasing order
// of value, ties broken by the lower id. It appends to dst (which may be
// nil) and does not sort the whole vector: it keeps a heap of n entries,
// so it costs O(len(xs) + k·log n) where k ≪ len(xs) are the entries that
// enter the heap. -Inf and NaN values are never returned.
func TopN(dst []int, xs []float32, n int) []int {
	if n <= 0 {
		return dst
	}
	if n > len(xs) {
		n = len(xs)
	}
	base := len(dst)
	// h is a min-heap by (value, -id) of the best candidates so far.
	h := dst
	less := func(a, b int) bool { // a is worse than b
		if xs[a] != xs[b] {
			return xs[a] < xs[b]
		}
		return a > b
	}
	down := func(i int) {
		size := len(h) - base
		for {
			l := 2*i + 1
			if l >= size {
				return
			}
			c := l
			if r := l + 1; r < size && less(h[base+r], h[base+l]) {
				c = r
			}
			if !less(h[base+c], h[base+i]) {
				return
			}
			h[base+i], h[base+c] = h[base+c], h[base+i]
			i = c
		}
	}
	negInf := float32(math.Inf(-1))
	threshold := negInf // the worst value in a full heap
	for id, x := range xs {
		if x < threshold || x == negInf || x != x {
			continue
		}
		if len(h)-base < n {
			h = append(h, id)
			// sift up
			i := len(h) - base - 1
			for i > 0 {
				p := (i - 1) / 2
				if !less(h[base+i], h[base+p]) {
					break
				}
				h[base+i], h[base+p] = h[base+p], h[base+i]
				i = p
			}
			if len(h)-base == n {
				threshold = xs[h[base]]
			}
			continue
		}
		if !less(h[base], id) {
			continue
		}
		h[base] = id
		down(0)
		threshold = xs[h[base]]
	}
	// Heap-sort in place: move the worst to the end, shrink, repeat; the
	// best ends up first.
	full := h
	for size := len(full) - base; size > 1; size-- {
		full[base], full[base+size-1] = full[base+size-1], full[base]
		h = full[:base+size-1]
		down(0)
	}
	return full
}
