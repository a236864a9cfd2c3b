package jsonschema

import (
	"fmt"
	"strings"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/regex"
)

// patternNode is the language of the JSON Schema pattern pat (ECMAScript,
// unanchored) over decoded text: ecmaToGo, then regex search lowering.
func patternNode(pat string) (*grammar.Node, error) {
	goPat, err := ecmaToGo(pat)
	if err != nil {
		return nil, err
	}
	return regex.Lower(goPat, true)
}

// ecmaSpace is ECMAScript's \s as the body of a Go character class:
// white space and line terminators, wider than Go's [\t\n\f\r ].
const ecmaSpace = `\t\n\x{0B}\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}`

// ecmaToGo rewrites a pattern's \s and \S so that the language is within
// both ECMAScript's meaning (JSON Schema's pattern dialect) and Go's (the
// validator's, santhosh-tekuri/jsonschema, uses Go's regexp): where the
// escape adds characters (\s, or \S in a negated class) it keeps Go's
// narrower space, and where it takes them away (\S, or \s in a negated
// class) ECMAScript's wider one. \S in a positive class has no such
// spelling and is refused; \b and \B are left for the regex lowering to
// refuse.
func ecmaToGo(pat string) (string, error) {
	return ecmaRewrite(pat, false)
}

// ecmaToGoWide rewrites a pattern the other way: its language holds
// every string either reading matches, so that its complement (a pattern
// a string must not match: not, if) is within both readings. \S in a
// negated class has no such spelling and is refused.
func ecmaToGoWide(pat string) (string, error) {
	return ecmaRewrite(pat, true)
}

func ecmaRewrite(pat string, wide bool) (string, error) {
	var b strings.Builder
	inClass, negated := false, false
	classStart := -1 // index just after a class's [ or [^
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch {
		case c == '\\' && i+1 < len(pat):
			next := pat[i+1]
			i++
			// narrow: the escape as the narrower reading spells it; wide:
			// as the wider.
			switch {
			case next == 's' && inClass && negated && !wide, next == 's' && inClass && !negated && wide:
				b.WriteString(ecmaSpace)
			case next == 'S' && inClass && !negated && !wide:
				return "", fmt.Errorf(`\S inside a character class is not supported`)
			case next == 'S' && inClass && negated && wide:
				return "", fmt.Errorf(`\S inside a negated character class is not supported here`)
			case next == 'S' && !inClass && !wide:
				b.WriteString("[^" + ecmaSpace + "]")
			case next == 's' && !inClass && wide:
				b.WriteString("[" + ecmaSpace + "]")
			default: // Go's
				b.WriteByte(c)
				b.WriteByte(next)
			}
			continue
		case c == '[' && !inClass:
			inClass, negated = true, false
			b.WriteByte(c)
			if i+1 < len(pat) && pat[i+1] == '^' {
				b.WriteByte('^')
				negated = true
				i++
			}
			classStart = i + 1
			continue
		case c == ']' && inClass && i != classStart:
			inClass = false
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

// lengthsWithin reports whether every string of n (a grammar over code
// points, without references) has between min and max code points (max
// -1: no bound): then length bounds beside a pattern or format say
// nothing more, and the pair is exact without an intersection.
func lengthsWithin(n *grammar.Node, min, max int) bool {
	lo, hi := lengthRange(n)
	return lo >= min && (max < 0 || (hi >= 0 && hi <= max))
}

// clampLengths returns n's strings of minLen to maxLen code points
// (maxLen -1: no bound) when n is fixed-length parts around one
// repetition of a single character (^[a-z0-9-]*$, ^v[0-9]+$): the
// bounds then fall on the repetition's count. ok is false for any other
// shape; out is nil when the bounds exclude every count.
func clampLengths(n *grammar.Node, minLen, maxLen int) (out *grammar.Node, ok bool) {
	var parts []*grammar.Node
	var flatten func(n *grammar.Node)
	flatten = func(n *grammar.Node) {
		if n.Op == grammar.OpSeq {
			for _, s := range n.Subs {
				flatten(s)
			}
			return
		}
		parts = append(parts, n)
	}
	flatten(n)
	rep, fixed := -1, 0
	for i, part := range parts {
		if lo, hi := lengthRange(part); lo == hi {
			fixed += lo
			continue
		}
		if rep >= 0 || part.Op != grammar.OpRepeat {
			return nil, false
		}
		if lo, hi := lengthRange(part.Subs[0]); lo != 1 || hi != 1 {
			return nil, false
		}
		rep = i
	}
	if rep < 0 {
		return nil, false
	}
	r := parts[rep]
	lo, hi := max(int(r.Min), minLen-fixed), int(r.Max)
	if maxLen >= 0 && (hi < 0 || hi > maxLen-fixed) {
		hi = maxLen - fixed
		if hi < 0 { // the fixed parts alone are too long
			return nil, true
		}
	}
	if hi >= 0 && lo > hi {
		return nil, true
	}
	parts = append([]*grammar.Node(nil), parts...)
	parts[rep] = grammar.Repeat(r.Subs[0], lo, hi)
	return grammar.Seq(parts...), true
}

// lengthRange returns the shortest and longest lengths, in code points,
// of n's strings (hi -1: unbounded).
func lengthRange(n *grammar.Node) (lo, hi int) {
	add := func(a, b int) int {
		if a < 0 || b < 0 {
			return -1
		}
		return a + b
	}
	switch n.Op {
	case grammar.OpEmpty:
		return 0, 0
	case grammar.OpLit:
		return len(n.Runes()), len(n.Runes())
	case grammar.OpClass:
		return 1, 1
	case grammar.OpSeq:
		for _, s := range n.Subs {
			l, h := lengthRange(s)
			lo, hi = lo+l, add(hi, h)
		}
		return lo, hi
	case grammar.OpAlt:
		lo = -1
		for _, s := range n.Subs {
			l, h := lengthRange(s)
			if lo < 0 || l < lo {
				lo = l
			}
			if hi >= 0 && (h < 0 || h > hi) {
				hi = h
			}
		}
		return max(lo, 0), hi
	case grammar.OpRepeat:
		l, h := lengthRange(n.Subs[0])
		lo = l * int(n.Min)
		switch {
		case n.Max < 0 && h != 0:
			hi = -1
		case n.Max < 0:
			hi = 0
		case h < 0:
			hi = -1
		default:
			hi = h * int(n.Max)
		}
		return lo, hi
	}
	return 0, -1 // anything else: no bound known
}
