package jsonschema

import (
	"math/big"

	"github.com/reins-go/reins/grammar"
)

// multipleOf: a number q in JSON is P/10^k (P a whole number, k the
// digits after its point), so a value v is a multiple of q when v has
// at most k digits after the point (zeros aside) and v×10^k is divisible
// by P. An integer is a multiple of P/10^k when it is divisible by P.
// The grammar is, by cases: where P is 1, the range with at most k
// fraction digits; where the range holds few multiples, those values;
// else an automaton over the numeral that keeps the remainder modulo P,
// for ranges it can say (none, or from 0 or below 0). Exponents are left
// out (narrower).

// maxMultiples bounds the multiples of a range written out one by one.
const maxMultiples = 256

// maxModulus bounds P, the automaton's remainders.
const maxModulus = 1000

// scaled returns q as P and k: q = P/10^k.
func scaled(q *big.Rat) (*big.Int, int) {
	k := 0
	p := new(big.Rat).Set(q)
	ten := big.NewRat(10, 1)
	for !p.IsInt() && k < maxFracDigits {
		p.Mul(p, ten)
		k++
	}
	return new(big.Int).Set(p.Num()), k
}

// multipleNode compiles the numbers of n (integers only with integer)
// that are multiples of n's multipleOf, between its bounds.
func (c *compiler) multipleNode(n *Node, integer bool) (*grammar.Node, error) {
	ptr := n.Num.Ptr
	if len(n.NotEnum) > 0 {
		return nil, c.errorf(ptr, "multipleOf", "multipleOf beside excluded values is not supported")
	}
	// One modulus: for integers, the lcm of the numerators; for numbers,
	// one multipleOf (or integral ones, which make them integers).
	p, k := big.NewInt(1), 0
	allIntegral := true
	for _, q := range n.Num.MultipleOf {
		qp, qk := scaled(q)
		if qk > 0 {
			allIntegral = false
		}
		if integer || qk == 0 {
			g := new(big.Int).GCD(nil, nil, p, qp)
			p.Div(new(big.Int).Mul(p, qp), g)
		}
	}
	if !integer && !allIntegral {
		if len(n.Num.MultipleOf) > 1 {
			return nil, c.errorf(ptr, "multipleOf", "two multipleOf on numbers that are not integers are not supported")
		}
		p, k = scaled(n.Num.MultipleOf[0])
	}
	integer = integer || allIntegral
	lo, hi := n.Num.Lo, n.Num.Hi
	if c.opts.Bounded {
		lo, hi = boundRange(lo, hi)
	}
	if p.Cmp(big.NewInt(1)) == 0 {
		if integer {
			m := *n
			m.Num.MultipleOf = nil
			return c.integer(&m)
		}
		g, err := decRangeDigits(lo, hi, k)
		if err != nil {
			return nil, c.errorf(ptr, "multipleOf", "%v", err)
		}
		if g == nil {
			return nil, c.emptyf(ptr, "multipleOf", "no multiple lies between the bounds")
		}
		return g, nil
	}
	// q = P/10^k: the multiples between the bounds, when few.
	q := new(big.Rat).SetFrac(p, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil))
	if lo != nil && hi != nil {
		first := new(big.Rat).Quo(lo.v, q)
		i := ceilRat(first)
		if lo.strict && first.IsInt() {
			i.Add(i, big.NewInt(1))
		}
		last := new(big.Rat).Quo(hi.v, q)
		j := floorRat(last)
		if hi.strict && last.IsInt() {
			j.Sub(j, big.NewInt(1))
		}
		count := new(big.Int).Sub(j, i)
		if count.Sign() < 0 {
			return nil, c.emptyf(ptr, "multipleOf", "no multiple lies between the bounds")
		}
		if count.Cmp(big.NewInt(maxMultiples)) < 0 {
			var alts []*grammar.Node
			for x := new(big.Int).Set(i); x.Cmp(j) <= 0; x.Add(x, big.NewInt(1)) {
				v := new(big.Rat).Mul(new(big.Rat).SetInt(x), q)
				g, err := c.numberLiteral(v, integer)
				if err != nil {
					return nil, c.errorf(ptr, "multipleOf", "%v", err)
				}
				alts = append(alts, g)
			}
			return grammar.Alt(alts...), nil
		}
	}
	// Else the automaton, for the ranges it can say: none, or from 0 (or
	// from just above 0 up to q) on, or up to 0 (or down to -q).
	if !p.IsInt64() || p.Int64() > maxModulus {
		return nil, c.errorf(ptr, "multipleOf", "multipleOf %s with a modulus above %d is not supported", n.Num.MultipleOf[0].RatString(), maxModulus)
	}
	sign := 0        // 1: no negative numbers; -1: no positive ones
	nonzero := false // 0 left out
	switch {
	case lo == nil && hi == nil:
	case hi == nil && lo.v.Sign() >= 0 && lo.v.Cmp(q) <= 0:
		sign = 1
		nonzero = lo.v.Sign() > 0 || lo.strict
		if lo.v.Cmp(q) == 0 && lo.strict {
			return nil, c.errorf(ptr, "multipleOf", "multipleOf beside these bounds is not supported")
		}
	case lo == nil && hi.v.Sign() <= 0 && new(big.Rat).Neg(hi.v).Cmp(q) <= 0:
		sign = -1
		nonzero = hi.v.Sign() < 0 || hi.strict
		if new(big.Rat).Neg(hi.v).Cmp(q) == 0 && hi.strict {
			return nil, c.errorf(ptr, "multipleOf", "multipleOf beside these bounds is not supported")
		}
	default:
		return nil, c.errorf(ptr, "multipleOf", "multipleOf beside bounds that hold more than %d multiples is not supported", maxMultiples)
	}
	suffix := integer && c.p.version >= 6 && !c.opts.Bounded
	d := multipleDFA(int(p.Int64()), k, sign, nonzero, integer, suffix)
	return c.dfaGrammar(d.minimize(), ptr, func(int32) *grammar.Node { return &grammar.Node{Op: grammar.OpEmpty} })
}

// ceilRat is the smallest integer at least r.
func ceilRat(r *big.Rat) *big.Int {
	f := floorRat(r)
	if !r.IsInt() {
		f.Add(f, big.NewInt(1))
	}
	return f
}

// numberLiteral is the value v as JSON writes it (with trailing zeros
// after the point; for an integer, from draft 6 on, with a zero
// fraction).
func (c *compiler) numberLiteral(v *big.Rat, integer bool) (*grammar.Node, error) {
	if integer {
		g := intRange(v.Num(), v.Num())
		if c.p.version >= 6 && !c.opts.Bounded {
			g = grammar.Seq(g, grammar.Repeat(grammar.Seq(lit("."), grammar.Repeat(lit("0"), 1, -1)), 0, 1))
		}
		return g, nil
	}
	g, err := decRange(&numBound{v: v}, &numBound{v: v}, c.opts.Bounded)
	if err != nil {
		return nil, err
	}
	return g, nil
}

// multipleDFA returns the automaton of the numerals (without exponent)
// whose value v has at most k digits after the point (zeros aside) and
// v×10^k divisible by p: the remainder modulo p of the digits read so
// far, as if the fraction were padded to k digits. sign 1 leaves out
// negative numbers, -1 positive ones; nonzero leaves out 0; integer
// takes no fraction but, with suffix, zeros (1.0).
func multipleDFA(p, k, sign int, nonzero, integer, suffix bool) *dfa {
	if integer {
		k = 0
	}
	d := &dfa{}
	type key struct {
		phase   byte // s: start, m: after '-', z: int part 0, i: int digits, d: after '.', f: fraction digits, t: trailing zeros
		r, j    int
		neg, nz bool // negative; some nonzero digit read
	}
	ids := map[key]int32{}
	var keys []key
	pow := make([]int, k+1) // 10^i mod p
	pow[0] = 1 % p
	for i := 1; i <= k; i++ {
		pow[i] = pow[i-1] * 10 % p
	}
	accepts := func(s key) bool {
		switch s.phase {
		case 'z', 'i', 'f', 't':
		default:
			return false
		}
		if s.phase == 'z' && s.neg { // -0
			return false
		}
		if nonzero && !s.nz {
			return false
		}
		if sign > 0 && s.neg && s.nz || sign < 0 && !s.neg && s.nz {
			return false
		}
		return s.r*pow[k-s.j]%p == 0
	}
	var id func(s key) int32
	id = func(s key) int32 {
		if x, ok := ids[s]; ok {
			return x
		}
		x := int32(len(keys))
		ids[s] = x
		keys = append(keys, s)
		lab := int32(0)
		if accepts(s) {
			lab = 1
		}
		d.label = append(d.label, lab)
		d.edges = append(d.edges, nil)
		return x
	}
	id(key{phase: 's'})
	for q := 0; q < len(keys); q++ {
		s := keys[q]
		var es []dfaEdge
		edge := func(lo, hi rune, t key) { es = append(es, dfaEdge{lo, hi, id(t)}) }
		digits := func(phase byte, j int) {
			for dg := 0; dg <= 9; dg++ {
				t := key{phase: phase, r: (s.r*10 + dg) % p, j: j, neg: s.neg, nz: s.nz || dg > 0}
				edge('0'+rune(dg), '0'+rune(dg), t)
			}
		}
		switch s.phase {
		case 's', 'm':
			if s.phase == 's' && sign <= 0 {
				edge('-', '-', key{phase: 'm', neg: true})
			}
			edge('0', '0', key{phase: 'z', neg: s.neg})
			for dg := 1; dg <= 9; dg++ {
				edge('0'+rune(dg), '0'+rune(dg), key{phase: 'i', r: dg % p, neg: s.neg, nz: true})
			}
		case 'z', 'i':
			if s.phase == 'i' {
				digits('i', 0)
			}
			if !integer || suffix {
				edge('.', '.', key{phase: 'd', r: s.r, neg: s.neg, nz: s.nz})
			}
		case 'd', 'f':
			if s.j < k {
				digits('f', s.j+1)
			} else {
				edge('0', '0', key{phase: 't', r: s.r, j: s.j, neg: s.neg, nz: s.nz})
			}
		case 't':
			edge('0', '0', s)
		}
		d.edges[q] = es
	}
	return d.trim()
}
