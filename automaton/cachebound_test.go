package automaton_test

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/automaton"
)

// TestCacheBounds: a parse that counts (".*a.{30}": which of the last
// 31 characters were an a) reaches a new state at nearly every token,
// and the caches of state masks and of the local view grow with each.
// Bounded far below what the walk needs, they are emptied again and
// again, and every mask stays what an automaton with room for all of
// them gives.
func TestCacheBounds(t *testing.T) {
	v := llama3Vocab(t)
	trie := automaton.NewTrie(v)
	const re = `.*a.{30}`
	bounded := regexAutomaton(t, v, trie, re)
	bounded.SetCacheBounds(64<<10, 1<<20)
	roomy := regexAutomaton(t, v, trie, re)
	r := rand.New(rand.NewPCG(3, 4))
	got := make([]uint32, automaton.MaskWords(v.Len()))
	want := make([]uint32, len(got))
	m, ref := bounded.NewMatcher(), roomy.NewMatcher()
	var most int64 // the bounded automaton's largest CacheBytes
	for step := range 40 {
		require.NoError(t, m.FillMask(got))
		require.NoError(t, ref.FillMask(want))
		most = max(most, bounded.CacheBytes())
		require.True(t, slices.Equal(want, got), "step %d: the bounded automaton's mask differs", step)
		var ok []int
		for tok := range v.Len() {
			if allowed(want, tok) && !v.IsEOG(tok) && len(v.Bytes(tok)) > 0 {
				ok = append(ok, tok)
			}
		}
		require.NotEmpty(t, ok)
		tok := ok[r.IntN(len(ok))]
		require.NoError(t, m.Advance(tok))
		require.NoError(t, ref.Advance(tok))
	}
	require.Greater(t, bounded.CacheResets(), 4, "the bounds were reached")
	require.Zero(t, roomy.CacheResets())
	// CacheBytes sees the caches grow, and the bounds hold them.
	t.Logf("CacheBytes: bounded at most %d, unbounded %d", most, roomy.CacheBytes())
	require.Less(t, most, int64(4<<20), "the bounded automaton's caches")
	require.Greater(t, roomy.CacheBytes(), 2*most, "the unbounded automaton's caches")
}

// TestCacheBoundsConcurrent: with bounds so small that the caches are
// emptied at nearly every new state, matchers on several goroutines
// sharing one automaton walk exactly as each does alone on a fresh one,
// over the shared grammars and a sample of MaskBench's schemas (run with
// -race: a reset happens under build while others read the caches and
// make matchers).
func TestCacheBoundsConcurrent(t *testing.T) {
	v := llama3Vocab(t)
	trie := automaton.NewTrie(v)
	const n = 3
	resets := 0
	for _, wg := range walkGrammars(t, 3200) {
		a, err := automaton.New(wg.prog, v, trie)
		require.NoError(t, err)
		a.SetCacheBounds(1<<10, 1<<10)
		var done sync.WaitGroup
		got := make([][][]uint32, n)
		for i := range n {
			done.Go(func() { got[i] = shortcutWalks(t, v, a, wg, uint64(i), 3, 25, nil) })
		}
		done.Wait()
		resets += a.CacheResets()
		for i := range n {
			alone, err := automaton.New(wg.prog, v, trie)
			require.NoError(t, err)
			want := shortcutWalks(t, v, alone, wg, uint64(i), 3, 25, nil)
			require.True(t, slices.EqualFunc(want, got[i], slices.Equal), "%s: goroutine %d's walk differs from a walk alone", wg.name, i)
		}
	}
	require.Greater(t, resets, 100, "the bounds were reached")
}
