package automaton_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/automaton"
)

// TestRepeatCopiesShareMasks walks long texts through long bounded
// repetitions (a string's characters, an array's items) and checks that
// the copies of the repeated body that allow more repetitions than the
// longest token has bytes share one cached state mask, and that every
// mask equals the one computed for the position alone.
func TestRepeatCopiesShareMasks(t *testing.T) {
	v := llama3Vocab(t)
	words := strings.Repeat("the quick brown fox jumps over a lazy dog ", 12)
	for _, tc := range []struct{ name, src, text string }{
		{"class", `root ::= "\"" [a-z ]{0,600} "\""`, `"` + words + `"`},
		{"rule body", `root ::= "\"" char{2,600} "\""` + "\n" + `char ::= [^"\\] | "\\" ["\\/bfnrt]`, `"` + words + `\"quoted\" end"`},
		{"items", `root ::= "[" item{0,500} "]"` + "\n" + `item ::= [0-9]+ ", "`, "[" + strings.Repeat("12, 345, 6, ", 60) + "]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := bindGBNF(t, v, tc.src)
			require.NotEmpty(t, a.Prog().Repeats, "the repetition's copies are recorded")
			ref := bindGBNF(t, v, tc.src)
			ref.Plain()
			toks := greedyTokens(v, tc.text)
			m, mr := a.NewMatcher(), ref.NewMatcher()
			mask := make([]uint32, automaton.MaskWords(v.Len()))
			want := make([]uint32, len(mask))
			for i, tok := range toks {
				require.NoError(t, m.FillMask(mask))
				require.NoError(t, mr.FillMask(want))
				require.Equal(t, want, mask, "mask before token %d (%q)", i, v.Bytes(tok))
				require.NoError(t, m.Advance(tok))
				require.NoError(t, mr.Advance(tok))
			}
			assert.True(t, m.CanEnd())
			t.Logf("%d tokens: %d state masks shared, %d alone", len(toks), a.CachedStates(), ref.CachedStates())
			assert.Less(t, 2*a.CachedStates(), ref.CachedStates(), "copies past the longest token share their masks")
		})
	}
}
