package jsonschema

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/grammar"
)

// TestDecRangeAgainstRationals compares decRange with exact rational
// comparison over random bounds and random numerals (trailing zeros,
// "-0.0" and all).
func TestDecRangeAgainstRationals(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	values := []string{"0", "0.5", "-1.25", "10", "3.14159", "-0.001", "100.1", "7", "-7", "0.05", "1.5", "-100", "0.0001"}
	numeral := func() string {
		var b strings.Builder
		if rng.IntN(2) == 0 {
			b.WriteString("-")
		}
		fmt.Fprint(&b, []int{0, 1, 3, 7, 10, 99, 100, 101, 150}[rng.IntN(9)])
		if rng.IntN(3) > 0 {
			b.WriteString(".")
			for range 1 + rng.IntN(5) {
				b.WriteByte(byte('0' + []int{0, 0, 1, 5, 9, 2}[rng.IntN(6)]))
			}
		}
		return b.String()
	}
	bound := func() *numBound {
		if rng.IntN(5) == 0 {
			return nil
		}
		r, _ := new(big.Rat).SetString(values[rng.IntN(len(values))])
		return &numBound{v: r, strict: rng.IntN(2) == 0}
	}
	for k := range 300 {
		lo, hi := bound(), bound()
		n, err := decRange(lo, hi, k%2 == 1) // bounded: at most 12 fraction digits, more than the numerals have
		require.NoError(t, err)
		var p *grammar.Prog
		if n != nil {
			p, err = grammar.Compile(&grammar.Grammar{Start: "root", Rules: []grammar.Rule{{Name: "root", Body: n}}})
			require.NoError(t, err)
		}
		for range 200 {
			s := numeral()
			v, _ := new(big.Rat).SetString(s)
			want := (lo == nil || v.Cmp(lo.v) > 0 || (v.Cmp(lo.v) == 0 && !lo.strict)) &&
				(hi == nil || v.Cmp(hi.v) < 0 || (v.Cmp(hi.v) == 0 && !hi.strict)) &&
				!(s[0] == '-' && v.Sign() == 0) // "-0" forms are left out
			got := p != nil && acceptsText(p, s)
			require.Equal(t, want, got, "%s in [%v, %v]", s, lo, hi)
		}
	}
}

func (b *numBound) String() string {
	if b == nil {
		return "none"
	}
	s := b.v.FloatString(6)
	if b.strict {
		return "excl " + s
	}
	return s
}
