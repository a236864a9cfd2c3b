package logspace

import (
	"math"
	"testing"
)

func TestAdd(t *testing.T) {
	for _, c := range []struct{ a, b, want float64 }{
		{math.Log(0.25), math.Log(0.5), math.Log(0.75)},
		{math.Inf(-1), math.Log(0.5), math.Log(0.5)},
		{math.Log(0.5), math.Inf(-1), math.Log(0.5)},
		{math.Inf(-1), math.Inf(-1), math.Inf(-1)},
		{-1000, -1000, -1000 + math.Ln2}, // e^-1000 underflows; the sum must not
	} {
		if got := Add(c.a, c.b); math.Abs(got-c.want) > 1e-12 && got != c.want {
			t.Errorf("Add(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
