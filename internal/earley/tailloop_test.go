package earley

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/grammar"
)

// inLanguage reports whether p's language holds s.
func inLanguage(p *grammar.Prog, s string) bool {
	ps := NewParser(p)
	for i := 0; i < len(s); i++ {
		if !ps.Push(s[i]) {
			return false
		}
	}
	return ps.CanEnd()
}

// TestTailCallsOfItselfLoop checks that a rule calling itself as its
// last step (as the rules a DFA is written as do) keeps the language of
// the call and runs as a loop: its state after each character is the
// same one, where a call per character makes a new one each time.
func TestTailCallsOfItselfLoop(t *testing.T) {
	for _, tc := range []struct{ name, tail, loop string }{
		{"dfa", `root ::= [a-z] root | "."`, `root ::= [a-z]* "."`},
		{"nullable", `root ::= "a" root | ""`, `root ::= "a"*`},
		{"two rules", `root ::= "x" other | "." ` + "\n" + `other ::= "y" root`, `root ::= ("xy")* "."`},
		{"no byte first", `root ::= root | "a"`, `root ::= "a"`},
		{"empty first", `root ::= ("" | "b") root | "a"`, `root ::= "b"* "a"`},
		{"after a call", `root ::= w "!" root | "." ` + "\n" + `w ::= [a-z]+`, `root ::= ([a-z]+ "!")* "."`},
		{"not a tail", `root ::= "(" root ")" | ""`, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := compileGBNF(t, tc.tail)
			root := uint32(p.Start)
			calls := 0
			for _, in := range p.Inst {
				if in.Op == grammar.InstCall && in.Arg == root {
					calls++
				}
			}
			if tc.loop == "" {
				assert.Equal(t, 1, calls, "a call that is not the rule's last step stays a call:\n%s", p)
				return
			}
			assert.Zero(t, calls, "the rule still calls itself:\n%s", p)
			want := compileGBNF(t, tc.loop)
			r := rand.New(rand.NewPCG(1, 2))
			alphabet := "abxy.!("
			for range 3000 {
				b := make([]byte, r.IntN(8))
				for i := range b {
					b[i] = alphabet[r.IntN(len(alphabet))]
				}
				assert.Equal(t, inLanguage(want, string(b)), inLanguage(p, string(b)), "%q", b)
			}
		})
	}
	// The local automaton of the loop reaches no new state after the
	// first few characters: with a call per character, every character
	// made a new one (its rule began at the state before).
	p := compileGBNF(t, `root ::= [a-z] root | "."`)
	d := NewLocalDFA(p)
	s := d.Start(NewParser(p))
	for range 200 {
		var taint bool
		s, taint = d.Step(s, 'q')
		require.GreaterOrEqual(t, s, int32(0))
		require.False(t, taint)
	}
	assert.LessOrEqual(t, d.States(), 3, "states after 200 characters")
}
