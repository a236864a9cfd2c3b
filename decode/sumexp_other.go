//go:build !amd64

package decode

func sumExp(xs []float32, m float32) float64 { return sumExpGeneric(xs, m) }
