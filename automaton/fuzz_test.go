package automaton_test

import (
	"testing"

	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/gbnf"
	"github.com/reins-go/reins/internal/fixture"
)

// FuzzAutomaton compiles a fuzzed grammar and drives a matcher along a
// fuzzed token choice: no panic, no hang, and at every step exactly the
// masked tokens advance, while a restore returns the same mask.
func FuzzAutomaton(f *testing.F) {
	f.Add(fixture.Arithmetic, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(`root ::= "a" root | "b" | ("c"? "d")*`, []byte{9, 0, 200})
	f.Add(`root ::= x x
x ::= x "+" | [^a-c]{1,3} | ""`, []byte{3, 3, 3, 3})
	f.Add(`root ::= "é" [日本]+ !<[65]> <[2]>`, []byte{0, 1, 2, 3, 4})
	v := fixture.New().Vocab()
	trie := automaton.NewTrie(v)
	f.Fuzz(func(t *testing.T, src string, choices []byte) {
		g, err := gbnf.Parse("fuzz", src)
		if err != nil {
			return
		}
		p, err := grammar.Compile(g)
		if err != nil {
			return
		}
		a, err := automaton.New(p, v, trie)
		if err != nil {
			return
		}
		// Earley is cubic on the most ambiguous grammars (root ::= x x,
		// x ::= x "0" | [^abc]*): bound the walk so each input stays fast.
		if len(choices) > 64 {
			choices = choices[:64]
		}
		m := a.NewMatcher()
		mask := make([]uint32, automaton.MaskWords(v.Len()))
		again := make([]uint32, len(mask))
		for _, c := range choices {
			if err := m.FillMask(mask); err != nil {
				t.Fatal(err)
			}
			var allowed []int
			for tok := range v.Len() {
				if mask[tok/32]&(1<<(tok%32)) != 0 {
					allowed = append(allowed, tok)
				}
			}
			if len(allowed) == 0 {
				if !m.CanEnd() {
					t.Fatalf("dead state: nothing allowed and the output cannot end\n%s", src)
				}
				return
			}
			// A refused token is refused by Advance too.
			for tok := range v.Len() {
				if mask[tok/32]&(1<<(tok%32)) == 0 {
					if m.Advance(tok) == nil {
						t.Fatalf("token %d refused by the mask but accepted\n%s", tok, src)
					}
					break
				}
			}
			tok := allowed[int(c)%len(allowed)]
			mark := m.Snapshot()
			if err := m.Advance(tok); err != nil {
				t.Fatalf("token %d allowed by the mask but refused: %v\n%s", tok, err, src)
			}
			m.Restore(mark)
			if err := m.FillMask(again); err != nil {
				t.Fatal(err)
			}
			for i := range mask {
				if mask[i] != again[i] {
					t.Fatalf("mask changed after restore\n%s", src)
				}
			}
			if err := m.Advance(tok); err != nil {
				t.Fatal(err)
			}
			if v.IsEOG(tok) {
				return
			}
		}
	})
}
