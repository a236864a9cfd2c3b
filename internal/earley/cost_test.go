package earley

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/gbnf"
)

// shortestByBytes finds, by breadth-first search over the bytes the
// parser accepts, the length of the shortest input that finishes the
// parse from its current state (-1 beyond limit).
func shortestByBytes(ps *Parser, limit int) int {
	if ps.CanEnd() {
		return 0
	}
	if limit == 0 {
		return -1
	}
	best := -1
	next, _ := ps.Next()
	for c := range 256 {
		if next[c>>6]&(1<<(c&63)) == 0 || !ps.Push(byte(c)) {
			continue
		}
		sub := limit - 1
		if best >= 0 {
			sub = best - 2
		}
		if sub >= 0 {
			if n := shortestByBytes(ps, sub); n >= 0 && (best < 0 || n+1 < best) {
				best = n + 1
			}
		}
		ps.Pop(1)
	}
	return best
}

// TestCostToEndIsShortestCompletion checks CostToEnd, with every byte
// costing 1, against a search for the shortest completion, along random
// walks through grammars with recursion, nullable rules, left recursion
// and nesting.
func TestCostToEndIsShortestCompletion(t *testing.T) {
	grammars := []string{
		`root ::= "a" | "b" "cdefgh" | "xy"`,
		`root ::= "[" list "]"
list ::= "" | item ("," item)*
item ::= [0-9]+ | "{" "k:" root "}"`,
		`root ::= expr
expr ::= expr "+" term | term
term ::= term "*" atom | atom
atom ::= [0-9] | "(" expr ")"`,
		`root ::= a b c
a ::= "x"? | "long"
b ::= a a
c ::= "" | "end" | c "!"`,
		`root ::= "{" ws "\"name\"" ws ":" ws str ws "}"
ws ::= [ ]?
str ::= "\"" [a-z]{2,4} "\""`,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, src := range grammars {
		g, err := gbnf.Parse("test.gbnf", src)
		require.NoError(t, err)
		p, err := grammar.Compile(g)
		require.NoError(t, err)
		costs := NewCosts(p, func(int) int32 { return 1 }, nil)
		for range 40 {
			ps := NewParser(p)
			var memo CostMemo
			for step := 0; step < 12; step++ {
				want := shortestByBytes(ps, 10)
				got := ps.CostToEnd(costs, &memo)
				if want >= 0 {
					require.Equal(t, int32(want), got, "%s after %d bytes", src, ps.Len())
				} else {
					require.Greater(t, got, int32(10), "%s after %d bytes", src, ps.Len())
				}
				next, _ := ps.Next()
				var opts []byte
				for c := range 256 {
					if next[c>>6]&(1<<(c&63)) != 0 {
						opts = append(opts, byte(c))
					}
				}
				if len(opts) == 0 {
					break
				}
				require.True(t, ps.Push(opts[rng.IntN(len(opts))]))
				if rng.IntN(3) == 0 {
					memo.Mark(ps.Len())
				}
			}
		}
	}
}
