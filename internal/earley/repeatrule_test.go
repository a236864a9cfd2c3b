package earley

import (
	"strings"
	"testing"

	"github.com/reins-go/reins/grammar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRepetitionRulesStayCalled checks that a rule whose body is a
// bounded repetition with a hoisted body (JSON's whitespace) is called
// from each of its uses, one instruction each, where inlining would copy
// its chain of calls into each, whatever the order of the rules; and
// that the language is the same.
func TestRepetitionRulesStayCalled(t *testing.T) {
	const ws = `ws ::= [ \t\n\r]{0,16}` + "\n"
	const root = `root ::= "{" "a" sep "b" sep "c" "}"` + "\n"
	const sep = `sep ::= colon` + "\n" + `colon ::= ws ":"` + "\n"
	p := compileGBNF(t, root+sep+ws)
	rule := -1
	for i, r := range p.Rules {
		if r.Name == "ws" {
			rule = i
		}
	}
	require.GreaterOrEqual(t, rule, 0, "ws is a rule of the program:\n%s", p)
	calls := 0
	for _, in := range p.Inst {
		if in.Op == grammar.InstCall && int(in.Arg) == rule {
			calls++
		}
	}
	assert.Equal(t, 2, calls, "one call a use:\n%s", p)
	assert.Less(t, len(p.Inst), 50, "the repetition's chain is emitted once:\n%s", p)
	// ws first: considered for inlining before colon, where it has its
	// one use; colon is then inlined into sep, and sep twice into root.
	first := compileGBNF(t, ws+root+sep)
	assert.Len(t, first.Inst, len(p.Inst), "the rules' order changes nothing:\n%s", first)

	for _, s := range []string{"{a:b:c}", "{a \t:b\n\r:c}", "{a" + strings.Repeat(" ", 16) + ":b:c}"} {
		assert.True(t, inLanguage(p, s), "%q", s)
	}
	for _, s := range []string{"{a b:c}", "{a" + strings.Repeat(" ", 17) + ":b:c}", "{a: b:c}", "{ a:b:c}", "{a:b:c"} {
		assert.False(t, inLanguage(p, s), "%q", s)
	}
}

// TestSameCallsShared checks that references compiling to the same call
// (the same rule, going on at the same place) are one instruction, so
// that inlined code before them is one copy too; and that the language
// is the same.
func TestSameCallsShared(t *testing.T) {
	p := compileGBNF(t, `root ::= ( "a" esc t | "b" esc t | "c" ) "!"
esc ::= "\\" ( "n" | "t" | "u" [0-9] [0-9] )
t ::= "q" t | "."
`)
	us := 0
	for _, in := range p.Inst {
		if in.Op == grammar.InstByte && in.Lo == 'u' {
			us++
		}
	}
	assert.Equal(t, 1, us, "one copy of esc before the one call of t:\n%s", p)
	for _, s := range []string{`a\n.!`, `b\u12qq.!`, `c!`, `a\tq.!`} {
		assert.True(t, inLanguage(p, s), "%q", s)
	}
	for _, s := range []string{`a\n!`, `b\u1.!`, `a.!`, `c.!`, `b\x.!`} {
		assert.False(t, inLanguage(p, s), "%q", s)
	}
}
