package automaton_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/automaton"
)

// TestListingsBounded: a grammar whose sets grow with the input lists a
// longer set at every step under the same signature; the listings the
// automaton and its context table remember stay within their bounds in
// bytes (without them, 2,000 steps hold 16 and 32 MB).
func TestListingsBounded(t *testing.T) {
	v := llama3Vocab(t)
	a := bindGBNF(t, v, `root ::= x
x ::= "a" x y | "a"
y ::= "" | "b"`)
	m := a.NewMatcher()
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	for range 2000 {
		require.True(t, m.Parser().Push('a'))
		require.NoError(t, m.FillMask(mask))
	}
	masks, contexts := a.ListedBytes()
	t.Logf("listings: %d bytes of masks', %d of contexts'", masks, contexts)
	assert.Greater(t, masks, automaton.MaxListedBytes*3/4, "the walk fills the masks' listings")
	assert.LessOrEqual(t, masks, automaton.MaxListedBytes)
	assert.Greater(t, contexts, 0)
	assert.LessOrEqual(t, contexts, 8<<20)
}
