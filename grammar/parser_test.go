package grammar

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func accepts(t *testing.T, g *Grammar, s string) (prefixOK bool, whole bool) {
	t.Helper()
	p, err := Compile(g)
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
	g := &Grammar{Start: "root", Rules: []Rule{
		{Name: "root", Body: Seq(Lit("a"), Repeat(Class('0', '9'), 1, -1), Alt(Lit("x"), Lit("yz")))},
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
	g := &Grammar{Start: "expr", Rules: []Rule{
		{Name: "expr", Body: Alt(Seq(Ref("expr"), Lit("+"), Ref("term")), Ref("term"))},
		{Name: "term", Body: Alt(Seq(Ref("term"), Lit("*"), Ref("atom")), Ref("atom"))},
		{Name: "atom", Body: Alt(Class('0', '9'), Seq(Lit("("), Ref("expr"), Lit(")")))},
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
	amb := &Grammar{Start: "s", Rules: []Rule{{Name: "s", Body: Alt(Seq(Ref("s"), Ref("s")), Lit("a"), &Node{Op: OpEmpty})}}}
	for _, s := range []string{"", "a", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"} {
		_, w := accepts(t, amb, s)
		assert.True(t, w, "%q", s)
	}
	_, w := accepts(t, amb, "ab")
	assert.False(t, w)
}

func TestUnproductiveRulesArePruned(t *testing.T) {
	// loop never ends, so "b" must not be allowed: it could never finish.
	g := &Grammar{Start: "root", Rules: []Rule{
		{Name: "root", Body: Alt(Lit("a"), Seq(Lit("b"), Ref("loop")))},
		{Name: "loop", Body: Seq(Lit("x"), Ref("loop"))},
	}}
	p, w := accepts(t, g, "b")
	assert.False(t, p)
	assert.False(t, w)
	assert.NotEmpty(t, g.Warnings)
	_, err := Compile(&Grammar{Start: "loop", Rules: []Rule{{Name: "loop", Body: Seq(Lit("x"), Ref("loop"))}}})
	assert.ErrorContains(t, err, "matches no string")
}

func TestUTF8Classes(t *testing.T) {
	// Any code point except '"': multi-byte characters byte by byte.
	g := &Grammar{Start: "root", Rules: []Rule{{Name: "root", Body: Repeat(&Node{Op: OpClass, Ranges: NegateRanges([]rune{'"', '"'})}, 0, -1)}}}
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
	g := &Grammar{Start: "root", Rules: []Rule{{Name: "root", Body: Alt(Lit("abc"), Lit("abd"))}}}
	p, err := Compile(g)
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

func TestUTF8SequencesCoverExactly(t *testing.T) {
	for _, r := range [][2]rune{{0, 0x10FFFF}, {0x7F, 0x80}, {0x7FF, 0x800}, {0xD7FF, 0xE000}, {0x10000, 0x10FFFF}, {0x41, 0x5A}, {0xFFFF, 0x10000}} {
		n := 0
		for _, seq := range utf8Sequences(r[0], r[1]) {
			count := 1
			for _, br := range seq {
				count *= int(br.hi-br.lo) + 1
			}
			n += count
		}
		want := int(r[1]-r[0]) + 1
		if r[0] <= 0xD800 && r[1] >= 0xDFFF {
			want -= 0x800
		}
		assert.Equal(t, want, n, "%x-%x", r[0], r[1])
	}
}

// TestClassSharesContinuations checks that a class's UTF-8 sequences
// share their equal suffixes, and still accept exactly the class: every
// encoding at the edges of each length, no surrogate, no overlong form.
func TestClassSharesContinuations(t *testing.T) {
	p, err := Compile(&Grammar{Start: "s", Rules: []Rule{{Name: "s", Body: Class(0x80, 0x10FFFF)}}})
	require.NoError(t, err)
	cont := 0
	for _, in := range p.Inst {
		if in.Op == InstByte && in.Lo == 0x80 && in.Hi == 0xBF {
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
	g := &Grammar{Start: "s", Rules: []Rule{
		{Name: "s", Body: Seq(Alt(Seq(Lit("p"), Ref("a")), Seq(Lit("q"), Ref("a"))), Lit("!"), Ref("a"))},
		{Name: "a", Body: Repeat(Class('x', 'y'), 1, -1)},
	}}
	countX := func(p *Prog) int {
		n := 0
		for _, in := range p.Inst {
			if in.Op == InstByte && in.Lo == 'x' {
				n++
			}
		}
		return n
	}
	p, err := Compile(g)
	require.NoError(t, err)
	one, err := Compile(&Grammar{Start: "s", Rules: []Rule{{Name: "s", Body: Seq(Ref("a"), Lit("!"))}, g.Rules[1]}})
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
