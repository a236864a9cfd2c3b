package automaton_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/automaton"
)

// TestLastStateShortcuts: a matcher remembers the state mask and the
// context-dependent tokens of the step it filled last. The same state
// in another context must not take the last context's tokens: inside
// the called rule s (which cannot end before its ".") after "A", a
// token that ends s and goes on with "com" (".com") is allowed, after
// "B" one that goes on with "org". Every mask equals a new matcher's at
// the same place.
func TestLastStateShortcuts(t *testing.T) {
	v := llama3Vocab(t)
	a := bindGBNF(t, v, `root ::= "A" s "com" | "B" s "org"
s ::= [a-z] s | [a-z] "."`)
	walk := func(m *automaton.Matcher, text string) {
		t.Helper()
		for i := range len(text) {
			require.True(t, m.Parser().Push(text[i]), "%q", text)
		}
	}
	fresh := func(text string) []uint32 {
		t.Helper()
		m := a.NewMatcher()
		walk(m, text)
		mask := make([]uint32, automaton.MaskWords(v.Len()))
		require.NoError(t, m.FillMask(mask))
		return mask
	}
	wantA, wantB := fresh("Aab"), fresh("Bab")
	dotCom := -1
	for tok := range v.Len() {
		if string(v.Bytes(tok)) == ".com" {
			dotCom = tok
		}
	}
	require.GreaterOrEqual(t, dotCom, 0, "the vocabulary has the token \".com\"")
	require.True(t, allowed(wantA, dotCom), "\".com\" after A")
	require.False(t, allowed(wantB, dotCom), "no \".com\" after B")

	m := a.NewMatcher()
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	for _, text := range []string{"Aab", "Bab", "Aab", "A", "Aabc", "Babc", "Bab", "B"} {
		m.Reset()
		walk(m, text)
		require.NoError(t, m.FillMask(mask))
		want := wantA
		if text[0] == 'B' {
			want = wantB
		}
		if len(text) != 3 {
			want = fresh(text)
		}
		assert.True(t, slices.Equal(want, mask), "after %q", text)
		require.NoError(t, m.FillMask(mask)) // the same step again: from the shortcuts
		assert.True(t, slices.Equal(want, mask), "after %q, again", text)
	}
}
