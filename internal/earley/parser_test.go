package earley

import (
	"testing"

	"github.com/reins-go/reins/grammar"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func accepts(t *testing.T, g *grammar.Grammar, s string) (prefixOK bool, whole bool) {
	t.Helper()
	p, err := grammar.Compile(g)
	require.NoError(t, err)
	ps := NewParser(p)
	for i := 0; i < len(s); i++ {
		if !ps.Push(s[i]) {
			return false, false
		}
	}
	return true, ps.CanEnd()
}

func TestParserBasics(t *testing.T) {
	g := &grammar.Grammar{Start: "root", Rules: []grammar.Rule{
		{Name: "root", Body: grammar.Seq(grammar.Lit("a"), grammar.Repeat(grammar.Class('0', '9'), 1, -1), grammar.Alt(grammar.Lit("x"), grammar.Lit("yz")))},
	}}
	tests := []struct {
		in            string
		prefix, whole bool
	}{
		{"", true, false},
		{"a", true, false},
		{"a1", true, false},
		{"a123x", true, true},
		{"a1yz", true, true},
		{"a1y", true, false},
		{"ax", false, false},
		{"b", false, false},
		{"a1xx", false, false},
	}
	for _, tt := range tests {
		p, w := accepts(t, g, tt.in)
		assert.Equal(t, tt.prefix, p, "%q prefix", tt.in)
		assert.Equal(t, tt.whole, w, "%q whole", tt.in)
	}
}

func TestLeftRecursionAmbiguityNullable(t *testing.T) {
	// expr ::= expr "+" term | term ; term ::= term "*" atom | atom ; atom ::= [0-9] | "(" expr ")"
	g := &grammar.Grammar{Start: "expr", Rules: []grammar.Rule{
		{Name: "expr", Body: grammar.Alt(grammar.Seq(grammar.Ref("expr"), grammar.Lit("+"), grammar.Ref("term")), grammar.Ref("term"))},
		{Name: "term", Body: grammar.Alt(grammar.Seq(grammar.Ref("term"), grammar.Lit("*"), grammar.Ref("atom")), grammar.Ref("atom"))},
		{Name: "atom", Body: grammar.Alt(grammar.Class('0', '9'), grammar.Seq(grammar.Lit("("), grammar.Ref("expr"), grammar.Lit(")")))},
	}}
	for _, s := range []string{"1", "1+2", "1+2*3", "(1+2)*3+4", "((((1))))"} {
		_, w := accepts(t, g, s)
		assert.True(t, w, s)
	}
	for _, s := range []string{"+", "1+", "(1", "1**2"} {
		_, w := accepts(t, g, s)
		assert.False(t, w, s)
	}
	// Ambiguous and nullable: s ::= s s | "a" | ""
	amb := &grammar.Grammar{Start: "s", Rules: []grammar.Rule{{Name: "s", Body: grammar.Alt(grammar.Seq(grammar.Ref("s"), grammar.Ref("s")), grammar.Lit("a"), &grammar.Node{Op: grammar.OpEmpty})}}}
	for _, s := range []string{"", "a", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"} {
		_, w := accepts(t, amb, s)
		assert.True(t, w, "%q", s)
	}
	_, w := accepts(t, amb, "ab")
	assert.False(t, w)
}

func TestUnproductiveRulesArePruned(t *testing.T) {
	// loop never ends, so "b" must not be allowed: it could never finish.
	g := &grammar.Grammar{Start: "root", Rules: []grammar.Rule{
		{Name: "root", Body: grammar.Alt(grammar.Lit("a"), grammar.Seq(grammar.Lit("b"), grammar.Ref("loop")))},
		{Name: "loop", Body: grammar.Seq(grammar.Lit("x"), grammar.Ref("loop"))},
	}}
	p, w := accepts(t, g, "b")
	assert.False(t, p)
	assert.False(t, w)
	prog, err := grammar.Compile(g)
	require.NoError(t, err)
	assert.Equal(t, []string{"rule loop matches no string and is never used"}, prog.Warnings)
	assert.Empty(t, g.Warnings, "Compile leaves the grammar as it is")
	_, err = grammar.Compile(&grammar.Grammar{Start: "loop", Rules: []grammar.Rule{{Name: "loop", Body: grammar.Seq(grammar.Lit("x"), grammar.Ref("loop"))}}})
	assert.ErrorContains(t, err, "matches no string")
}

func TestUTF8Classes(t *testing.T) {
	// Any code point except '"': multi-byte characters byte by byte.
	g := &grammar.Grammar{Start: "root", Rules: []grammar.Rule{{Name: "root", Body: grammar.Repeat(&grammar.Node{Op: grammar.OpClass, Leaf: &grammar.Leaf{Runes: grammar.NegateRanges([]rune{'"', '"'})}}, 0, -1)}}}
	for _, s := range []string{"héllo", "日本語", "🎉x", "\x00\x7f"} {
		_, w := accepts(t, g, s)
		assert.True(t, w, "%q", s)
	}
	for _, s := range []string{"\"", "\xff", "\xc3", "\xed\xa0\x80" /* surrogate */} {
		_, w := accepts(t, g, s)
		assert.False(t, w, "%q", s)
	}
	// A prefix that ends inside a character is a valid prefix.
	p, w := accepts(t, g, "\xe6\x97")
	assert.True(t, p)
	assert.False(t, w)
}

func TestPushPop(t *testing.T) {
	g := &grammar.Grammar{Start: "root", Rules: []grammar.Rule{{Name: "root", Body: grammar.Alt(grammar.Lit("abc"), grammar.Lit("abd"))}}}
	p, err := grammar.Compile(g)
	require.NoError(t, err)
	ps := NewParser(p)
	require.True(t, ps.Push('a'))
	require.True(t, ps.Push('b'))
	require.False(t, ps.Push('x'))
	assert.Equal(t, 2, ps.Len(), "a failed push changes nothing")
	require.True(t, ps.Push('c'))
	assert.True(t, ps.CanEnd())
	ps.Pop(1)
	assert.False(t, ps.CanEnd())
	require.True(t, ps.Push('d'))
	assert.True(t, ps.CanEnd())
	assert.Contains(t, NewParser(p).Expected(), "'a'")
}

// TestClassSharesContinuations checks that a class's UTF-8 sequences
// share their equal suffixes, and still accept exactly the class: every
// encoding at the edges of each length, no surrogate, no overlong form.
func TestClassSharesContinuations(t *testing.T) {
	p, err := grammar.Compile(&grammar.Grammar{Start: "s", Rules: []grammar.Rule{{Name: "s", Body: grammar.Class(0x80, 0x10FFFF)}}})
	require.NoError(t, err)
	cont := 0
	for _, in := range p.Inst {
		if in.Op == grammar.InstByte && in.Lo == 0x80 && in.Hi == 0xBF {
			cont++
		}
	}
	assert.Equal(t, 3, cont, "one continuation byte instruction per position from the end")
	accepts := func(b []byte) bool {
		ps := NewParser(p)
		for _, c := range b {
			if !ps.Push(c) {
				return false
			}
		}
		return ps.CanEnd()
	}
	for _, r := range []rune{0x80, 0x7FF, 0x800, 0xFFF, 0x1000, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x3FFFF, 0x40000, 0x10FFFF} {
		assert.True(t, accepts([]byte(string(r))), "%U", r)
	}
	for _, b := range [][]byte{{0x7F}, {0xC0, 0x80}, {0xC1, 0xBF}, {0xE0, 0x9F, 0xBF}, {0xED, 0xA0, 0x80}, {0xF0, 0x8F, 0xBF, 0xBF}, {0xF4, 0x90, 0x80, 0x80}, {0xF5, 0x80, 0x80, 0x80}, {0xC2}} {
		assert.False(t, accepts(b), "% x", b)
	}
}

// TestInlinedRuleEmittedOncePerContinuation checks that an inlined rule
// referenced twice with the same continuation is one copy of code, and
// that the language is unchanged.
func TestInlinedRuleEmittedOncePerContinuation(t *testing.T) {
	g := &grammar.Grammar{Start: "s", Rules: []grammar.Rule{
		{Name: "s", Body: grammar.Seq(grammar.Alt(grammar.Seq(grammar.Lit("p"), grammar.Ref("a")), grammar.Seq(grammar.Lit("q"), grammar.Ref("a"))), grammar.Lit("!"), grammar.Ref("a"))},
		{Name: "a", Body: grammar.Repeat(grammar.Class('x', 'y'), 1, -1)},
	}}
	countX := func(p *grammar.Prog) int {
		n := 0
		for _, in := range p.Inst {
			if in.Op == grammar.InstByte && in.Lo == 'x' {
				n++
			}
		}
		return n
	}
	p, err := grammar.Compile(g)
	require.NoError(t, err)
	one, err := grammar.Compile(&grammar.Grammar{Start: "s", Rules: []grammar.Rule{{Name: "s", Body: grammar.Seq(grammar.Ref("a"), grammar.Lit("!"))}, g.Rules[1]}})
	require.NoError(t, err)
	assert.Equal(t, 2*countX(one), countX(p), "one copy before \"!\", one at the end")
	accepts := func(s string) bool {
		ps := NewParser(p)
		for i := 0; i < len(s); i++ {
			if !ps.Push(s[i]) {
				return false
			}
		}
		return ps.CanEnd()
	}
	for _, s := range []string{"px!y", "qyx!xx"} {
		assert.True(t, accepts(s), s)
	}
	for _, s := range []string{"p!x", "pz!x", "px!", "pxq!x"} {
		assert.False(t, accepts(s), s)
	}
}
