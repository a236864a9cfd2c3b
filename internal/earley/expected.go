package earley

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Expected returns a readable list of what may come next, for errors:
// ASCII characters quoted ('a'-'z', '\n'), the non-ASCII characters the
// grammar allows as characters ('é', 'α'-'ω', or "any non-ASCII
// character"), bytes that begin no UTF-8 character as \xNN, and "a token
// terminal" and "end of input" where they fit. Non-ASCII characters are
// found by pushing their first bytes and popping them again (a few
// hundred pushes at most), so a grammar that allows a few characters
// gets them exactly; ranges of many lead bytes are read as the code
// points they begin. The parser is left as it was.
func (ps *Parser) Expected() string { return ps.expected(nil) }

// maxExpectedParts bounds the list Expected returns.
const maxExpectedParts = 24

// expected is Expected after partial, the bytes of a character begun
// and not finished (nil between characters).
func (ps *Parser) expected(partial []byte) string {
	bs, tok := ps.Next()
	// Pushing to explore must leave no trace: not the error a push may
	// set, nor the work it counts.
	err, total := ps.err, ps.total
	defer func() { ps.err, ps.total = err, total }()
	x := explorer{ps: ps, pushes: 256}
	var ascii, raw []byteRun
	if n := len(partial); n > 0 && n < utf8Len(partial[0]) {
		valid := contRange(partial)
		for _, r := range runs(bs, 0, 255) {
			for _, part := range splitRun(r, valid) {
				if part.in {
					x.walk(slices.Clone(partial), part.byteRun, utf8Len(partial[0]))
				} else {
					raw = append(raw, part.byteRun)
				}
			}
		}
	} else {
		ascii = runs(bs, 0, 0x7F)
		for _, r := range runs(bs, 0x80, 0xFF) {
			for _, class := range [...]struct {
				lo, hi byte
				n      int
			}{{0xC2, 0xDF, 2}, {0xE0, 0xEF, 3}, {0xF0, 0xF4, 4}} { // lead bytes by length
				part := byteRun{max(r.lo, class.lo), min(r.hi, class.hi)}
				if part.lo <= part.hi {
					x.walk(nil, part, class.n)
				}
			}
			for _, part := range splitRun(r, byteRun{0xC2, 0xF4}) {
				if !part.in {
					raw = append(raw, part.byteRun)
				}
			}
		}
	}
	var parts []string
	for _, r := range ascii {
		parts = append(parts, runeRange(rune(r.lo), rune(r.hi)))
	}
	parts = append(parts, describeRunes(x.runes)...)
	for _, r := range raw {
		if r.lo == r.hi {
			parts = append(parts, fmt.Sprintf(`\x%02x`, r.lo))
		} else {
			parts = append(parts, fmt.Sprintf(`\x%02x-\x%02x`, r.lo, r.hi))
		}
	}
	if len(parts) > maxExpectedParts {
		parts = append(parts[:maxExpectedParts], fmt.Sprintf("… (%d more)", len(parts)-maxExpectedParts))
	}
	if tok {
		parts = append(parts, "a token terminal")
	}
	if ps.CanEnd() {
		parts = append(parts, "end of input")
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// byteRun is an inclusive range of byte values.
type byteRun struct{ lo, hi byte }

// runs returns the runs of set bytes of bs within [from, to].
func runs(bs [4]uint64, from, to int) []byteRun {
	var out []byteRun
	for c := from; c <= to; c++ {
		if bs[c>>6]&(1<<(c&63)) == 0 {
			continue
		}
		lo := c
		for c+1 <= to && bs[(c+1)>>6]&(1<<((c+1)&63)) != 0 {
			c++
		}
		out = append(out, byteRun{byte(lo), byte(c)})
	}
	return out
}

// splitRun splits r into its parts inside and outside valid.
func splitRun(r, valid byteRun) []struct {
	byteRun
	in bool
} {
	type part = struct {
		byteRun
		in bool
	}
	var out []part
	if r.lo < valid.lo {
		out = append(out, part{byteRun{r.lo, min(r.hi, valid.lo-1)}, false})
	}
	if lo, hi := max(r.lo, valid.lo), min(r.hi, valid.hi); lo <= hi {
		out = append(out, part{byteRun{lo, hi}, true})
	}
	if r.hi > valid.hi {
		out = append(out, part{byteRun{max(r.lo, valid.hi+1), r.hi}, false})
	}
	return out
}

// utf8Len returns the length of the character lead byte b begins, or 1
// for a byte that begins none.
func utf8Len(b byte) int {
	switch {
	case b >= 0xC2 && b <= 0xDF:
		return 2
	case b >= 0xE0 && b <= 0xEF:
		return 3
	case b >= 0xF0 && b <= 0xF4:
		return 4
	}
	return 1
}

// contRange returns the bytes that may follow prefix (a lead byte and
// perhaps continuation bytes) in a valid UTF-8 character: no overlong
// form, no surrogate, nothing above U+10FFFF.
func contRange(prefix []byte) byteRun {
	if len(prefix) == 1 {
		switch prefix[0] {
		case 0xE0:
			return byteRun{0xA0, 0xBF}
		case 0xED:
			return byteRun{0x80, 0x9F}
		case 0xF0:
			return byteRun{0x90, 0xBF}
		case 0xF4:
			return byteRun{0x80, 0x8F}
		}
	}
	return byteRun{0x80, 0xBF}
}

// explorer finds the code points the parser allows next, pushing bytes
// while its pushes last.
type explorer struct {
	ps     *Parser
	pushes int
	runes  []rune // ranges: pairs lo, hi
}

// walk adds the code points of n-byte characters that begin with
// prefix and then a byte of r (valid there).
func (x *explorer) walk(prefix []byte, r byteRun, n int) {
	if len(prefix)+1 == n {
		x.runes = append(x.runes, assemble(prefix, r.lo, 0x80), assemble(prefix, r.hi, 0xBF))
		return
	}
	if width := int(r.hi-r.lo) + 1; width <= 16 && width <= x.pushes {
		x.pushes -= width
		for b := int(r.lo); b <= int(r.hi); b++ {
			if !x.ps.Push(byte(b)) {
				continue
			}
			next := append(prefix, byte(b))
			bs, _ := x.ps.Next()
			valid := contRange(next)
			for _, sub := range runs(bs, int(valid.lo), int(valid.hi)) {
				x.walk(next, sub, n)
			}
			x.ps.Pop(1)
		}
		return
	}
	// Too many to push: walk the first and the last byte exactly (where
	// a range of characters begins and ends), and take the bytes between
	// as beginning every code point they can.
	if x.pushes >= 2 {
		x.walk(slices.Clone(prefix), byteRun{r.lo, r.lo}, n)
		x.walk(slices.Clone(prefix), byteRun{r.hi, r.hi}, n)
		if r.hi-r.lo < 2 {
			return
		}
		r = byteRun{r.lo + 1, r.hi - 1}
	}
	lo, hi := append(slices.Clone(prefix), r.lo), append(slices.Clone(prefix), r.hi)
	for len(lo) < n {
		v := contRange(lo)
		lo = append(lo, v.lo)
		hi = append(hi, contRange(hi).hi)
	}
	x.runes = append(x.runes, assemble(lo[:n-1], lo[n-1], 0x80), assemble(hi[:n-1], hi[n-1], 0xBF))
}

// assemble returns the code point of prefix, then b, then continuation
// bytes fill up to the character's length.
func assemble(prefix []byte, b, fill byte) rune {
	all := append(slices.Clone(prefix), b)
	n := utf8Len(all[0])
	for len(all) < n {
		all = append(all, fill)
	}
	r := rune(all[0]) & (0x7F >> n)
	for _, c := range all[1:] {
		r = r<<6 | rune(c&0x3F)
	}
	return r
}

// describeRunes writes code point ranges (pairs lo, hi) merged, as
// characters.
func describeRunes(r []rune) []string {
	type pair struct{ lo, hi rune }
	var ps []pair
	for i := 0; i+1 < len(r); i += 2 {
		ps = append(ps, pair{r[i], r[i+1]})
	}
	slices.SortFunc(ps, func(a, b pair) int { return int(a.lo - b.lo) })
	var merged []pair
	for _, p := range ps {
		if n := len(merged); n > 0 && p.lo <= merged[n-1].hi+1 {
			merged[n-1].hi = max(merged[n-1].hi, p.hi)
			continue
		}
		merged = append(merged, p)
	}
	// All but the surrogates, which no UTF-8 encodes, is every character.
	if len(merged) == 2 && merged[0] == (pair{0x80, 0xD7FF}) && merged[1] == (pair{0xE000, utf8.MaxRune}) ||
		len(merged) == 1 && merged[0] == (pair{0x80, utf8.MaxRune}) {
		return []string{"any non-ASCII character"}
	}
	var out []string
	for _, p := range merged {
		out = append(out, runeRange(p.lo, p.hi))
	}
	return out
}

// runeRange writes 'lo' or 'lo'-'hi'.
func runeRange(lo, hi rune) string {
	if lo == hi {
		return strconv.QuoteRune(lo)
	}
	return strconv.QuoteRune(lo) + "-" + strconv.QuoteRune(hi)
}
