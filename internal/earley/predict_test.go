package earley

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/reins-go/reins/grammar"
	"github.com/stretchr/testify/require"
)

// TestPredictionsAgree checks that a parser adding predictions from
// the shared closures builds the same sets as one following the
// program, on valid sentences and on random bytes after every prefix.
func TestPredictionsAgree(t *testing.T) {
	for _, g := range []*grammar.Grammar{jsonishGrammar(), {Start: "root", Rules: []grammar.Rule{
		{Name: "root", Body: grammar.Seq(grammar.Ref("x"), grammar.Ref("x"))},
		{Name: "x", Body: grammar.Alt(grammar.Seq(grammar.Ref("x"), grammar.Lit("+")), grammar.Repeat(grammar.Class('a', 'c'), 0, 3), grammar.Lit(""))},
	}}} {
		prog, err := grammar.Compile(g)
		require.NoError(t, err)
		preds := NewPredictions(prog)
		alphabet := []byte(`{}[],:" \n0123456789abcdenul+'\` + "\xc3\xa9")
		rng := rand.New(rand.NewPCG(9, 10))
		for _, sent := range []string{`{"a": [1,2, "x\"y"], "bcd":{"e":null}}`, `["héllo", {"k":"v"}, [[]], 123]`, `ab+c+`, `a+b`} {
			plain, shared := NewParser(prog), NewParser(prog)
			shared.SetPredictions(preds)
			for i := 0; i <= len(sent); i++ {
				for range 10 {
					n := 0
					for range 1 + rng.IntN(6) {
						b := alphabet[rng.IntN(len(alphabet))]
						ok := plain.Push(b)
						require.Equal(t, ok, shared.Push(b), "%q then byte %q", sent[:i], b)
						if !ok {
							break
						}
						n++
						require.Equal(t, sortedItems(plain), sortedItems(shared), "%q then %d bytes", sent[:i], n)
						require.Equal(t, plain.CanEnd(), shared.CanEnd())
					}
					plain.Pop(n)
					shared.Pop(n)
				}
				if i == len(sent) {
					break
				}
				ok := plain.Push(sent[i])
				require.Equal(t, ok, shared.Push(sent[i]))
				if !ok {
					break
				}
			}
		}
	}
}

// sortedItems returns the current set's items, sorted.
func sortedItems(ps *Parser) []item {
	items := slices.Clone(ps.set(ps.top()))
	slices.SortFunc(items, func(a, b item) int {
		if a.pc != b.pc {
			return int(a.pc) - int(b.pc)
		}
		return int(a.origin) - int(b.origin)
	})
	return items
}
