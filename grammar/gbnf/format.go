package gbnf

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/reins-go/reins/grammar"
)

// Format writes g in GBNF, one rule per line. Parse(Format(g)) gives a
// grammar with the same tree.
func Format(g *grammar.Grammar) string {
	var b strings.Builder
	for _, r := range g.Rules {
		fmt.Fprintf(&b, "%s ::= ", r.Name)
		format(&b, r.Body, false)
		b.WriteString("\n")
	}
	return b.String()
}

func format(b *strings.Builder, n *grammar.Node, group bool) {
	switch n.Op {
	case grammar.OpEmpty:
		b.WriteString(`""`)
	case grammar.OpLit:
		b.WriteByte('"')
		for _, r := range n.Runes() {
			writeChar(b, r, false)
		}
		b.WriteByte('"')
	case grammar.OpBytes:
		// GBNF spells characters, not bytes: bytes that are UTF-8 are
		// written as their characters; any other byte has no spelling,
		// and is written as \xNN, which GBNF reads as the code point.
		b.WriteByte('"')
		for s := string(n.Bytes()); s != ""; {
			r, size := utf8.DecodeRuneInString(s)
			if r == utf8.RuneError && size == 1 {
				fmt.Fprintf(b, `\x%02X`, s[0])
			} else {
				writeChar(b, r, false)
			}
			s = s[size:]
		}
		b.WriteByte('"')
	case grammar.OpClass:
		b.WriteByte('[')
		ranges := n.Runes()
		for i := 0; i+1 < len(ranges); i += 2 {
			writeChar(b, ranges[i], true)
			if ranges[i+1] != ranges[i] {
				b.WriteByte('-')
				writeChar(b, ranges[i+1], true)
			}
		}
		b.WriteByte(']')
	case grammar.OpSeq, grammar.OpAlt:
		if group {
			b.WriteByte('(')
		}
		sep := " "
		if n.Op == grammar.OpAlt {
			sep = " | "
		}
		for i, s := range n.Subs {
			if i > 0 {
				b.WriteString(sep)
			}
			// Parenthesise what would otherwise merge into this node.
			format(b, s, s.Op == grammar.OpAlt || (n.Op == grammar.OpSeq && s.Op == grammar.OpSeq))
		}
		if group {
			b.WriteByte(')')
		}
	case grammar.OpRepeat:
		format(b, n.Subs[0], true)
		switch {
		case n.Min == 0 && n.Max == -1:
			b.WriteByte('*')
		case n.Min == 1 && n.Max == -1:
			b.WriteByte('+')
		case n.Min == 0 && n.Max == 1:
			b.WriteByte('?')
		case n.Max == -1:
			fmt.Fprintf(b, "{%d,}", n.Min)
		case n.Min == n.Max:
			fmt.Fprintf(b, "{%d}", n.Min)
		default:
			fmt.Fprintf(b, "{%d,%d}", n.Min, n.Max)
		}
	case grammar.OpRef:
		b.WriteString(n.Name)
	case grammar.OpToken:
		set := n.Tokens()
		if len(set.Tokens) == 0 {
			// No GBNF spells the empty set, which Compile refuses: a
			// terminal Parse refuses too, rather than nothing, which
			// would read back as another grammar.
			b.WriteString("<[]>")
			return
		}
		if len(set.Tokens) > 1 {
			b.WriteByte('(')
		}
		for i, t := range set.Tokens {
			if i > 0 {
				b.WriteString(" | ")
			}
			if set.Negated {
				b.WriteByte('!')
			}
			b.WriteString(t.String())
		}
		if len(set.Tokens) > 1 {
			b.WriteByte(')')
		}
	}
}

func writeChar(b *strings.Builder, r rune, inClass bool) {
	switch {
	case r == '"' || r == '\\' || r == '[' || r == ']':
		b.WriteByte('\\')
		b.WriteRune(r)
	case inClass && (r == '-' || r == '^'):
		b.WriteByte('\\')
		b.WriteRune(r)
	case r == '\n':
		b.WriteString(`\n`)
	case r == '\t':
		b.WriteString(`\t`)
	case r == '\r':
		b.WriteString(`\r`)
	case r < 0x20 || r == 0x7f:
		fmt.Fprintf(b, `\x%02X`, r)
	case r < 0x80 || (r > 0x9f && r != 0xfffd && r <= 0xffff && !(r >= 0xd800 && r <= 0xdfff)):
		b.WriteRune(r)
	case r <= 0xffff:
		fmt.Fprintf(b, `\u%04X`, r)
	default:
		fmt.Fprintf(b, `\U%08X`, r)
	}
}
