package jsonschema

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/reins-go/reins/grammar"
)

// numBound is one end of a range of numbers: a value, and whether the
// end itself is excluded. A nil *numBound is no bound.
type numBound struct {
	v      *big.Rat
	strict bool
}

// maxFracDigits bounds the fraction digits of a bound reins expands.
const maxFracDigits = 40

// decRange is the grammar of the JSON numbers between lo and hi written
// without an exponent (-?int(.digits)?, "-0" left out). The range is
// exact for such numerals: a bound is compared digit by digit, so
// 0.1000 and 0.1 are the same value.
//
// With bounded, fraction parts hold at most BoundedDigits digits (the
// caller bounds the integer part by the range).
func decRange(lo, hi *numBound, bounded bool) (*grammar.Node, error) {
	most := -1
	if bounded {
		most = BoundedDigits
	}
	return decRangeDigits(lo, hi, most)
}

// decRangeDigits is decRange with fraction parts of at most most digits
// (-1: any).
func decRangeDigits(lo, hi *numBound, most int) (*grammar.Node, error) {
	d := digitsTo(most)
	for _, b := range []*numBound{lo, hi} {
		if b != nil {
			if _, err := fracDigits(b.v); err != nil {
				return nil, err
			}
		}
	}
	var alts []*grammar.Node
	zero := new(big.Rat)
	// x ≥ 0: the magnitude itself, from max(lo, 0) to hi.
	if hi == nil || hi.v.Sign() > 0 || (hi.v.Sign() == 0 && !hi.strict) {
		mlo := &numBound{v: zero}
		if lo != nil && lo.v.Sign() >= 0 {
			mlo = lo
		}
		if n := d.magRange(mlo, hi); n != nil {
			alts = append(alts, n)
		}
	}
	// x < 0: x = -m with m > 0, -hi ≤ m ≤ -lo.
	if lo == nil || lo.v.Sign() < 0 {
		mlo := &numBound{v: zero, strict: true}
		if hi != nil && hi.v.Sign() < 0 {
			mlo = &numBound{v: new(big.Rat).Neg(hi.v), strict: hi.strict}
		}
		var mhi *numBound
		if lo != nil {
			mhi = &numBound{v: new(big.Rat).Neg(lo.v), strict: lo.strict}
		}
		if n := d.magRange(mlo, mhi); n != nil {
			alts = append(alts, grammar.Seq(lit("-"), n))
		}
	}
	if len(alts) == 0 {
		return nil, nil
	}
	return grammar.Alt(alts...), nil
}

// magRange is the grammar of the numerals int(.digits)? whose value m
// satisfies lo ≤ m ≤ hi (lo ≥ 0 and not nil; hi nil for none), or nil
// when there are none.
func (d digitsTo) magRange(lo, hi *numBound) *grammar.Node {
	if hi != nil {
		c := lo.v.Cmp(hi.v)
		if c > 0 || (c == 0 && (lo.strict || hi.strict)) {
			return nil
		}
	}
	loI, loF := splitRat(lo.v)
	if hi != nil {
		hiI, hiF := splitRat(hi.v)
		if loI.Cmp(hiI) == 0 {
			return seqOrNil(lit(loI.String()), d.fraction(&digitBound{loF, lo.strict}, &digitBound{hiF, hi.strict}))
		}
		var alts []*grammar.Node
		if n := seqOrNil(lit(loI.String()), d.fraction(&digitBound{loF, lo.strict}, nil)); n != nil {
			alts = append(alts, n)
		}
		a := new(big.Int).Add(loI, big.NewInt(1))
		b := new(big.Int).Sub(hiI, big.NewInt(1))
		if a.Cmp(b) <= 0 {
			alts = append(alts, grammar.Seq(natRange(a.String(), b), d.fraction(nil, nil)))
		}
		if n := seqOrNil(lit(hiI.String()), d.fraction(nil, &digitBound{hiF, hi.strict})); n != nil {
			alts = append(alts, n)
		}
		if len(alts) == 0 {
			return nil
		}
		return grammar.Alt(alts...)
	}
	var alts []*grammar.Node
	if n := seqOrNil(lit(loI.String()), d.fraction(&digitBound{loF, lo.strict}, nil)); n != nil {
		alts = append(alts, n)
	}
	alts = append(alts, grammar.Seq(natRange(new(big.Int).Add(loI, big.NewInt(1)).String(), nil), d.fraction(nil, nil)))
	return grammar.Alt(alts...)
}

func seqOrNil(a, b *grammar.Node) *grammar.Node {
	if b == nil {
		return nil
	}
	return grammar.Seq(a, b)
}

// splitRat splits r ≥ 0 into its integer part and its fraction digits
// (no trailing zeros).
func splitRat(r *big.Rat) (*big.Int, string) {
	i := new(big.Int).Quo(r.Num(), r.Denom())
	d, _ := fracDigits(r)
	return i, d
}

// fracDigits returns the digits of r's fraction part (of its absolute
// value), without trailing zeros: finite for a number written in
// decimal, refused beyond maxFracDigits.
func fracDigits(r *big.Rat) (string, error) {
	f := new(big.Rat).Abs(r)
	f.Sub(f, new(big.Rat).SetInt(new(big.Int).Quo(f.Num(), f.Denom())))
	ten := big.NewRat(10, 1)
	var out []byte
	for f.Sign() != 0 {
		if len(out) == maxFracDigits {
			return "", fmt.Errorf("bound %s has more than %d decimal digits", r.FloatString(maxFracDigits), maxFracDigits)
		}
		f.Mul(f, ten)
		d := new(big.Int).Quo(f.Num(), f.Denom())
		out = append(out, byte('0'+d.Int64()))
		f.Sub(f, new(big.Rat).SetInt(d))
	}
	return string(out), nil
}

// digitBound bounds a fraction 0.F by 0.digits (no trailing zeros).
type digitBound struct {
	digits string
	strict bool
}

// digitsTo is the most digits a fraction part may hold (-1: any).
type digitsTo int

// digits is from min to the bound's count of digits, the first i of
// the fraction already written.
func (d digitsTo) digits(min, i int) *grammar.Node {
	if d < 0 {
		return grammar.Repeat(grammar.Class('0', '9'), min, -1)
	}
	return grammar.Repeat(grammar.Class('0', '9'), min, max(min, int(d)-i))
}

// fraction is the grammar of an optional fraction part ("" or
// "."digits) whose value 0.F lies between lo and hi (nil: 0 and 1,
// open), or nil when none does.
func (d digitsTo) fraction(lo, hi *digitBound) *grammar.Node {
	var alts []*grammar.Node
	if fracEndOK(0, lo, true, hi, true) {
		alts = append(alts, &grammar.Node{Op: grammar.OpEmpty})
	}
	if n := d.fracDigitsFrom(0, lo, lo != nil, hi, hi != nil); n != nil {
		alts = append(alts, grammar.Seq(lit("."), n))
	}
	if len(alts) == 0 {
		return nil
	}
	return grammar.Alt(alts...)
}

// fracEndOK reports whether a fraction that ends after i digits, equal
// so far to the tight bounds' digits, lies within them: its remaining
// digits are zeros.
func fracEndOK(i int, lo *digitBound, tl bool, hi *digitBound, th bool) bool {
	if tl && lo != nil && (i < len(lo.digits) || lo.strict) { // 0 < the rest of lo, or equal and excluded
		return false
	}
	if th && hi != nil && i >= len(hi.digits) && hi.strict { // equal to hi, excluded
		return false
	}
	return true
}

// fracDigitsFrom is the grammar of the digits F[i:] (at least one) of a
// fraction whose first i digits equal lo's when tl and hi's when th
// (and lie strictly between otherwise), such that lo ≤ 0.F ≤ hi.
func (d digitsTo) fracDigitsFrom(i int, lo *digitBound, tl bool, hi *digitBound, th bool) *grammar.Node {
	tl = tl && lo != nil
	th = th && hi != nil
	anyDigits := d.digits(0, i+1) // after one more digit
	// Past a bound's digits it is padded with zeros: a non-strict lower
	// bound is met whatever follows; a strict one needs a digit above 0.
	if tl && i >= len(lo.digits) && !lo.strict {
		tl = false
	}
	if th && i >= len(hi.digits) {
		if hi.strict {
			return nil // the fraction equals hi so far and can only grow
		}
		if tl { // both: zeros, and one nonzero digit: impossible
			return nil
		}
		if d >= 0 {
			return grammar.Repeat(lit("0"), 1, max(1, int(d)-i)) // equal to hi: zeros only
		}
		return grammar.Repeat(lit("0"), 1, -1) // equal to hi: zeros only
	}
	if tl && !th && i >= len(lo.digits) { // strict: some digit above zero
		if d >= 0 { // zeros, a nonzero digit, then the rest, within the bound
			rest := max(0, int(d)-i-1)
			return grammar.Seq(grammar.Repeat(lit("0"), 0, rest), grammar.Class('1', '9'), grammar.Repeat(grammar.Class('0', '9'), 0, rest))
		}
		return grammar.Seq(anyDigits, grammar.Class('1', '9'), anyDigits)
	}
	if !tl && !th {
		return d.digits(1, i)
	}
	lod, hid := byte('0'), byte('9')
	if tl && i < len(lo.digits) { // past its digits, lo is padded with zeros
		lod = lo.digits[i]
	}
	if th {
		hid = hi.digits[i]
	}
	if lod > hid {
		return nil
	}
	var alts []*grammar.Node
	// The digit on a tight bound keeps that bound tight.
	next := func(dig byte, ntl, nth bool) {
		var rest []*grammar.Node
		if fracEndOK(i+1, lo, ntl, hi, nth) {
			rest = append(rest, &grammar.Node{Op: grammar.OpEmpty})
		}
		if n := d.fracDigitsFrom(i+1, lo, ntl, hi, nth); n != nil {
			rest = append(rest, n)
		}
		if len(rest) > 0 {
			alts = append(alts, grammar.Seq(lit(string(dig)), grammar.Alt(rest...)))
		}
	}
	if tl && th && lod == hid {
		next(lod, true, true)
		return altOrNil(alts)
	}
	if tl {
		next(lod, true, false)
	}
	if th {
		next(hid, false, true)
	}
	from, to := lod, hid
	if tl {
		from++
	}
	if th {
		to--
	}
	if from <= to {
		alts = append(alts, grammar.Seq(grammar.Class(rune(from), rune(to)), anyDigits))
	}
	return altOrNil(alts)
}

func altOrNil(alts []*grammar.Node) *grammar.Node {
	if len(alts) == 0 {
		return nil
	}
	return grammar.Alt(alts...)
}

// parseNumber returns the exact value of the JSON number num, refused
// when written out in full it would have more than MaxNumberDigits
// digits before or after the point (1e999 has 1,000 zeros): a bound is
// compiled digit by digit, and big.Rat would write it out to compare.
func parseNumber(num json.Number) (*big.Rat, error) {
	text := num.String()
	mant, expText, hasExp := strings.Cut(strings.ToLower(text), "e")
	exp := 0
	if hasExp {
		e, err := strconv.Atoi(strings.TrimPrefix(expText, "+"))
		if err != nil || e > MaxNumberDigits || e < -MaxNumberDigits {
			return nil, limitErrorf(limitNumberDigits, "number %.40s: its exponent is beyond ±%d (MaxNumberDigits)", text, MaxNumberDigits)
		}
		exp = e
	}
	intPart, frac, _ := strings.Cut(strings.TrimPrefix(mant, "-"), ".")
	digits := intPart + frac
	lead := len(digits) - len(strings.TrimLeft(digits, "0"))
	trail := len(digits) - len(strings.TrimRight(digits, "0"))
	if lead < len(digits) { // not zero
		point := len(intPart) + exp // the point's place in digits
		if n := point - lead; n > MaxNumberDigits {
			return nil, limitErrorf(limitNumberDigits, "number %.40s has %d digits before the point written out, more than the limit of %d (MaxNumberDigits)", text, n, MaxNumberDigits)
		}
		if n := len(digits) - trail - point; n > MaxNumberDigits {
			return nil, limitErrorf(limitNumberDigits, "number %.40s has %d digits after the point written out, more than the limit of %d (MaxNumberDigits)", text, n, MaxNumberDigits)
		}
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return nil, fmt.Errorf("bad number %.40s", text)
	}
	return r, nil
}

// numberBounds reads minimum, maximum, exclusiveMinimum and
// exclusiveMaximum (draft 4's boolean flags too), keeping the tightest,
// compared exactly.
func (c *compiler) numberBounds(s map[string]any, ptr string, handled map[string]bool) (lo, hi *numBound, err error) {
	for _, isMin := range []bool{true, false} {
		base, ex := boundKeywords(isMin)
		handled[base], handled[ex] = true, true
		b, err := readBound(s, isMin)
		if err != nil {
			return nil, nil, c.wrapf(ptr, err.kw, err)
		}
		if isMin {
			lo = b.numBound()
		} else {
			hi = b.numBound()
		}
	}
	return lo, hi, nil
}

// boundKeywords are the keywords of a lower bound (isMin) or an upper
// one: the base (minimum, maximum) and its exclusive form.
func boundKeywords(isMin bool) (base, ex string) {
	if isMin {
		return "minimum", "exclusiveMinimum"
	}
	return "maximum", "exclusiveMaximum"
}

// schemaBound is one end of a schema's numeric range as the schema
// writes it: the value, its text, whether it is excluded, and whether
// draft 4's flag excludes it (so that a merge writes it back that way).
type schemaBound struct {
	v      *big.Rat
	text   json.Number
	strict bool
	flag   bool
}

func (b *schemaBound) numBound() *numBound {
	if b == nil {
		return nil
	}
	return &numBound{v: b.v, strict: b.strict}
}

// tighter returns the tighter of two lower (isMin) or upper bounds; nil
// is no bound. At one value, the excluded end is the tighter.
func tighter(a, b *schemaBound, isMin bool) *schemaBound {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	cmp := b.v.Cmp(a.v)
	if !isMin {
		cmp = -cmp
	}
	if cmp > 0 || (cmp == 0 && b.strict && !a.strict) {
		return b
	}
	return a
}

// boundError is a bad bound keyword.
type boundError struct {
	kw  string
	err error
}

func (e *boundError) Error() string { return e.err.Error() }
func (e *boundError) Unwrap() error { return e.err }

// readBound reads the lower (isMin) or upper bound of schema s: the base
// keyword (with draft 4's flag beside it) and the exclusive one as a
// number, the tighter of the two.
func readBound(s map[string]any, isMin bool) (*schemaBound, *boundError) {
	base, ex := boundKeywords(isMin)
	var b *schemaBound
	flag, isFlag := s[ex].(bool)
	if v, ok := s[base]; ok {
		num, ok := v.(json.Number)
		if !ok {
			return nil, &boundError{base, fmt.Errorf("must be a number")}
		}
		r, err := parseNumber(num)
		if err != nil {
			return nil, &boundError{base, err}
		}
		b = &schemaBound{v: r, text: num, strict: isFlag && flag, flag: isFlag && flag}
	} else if isFlag && flag {
		return nil, &boundError{ex, fmt.Errorf("without %s", base)}
	}
	if v, ok := s[ex]; ok && !isFlag {
		num, ok := v.(json.Number)
		if !ok {
			return nil, &boundError{ex, fmt.Errorf("must be a number or a boolean")}
		}
		r, err := parseNumber(num)
		if err != nil {
			return nil, &boundError{ex, err}
		}
		b = tighter(b, &schemaBound{v: r, text: num, strict: true}, isMin)
	}
	return b, nil
}

// boundRange closes an open range at ±(10^BoundedDigits - 1), for
// Options.Bounded.
func boundRange(lo, hi *numBound) (*numBound, *numBound) {
	limit := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(BoundedDigits), nil))
	limit.Sub(limit, big.NewRat(1, 1))
	if hi == nil {
		hi = &numBound{v: new(big.Rat).Set(limit)}
		if lo != nil && lo.v.Cmp(hi.v) > 0 {
			hi = &numBound{v: new(big.Rat).Set(lo.v)}
		}
	}
	if lo == nil {
		lo = &numBound{v: new(big.Rat).Neg(limit)}
		if lo.v.Cmp(hi.v) > 0 {
			lo = &numBound{v: new(big.Rat).Set(hi.v)}
		}
	}
	return lo, hi
}
