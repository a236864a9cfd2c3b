package jsonschema

import (
	"fmt"
	"strings"
)

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
	var b strings.Builder
	inClass, negated := false, false
	classStart := -1 // index just after a class's [ or [^
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch {
		case c == '\\' && i+1 < len(pat):
			next := pat[i+1]
			i++
			switch {
			case next == 's' && inClass && negated:
				b.WriteString(ecmaSpace)
			case next == 'S' && inClass && !negated:
				return "", fmt.Errorf(`\S inside a character class is not supported`)
			case next == 'S' && !inClass:
				b.WriteString("[^" + ecmaSpace + "]")
			default: // \s outside a class or in a positive one, \S in a negated one: Go's
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
