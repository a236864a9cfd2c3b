package jsonschema

import (
	"math/big"
	"strings"

	"github.com/reins-go/reins/grammar"
)

// intRange is the grammar of the integers in [lo, hi] written as JSON
// writes them (no leading zeros, no "-0"); nil bounds are open.
func intRange(lo, hi *big.Int) *grammar.Node {
	var alts []*grammar.Node
	zero := big.NewInt(0)
	// Non-negative part: [max(lo, 0), hi].
	if hi == nil || hi.Sign() >= 0 {
		a := zero
		if lo != nil && lo.Sign() > 0 {
			a = lo
		}
		alts = append(alts, natRange(a.String(), hi))
	}
	// Negative part: -n for n in [max(-hi, 1), -lo].
	if lo == nil || lo.Sign() < 0 {
		a := big.NewInt(1)
		if hi != nil && hi.Sign() < 0 {
			a = new(big.Int).Neg(hi)
		}
		var b *big.Int
		if lo != nil {
			b = new(big.Int).Neg(lo)
		}
		alts = append(alts, grammar.Seq(lit("-"), natRange(a.String(), b)))
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return grammar.Alt(alts...)
}

// natRange is the grammar of the decimal numerals of [a, b], a ≥ 0 given
// as digits, b nil for no upper bound.
func natRange(a string, b *big.Int) *grammar.Node {
	var alts []*grammar.Node
	if b == nil {
		// Up to the end of a's length, then every longer numeral.
		alts = append(alts, sameLength(a, strings.Repeat("9", len(a))))
		alts = append(alts, grammar.Seq(grammar.Class('1', '9'), grammar.Repeat(grammar.Class('0', '9'), len(a), -1)))
		return grammar.Alt(alts...)
	}
	bs := b.String()
	if len(a) == len(bs) {
		return sameLength(a, bs)
	}
	alts = append(alts, sameLength(a, strings.Repeat("9", len(a))))
	for k := len(a) + 1; k < len(bs); k++ {
		alts = append(alts, grammar.Seq(grammar.Class('1', '9'), grammar.Repeat(grammar.Class('0', '9'), k-1, k-1)))
	}
	alts = append(alts, sameLength("1"+strings.Repeat("0", len(bs)-1), bs))
	return grammar.Alt(alts...)
}

// sameLength is the grammar of the numerals from a to b, which have the
// same number of digits, a ≤ b.
func sameLength(a, b string) *grammar.Node {
	if a == "" {
		return &grammar.Node{Op: grammar.OpEmpty}
	}
	// A full range of digits is any digits: without this the recursion
	// below would branch twice per digit.
	if strings.Trim(a, "0") == "" && strings.Trim(b, "9") == "" {
		return grammar.Repeat(grammar.Class('0', '9'), len(a), len(a))
	}
	if a[0] == b[0] {
		return grammar.Seq(lit(a[:1]), sameLength(a[1:], b[1:]))
	}
	rest := len(a) - 1
	alts := []*grammar.Node{grammar.Seq(lit(a[:1]), sameLength(a[1:], strings.Repeat("9", rest)))}
	if a[0]+1 <= b[0]-1 {
		alts = append(alts, grammar.Seq(grammar.Class(rune(a[0]+1), rune(b[0]-1)), grammar.Repeat(grammar.Class('0', '9'), rest, rest)))
	}
	alts = append(alts, grammar.Seq(lit(b[:1]), sameLength(strings.Repeat("0", rest), b[1:])))
	return grammar.Alt(alts...)
}
