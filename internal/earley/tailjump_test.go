package earley

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/grammar"
)

// callsTo counts the instructions of p that call the rule named name.
func callsTo(p *grammar.Prog, name string) int {
	n := 0
	for _, in := range p.Inst {
		if in.Op == grammar.InstCall && p.Rules[in.Arg].Name == name {
			n++
		}
	}
	return n
}

// TestTailReferencesJump checks that rules referred to only as the last
// step of others, as an automaton's states are, compile into the one
// rule that calls the first of them: one call is left, where '>'
// follows, and the local automaton stays at a few states however long
// the text, where a call per character made a new state at each. (The
// states refer to themselves too, so that the inliner leaves them be.)
func TestTailReferencesJump(t *testing.T) {
	p := compileGBNF(t, `root ::= "<" q0 ">"
q0 ::= [a-z] q1 | "0" q0 | "."
q1 ::= [0-9] q0 | [a-z] q2 | "1" q1 | "."
q2 ::= [a-z] q1 | [0-9] q2`)
	calls := 0
	for _, in := range p.Inst {
		if in.Op == grammar.InstCall {
			calls++
		}
	}
	assert.Equal(t, 1, calls, "calls:\n%s", p)
	for s, want := range map[string]bool{"<.>": true, "<a.>": true, "<a1b.>": true, "<ab>": false, "<abc.>": true, "<ab1.>": false, "<a1a1a1.>": true, "<ab12c.>": true} {
		assert.Equal(t, want, inLanguage(p, s), "%q", s)
	}
	d := NewLocalDFA(p)
	ps := NewParser(p)
	require.True(t, ps.Push('<'))
	s := d.Start(ps)
	for i := range 200 {
		var taint bool
		s, taint = d.Step(s, "ab1"[i%3])
		require.GreaterOrEqual(t, s, int32(0))
		require.False(t, taint)
	}
	assert.LessOrEqual(t, d.States(), 5, "states after 200 characters")
}

// TestTailReferencesOwners checks which rules stay calls: one that two
// called rules reach by tail references (its code would be in both), and
// one referred to where something follows. The rules refer to
// themselves, so that the inliner leaves them be.
func TestTailReferencesOwners(t *testing.T) {
	p := compileGBNF(t, `root ::= "<" a ">" "(" b ")" "[" d "]" "{" f "}"
a ::= "x" c | "a" a | "."
b ::= "y" c | "b" b | "!"
c ::= "z" c | "-"
d ::= "w" e | "d" d | "."
e ::= "v" e | "u" d | "-"
f ::= "f" f | "(" g ")"
g ::= "g" g | "."`)
	assert.Positive(t, callsTo(p, "c"), "c, reached from a and from b, is called:\n%s", p)
	assert.Zero(t, callsTo(p, "e"), "e, reached from d alone, jumps:\n%s", p)
	assert.Positive(t, callsTo(p, "g"), "g, referred to before ')', is called:\n%s", p)
	for s, want := range map[string]bool{
		"<x->(y-)[.]{(.)}": true, "<xzz->(bbyz-)[wvvudw-]{ff(gg.)}": true,
		"<x->(y-)[wu]{(.)}": false, "<x->(y-)[.]{(g)}": false, "<x->(x-)[.]{(.)}": false,
	} {
		assert.Equal(t, want, inLanguage(p, s), "%q", s)
	}
}

// TestTailReferencesLanguage checks jumps differentially: random
// grammars of rules that refer to each other, last or not, through
// inlined rules and repetitions, against the same grammars with each
// tail reference made a call (an empty string after it).
func TestTailReferencesLanguage(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := "abc"
	for trial := range 300 {
		rules := 2 + r.IntN(6)
		var jumps, calls strings.Builder
		item := func(tail bool) (string, string) {
			switch k := r.IntN(10); {
			case k < 4:
				c := fmt.Sprintf("%q", alphabet[r.IntN(3):][:1])
				return c, c
			case k < 8:
				q := fmt.Sprintf("q%d", r.IntN(rules))
				if tail {
					return q, q + ` ""`
				}
				return q, q
			default:
				q := fmt.Sprintf("q%d", r.IntN(rules))
				op := "?*+"[r.IntN(3):][:1]
				return "(" + q + ")" + op, "(" + q + ")" + op
			}
		}
		for i := range rules {
			fmt.Fprintf(&jumps, "q%d ::= ", i)
			fmt.Fprintf(&calls, "q%d ::= ", i)
			for a := range 1 + r.IntN(3) {
				if a > 0 {
					jumps.WriteString(" | ")
					calls.WriteString(" | ")
				}
				n := 1 + r.IntN(3)
				for k := range n {
					j, c := item(k == n-1)
					fmt.Fprintf(&jumps, "%s ", j)
					fmt.Fprintf(&calls, "%s ", c)
				}
			}
			jumps.WriteString(`| "."` + "\n")
			calls.WriteString(`| "."` + "\n")
		}
		root := fmt.Sprintf("root ::= q0 | \"<\" q%d \">\"\n", r.IntN(rules))
		got := compileGBNF(t, root+jumps.String())
		want := compileGBNF(t, root+calls.String())
		for range 300 {
			b := make([]byte, r.IntN(9))
			for i := range b {
				b[i] = "abc.<>"[r.IntN(6)]
			}
			require.Equal(t, inLanguage(want, string(b)), inLanguage(got, string(b)), "trial %d: %q\n%s%s", trial, b, root, jumps.String())
		}
	}
}
