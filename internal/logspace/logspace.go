// Package logspace adds probabilities held as natural logarithms.
package logspace

import "math"

// Add returns log(e^a + e^b) without leaving log space: exact for -Inf
// (probability 0) and free of overflow for large magnitudes.
func Add(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(a, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}
