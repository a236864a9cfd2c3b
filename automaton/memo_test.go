package automaton_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/reins-go/reins/automaton"
	"github.com/stretchr/testify/require"
)

// objectGrammar is the shape JSON Schema lowers to: an object whose
// properties share a string rule and a number rule, nested, so that a
// string's content is reached from many places.
const objectGrammar = `root ::= obj
obj ::= "{" ws "\"name\":" ws str "," ws "\"tag\":" ws str "," ws "\"n\":" ws num ("," ws "\"kids\":" ws "[" ws (obj ("," ws obj)*)? ws "]")? ws "}"
str ::= "\"" ([^"\\\x00-\x1f] | "\\" ["\\/bfnrtu])* "\""
num ::= "-"? [0-9]+ ("." [0-9]+)?
ws ::= [ \n]?`

// TestWalkMemoAgrees checks that masks taken from the walk memo (a
// subtree walked once from a canonical state), with context-dependent
// tokens walked by the local view below each root, equal masks walked
// in full with context-dependent tokens walked by the parser, along
// random walks on the Llama-3 vocabulary, where subtrees are large
// enough for the memo.
func TestWalkMemoAgrees(t *testing.T) {
	v := llama3Vocab(t)
	for _, src := range []string{objectGrammar, `root ::= "[" (s ("," s)*)? "]"
s ::= "\"" [a-z ]{0,12} "\"" | [0-9]+`} {
		withMemo := bindGBNF(t, v, src)
		plain := bindGBNF(t, v, src)
		plain.Plain()
		r := rand.New(rand.NewPCG(7, 8))
		got := make([]uint32, automaton.MaskWords(v.Len()))
		want := make([]uint32, len(got))
		for walk := range 6 {
			m, p := withMemo.NewMatcher(), plain.NewMatcher()
			for step := range 60 {
				require.NoError(t, m.FillMask(got))
				require.NoError(t, p.FillMask(want))
				require.True(t, slices.Equal(want, got), "walk %d step %d: the memo's mask differs", walk, step)
				var ok []int
				for tok := range v.Len() {
					if allowed(want, tok) && !v.IsEOG(tok) {
						ok = append(ok, tok)
					}
				}
				if len(ok) == 0 {
					break
				}
				tok := ok[r.IntN(len(ok))]
				require.NoError(t, m.Advance(tok))
				require.NoError(t, p.Advance(tok))
			}
		}
		require.Positive(t, withMemo.MemoEntries(), "the memo was used")
	}
}
