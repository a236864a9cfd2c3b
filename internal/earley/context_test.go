package earley

import (
	"math/rand/v2"
	"testing"

	"github.com/reins-go/reins/grammar"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// continuations lists, for every text of up to n bytes from alphabet,
// whether ps accepts it and whether it can end after it.
func continuations(ps *Parser, alphabet []byte, n int) []bool {
	var out []bool
	var walk func(d int)
	walk = func(d int) {
		out = append(out, ps.CanEnd())
		if d == n {
			return
		}
		for _, b := range alphabet {
			ok := ps.Push(b)
			out = append(out, ok)
			if ok {
				walk(d + 1)
				ps.Pop(1)
			}
		}
	}
	walk(0)
	return out
}

// TestContextKey checks that states with the same ContextKey accept the
// same continuations, that keys do not depend on commits and pops along
// the way or on the key asked for before, and that recurring states
// share keys.
func TestContextKey(t *testing.T) {
	prog, err := grammar.Compile(jsonishGrammar())
	require.NoError(t, err)
	sentences := []string{
		`{"a": [1,2, "x\"y"], "bcd":{"e":null}}`,
		`["hello", {"k":"v"}, [[]], 123, [["ab"], ["ab"]]]`,
		`{"a": {"a": {"a": "xx", "b": "xx"}, "b": 1}, "b": [{"a": "xx"}]}`,
	}
	alphabet := []byte(`{}[],:" 01anx`)
	var tab ContextTable
	seen := map[uint32][]bool{}
	rng := rand.New(rand.NewPCG(3, 4))
	distinct := 0
	for _, sent := range sentences {
		committing := NewParser(prog)
		fresh := NewParser(prog)
		for i := 0; i <= len(sent); i++ {
			if i > 0 {
				require.True(t, committing.Push(sent[i-1]))
				require.True(t, fresh.Push(sent[i-1]))
				// A detour that is popped again must not leave stale keys.
				for range rng.IntN(3) {
					if committing.Push(alphabet[rng.IntN(len(alphabet))]) {
						committing.ContextKey(&tab)
						committing.Pop(1)
					}
				}
				if rng.IntN(3) == 0 {
					committing.Commit()
				}
			}
			key := committing.ContextKey(&tab)
			assert.Equal(t, key, fresh.ContextKey(&tab), "%q at %d: commits change the key", sent, i)
			// A new parser computes the key without the last one to go by.
			replay := NewParser(prog)
			for _, b := range []byte(sent[:i]) {
				require.True(t, replay.Push(b))
			}
			assert.Equal(t, key, replay.ContextKey(&tab), "%q at %d: the key the last one stood for is stale", sent, i)
			cont := continuations(fresh, alphabet, 3)
			if prev, ok := seen[key]; ok {
				assert.Equal(t, prev, cont, "%q at %d: same key, different continuations", sent, i)
			} else {
				seen[key] = cont
				distinct++
			}
		}
	}
	assert.Less(t, distinct, total(sentences))
	// Inside a string, every step after the first character is the
	// same state.
	ps := NewParser(prog)
	keys := map[uint32]bool{}
	for i, b := range []byte(`["` + "abcabcabcabcabcabcabcabc") {
		require.True(t, ps.Push(b))
		if i >= 2 {
			keys[ps.ContextKey(&tab)] = true
		}
	}
	assert.Len(t, keys, 1)
}

func total(sentences []string) int {
	n := 0
	for _, s := range sentences {
		n += len(s) + 1
	}
	return n
}

// TestContextTableMax checks that a full table gives new states no key
// (0), and keeps the keys it holds.
func TestContextTableMax(t *testing.T) {
	prog, err := grammar.Compile(jsonishGrammar())
	require.NoError(t, err)
	tab := ContextTable{Max: 3}
	ps := NewParser(prog)
	var keys []uint32
	for _, b := range []byte(`[1, {"ab": [2]}]`) {
		require.True(t, ps.Push(b))
		keys = append(keys, ps.ContextKey(&tab))
	}
	assert.Contains(t, keys, uint32(0), "some state finds the table full")
	for _, k := range keys {
		assert.LessOrEqual(t, k, uint32(3))
	}
	fresh := NewParser(prog)
	require.True(t, fresh.Push('['))
	assert.Equal(t, keys[0], fresh.ContextKey(&tab), "a held state keeps its key")
	assert.NotZero(t, keys[0])
}

// TestContextKeyListed checks that keys found by a state's listing (the
// pairs as listed, unsorted) name the same states as keys found by
// sorting: one table answers from its listings, the other forgets them
// before every key, and the two tables' keys match one to one.
func TestContextKeyListed(t *testing.T) {
	prog, err := grammar.Compile(jsonishGrammar())
	require.NoError(t, err)
	var listedTab, sortedTab ContextTable
	byListed, bySorted := map[uint32]uint32{}, map[uint32]uint32{}
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []byte(`{}[],:" 01anx`)
	for _, sent := range []string{
		`{"a": [1,2, "x\"y"], "bcd":{"e":null}}`,
		`["hello", {"k":"v"}, [[]], 123, [["ab"], ["ab"]]]`,
		`{"a": {"a": {"a": "xx", "b": "xx"}, "b": 1}, "b": [{"a": "xx"}]}`,
	} {
		a, b := NewParser(prog), NewParser(prog)
		for i := range len(sent) {
			require.True(t, a.Push(sent[i]))
			require.True(t, b.Push(sent[i]))
			for range 3 { // and a detour of a byte or two, popped again
				n := 0
				for range 1 + rng.IntN(2) {
					c := alphabet[rng.IntN(len(alphabet))]
					if a.Push(c) {
						require.True(t, b.Push(c))
						n++
					}
				}
				for _, k := range [][2]uint32{{a.ContextKey(&listedTab), forget(&sortedTab, b)}} {
					if old, ok := byListed[k[0]]; ok {
						assert.Equal(t, old, k[1], "%q at %d: one listed key, two sorted ones", sent, i)
					}
					if old, ok := bySorted[k[1]]; ok {
						assert.Equal(t, old, k[0], "%q at %d: one sorted key, two listed ones", sent, i)
					}
					byListed[k[0]], bySorted[k[1]] = k[1], k[0]
				}
				a.Pop(n)
				b.Pop(n)
			}
		}
	}
	assert.NotEmpty(t, listedTab.listed)
	assert.Greater(t, len(byListed), 50)
}

// forget returns ps's key in tab with tab's listings forgotten first,
// so that the key is found by sorting.
func forget(tab *ContextTable, ps *Parser) uint32 {
	tab.listed = nil
	ps.ctxLast = 0 // and the parser's last key
	return ps.ContextKey(tab)
}

// TestContextTableKeyBytes checks that the table's keys take at most
// maxKeyBytes: a new state whose key would pass it gets no key (0), a
// held one keeps its own, and Bytes counts what the keys hold.
func TestContextTableKeyBytes(t *testing.T) {
	var tab ContextTable
	key := make([]uint32, 1<<20) // a 4 MB state
	n := maxKeyBytes / (4 * len(key))
	for i := range n {
		key[0] = uint32(i)
		require.Equal(t, uint32(i+1), tab.intern(key, nil), "state %d of %d", i, n)
	}
	assert.GreaterOrEqual(t, tab.Bytes(), maxKeyBytes)
	key[0] = uint32(n)
	assert.Zero(t, tab.intern(key, nil), "a state past the bound")
	assert.Zero(t, tab.intern(append(key, 1), nil), "a longer one too")
	key = key[:1<<20]
	key[0] = 0
	assert.Equal(t, uint32(1), tab.intern(key, nil), "a held state keeps its key")
}
