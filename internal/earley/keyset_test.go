package earley

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestItemSet checks itemSet against a map: items at one instruction
// with several origins, sets emptied by reset, and the stamps' wrap.
func TestItemSet(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var s itemSet
	s.reset(16)
	require.True(t, s.add(3, 1))
	require.False(t, s.add(3, 1))
	s.cur = ^uint32(0) // the next reset wraps to the generation that added (3, 1)
	s.reset(16)
	require.True(t, s.add(3, 1), "emptied by a reset that wraps")
	for round := range 300 {
		s.reset(16)
		want := map[[2]uint32]bool{}
		for range r.IntN(40) {
			it := [2]uint32{uint32(r.IntN(16)), uint32(r.IntN(4))}
			require.Equal(t, !want[it], s.add(it[0], it[1]), "round %d: add%v", round, it)
			want[it] = true
		}
	}
}
