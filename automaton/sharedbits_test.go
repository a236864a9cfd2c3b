package automaton_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/internal/fixture"
)

// TestEqualMasksShareBits: two states that allow the same tokens (the
// letters after "x" and after "y", two copies of the same rule body)
// share one bitset; a state that allows others (digits) has its own.
func TestEqualMasksShareBits(t *testing.T) {
	v := llama3Vocab(t)
	a := bindGBNF(t, v, `root ::= "x" [a-z]+ "1" | "y" [a-z]+ "1" | "z" [0-9]+ "1"`)
	bitsAfter := func(text string) []uint32 {
		t.Helper()
		m := a.NewMatcher()
		for i := range len(text) {
			require.True(t, m.Parser().Push(text[i]))
		}
		bits := m.StateBits()
		require.NotNil(t, bits, "after %q the mask is dense (a bitset)", text)
		return bits
	}
	x, y, z := bitsAfter("xa"), bitsAfter("ya"), bitsAfter("z1")
	assert.Equal(t, x, y)
	assert.Same(t, &x[0], &y[0], "equal masks share one bitset")
	assert.NotEqual(t, x, z)
	assert.NotSame(t, &x[0], &z[0])

	// The masks a matcher fills are the states' own.
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	m := a.NewMatcher()
	require.True(t, m.Parser().Push('y'))
	require.True(t, m.Parser().Push('b'))
	require.NoError(t, m.FillMask(mask))
	assert.Equal(t, y, mask)
}

// TestSharedBitsBound: bitsets whose sampled words are equal share a
// hash; the cache keeps a few of them, compares whole bitsets, and
// returns a copy of one it does not keep.
func TestSharedBitsBound(t *testing.T) {
	v := fixture.New().Vocab()
	a := bindGBNF(t, v, fixture.Arithmetic)
	const words = 64
	bitset := func(k int) []uint32 {
		b := make([]uint32, words)
		b[0] = 7 // sampled (every eighth word): the same in all
		b[1] = uint32(k)
		return b
	}
	var kept [][]uint32
	for k := range 6 {
		in := bitset(k)
		got := a.SharedBits(in)
		assert.Equal(t, in, got)
		assert.NotSame(t, &in[0], &got[0], "the cache keeps a copy, not the caller's buffer")
		kept = append(kept, got)
	}
	for k := range 6 {
		got := a.SharedBits(bitset(k))
		assert.Equal(t, bitset(k), got)
		if k < 4 {
			assert.Same(t, &kept[k][0], &got[0], "bitset %d is kept and shared", k)
		} else {
			assert.NotSame(t, &kept[k][0], &got[0], "bitset %d is past the bound: not kept", k)
		}
	}
}
