package reins

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/decode"
)

// TestHealLetsTheModelJoinTheBoundary: a prompt that ends in a space
// would force the output after a lone space token; healed, the output
// spells the space again and may take a token that starts with it. The
// bigram fixture merges " t" and " the": after "The cat sat on" + " ",
// unhealed generation cannot use them, healed generation does.
func TestHealLetsTheModelJoinTheBoundary(t *testing.T) {
	m := Builtin()
	re, err := Regex(`(the|a) [a-z]+`)
	require.NoError(t, err)
	plain, err := m.Generate(context.Background(), "The cat sat on ", Options{Constraint: re, MaxTokens: 8})
	require.NoError(t, err)
	healed, err := m.Generate(context.Background(), "The cat sat on ", Options{Constraint: re, MaxTokens: 8, Heal: true})
	require.NoError(t, err)
	assert.Equal(t, " ", healed.Healed)
	require.NotEmpty(t, healed.Tokens)
	assert.Equal(t, " the", healed.Tokens[0].Token, "the merged token spans the boundary")
	assert.NotEqual(t, " the", plain.Tokens[0].Token)
	require.NoError(t, re.Match([]byte(healed.Text)), "the text after the healed bytes is in the language")
	var spelled string
	for _, tok := range healed.Tokens {
		spelled += tok.Token
	}
	assert.Equal(t, healed.Healed+healed.Text, spelled)
	assert.Greater(t, healed.Logprob(), plain.Logprob(), "the natural tokenization is the likelier one")

	// Without a constraint, healing still joins the boundary.
	free, err := m.Generate(context.Background(), "The cat sat on ", Options{MaxTokens: 4, Heal: true})
	require.NoError(t, err)
	assert.Equal(t, " the", free.Tokens[0].Token)

	// Choose with Heal scores " "+option after "The cat sat on".
	sel, err := m.Choose(context.Background(), "The cat sat on ", []string{"the mat", "a mat"}, ChooseOptions{Heal: true})
	require.NoError(t, err)
	want, err := m.Score(context.Background(), " the mat", ScoreOptions{Context: "The cat sat on"})
	require.NoError(t, err)
	assert.InDelta(t, want.Sum, sel.Options[0].Logprob, 1e-6)
	assert.Equal(t, " ", sel.Healed, "the selection says what healing took back")

	// Generate under a Choice heals the same way, and says what it took back.
	choice, err := Choice("the mat", "a mat")
	require.NoError(t, err)
	picked, err := m.Generate(context.Background(), "The cat sat on ", Options{Constraint: choice, Heal: true})
	require.NoError(t, err)
	assert.Equal(t, " ", picked.Healed)
	assert.InDelta(t, want.Sum, picked.Options[0].Logprob, 1e-6)

	s := m.Stream(context.Background(), "x ", Options{Heal: true})
	for range s.Tokens() {
	}
	var oe *OptionError
	assert.ErrorAs(t, s.Err(), &oe)
}

// TestHealStopsInTheHealedBytes: a stop string that could begin in the
// bytes healing takes back would cut the output before it starts, so
// such a prompt is generated unhealed and the output is not empty.
func TestHealStopsInTheHealedBytes(t *testing.T) {
	m := Builtin()
	plain, err := m.Generate(context.Background(), "The cat sat on ", Options{MaxTokens: 6, Stop: []string{" "}})
	require.NoError(t, err)
	healed, err := m.Generate(context.Background(), "The cat sat on ", Options{MaxTokens: 6, Stop: []string{" "}, Heal: true})
	require.NoError(t, err)
	assert.Empty(t, healed.Healed, "the stop string is the healed space")
	assert.Equal(t, plain.Text, healed.Text)
	assert.NotEmpty(t, healed.Text)
	// A stop string elsewhere lets the prompt heal.
	healed, err = m.Generate(context.Background(), "The cat sat on ", Options{MaxTokens: 6, Stop: []string{"."}, Heal: true})
	require.NoError(t, err)
	assert.Equal(t, " ", healed.Healed)
	assert.True(t, stopsInHealed(" t", []string{"th"}), "a stop string that begins in the healed bytes and goes on past them")
	assert.True(t, stopsInHealed("abc", []string{"b"}), "a stop string inside the healed bytes")
	assert.False(t, stopsInHealed("abc", []string{"ba", "x"}))
}

// TestHealBudget: the tokens that spell the healed bytes again do not
// count against MaxTokens, however many the model spells them in; the
// tokens after them are the caller's MaxTokens.
func TestHealBudget(t *testing.T) {
	m := Builtin()
	split := 0
	for seed := range uint64(40) {
		healed, err := m.Generate(context.Background(), "The cat sat on the", Options{MaxTokens: 3, Temperature: 1, Seed: seed, Heal: true, Stop: []string{"."}})
		require.NoError(t, err)
		require.Equal(t, " the", healed.Healed)
		free, off := 0, 0
		for _, tok := range healed.Tokens {
			if off < len(healed.Healed) {
				free++
			}
			off += len(tok.Bytes)
		}
		if free > 1 {
			split++
		}
		assert.LessOrEqual(t, len(healed.Tokens)-free, 3, "seed %d", seed)
		if healed.FinishReason == decode.FinishLength {
			assert.Equal(t, 3, len(healed.Tokens)-free, "seed %d: the budget is the tokens after the healed bytes' own", seed)
		}
		unhealed, err := m.Generate(context.Background(), "The cat sat on the", Options{MaxTokens: 3, Temperature: 1, Seed: seed, Heal: true, Stop: []string{"h"}})
		require.NoError(t, err)
		require.Empty(t, unhealed.Healed)
		assert.LessOrEqual(t, len(unhealed.Tokens), 3, "seed %d", seed)
	}
	assert.Positive(t, split, "some seed spells the healed bytes in more than one token")
}

// TestHealedCopiesBounded: a constraint keeps a healed copy per prefix
// a prompt gives back, each a whole compiled grammar; a long-lived
// program meets many, so it keeps the maxHealed most recently used and
// compiles a dropped one again.
func TestHealedCopiesBounded(t *testing.T) {
	c, err := Regex(`[a-z ]+`)
	require.NoError(t, err)
	alone := c.Bytes()
	first, err := c.after([]byte("a"))
	require.NoError(t, err)
	kept, err := c.after([]byte("k"))
	require.NoError(t, err)
	assert.Greater(t, c.Bytes(), alone, "the healed copies are counted")
	for i := range maxHealed + 4 {
		prefix := []byte{'b' + byte(i%20), 'a' + byte(i/20)}
		h, err := c.after(prefix)
		require.NoError(t, err)
		again, err := c.after(prefix)
		require.NoError(t, err)
		require.Same(t, h, again, "a prefix just used is kept")
		again, err = c.after([]byte("k")) // used all along: never the least recent
		require.NoError(t, err)
		require.Same(t, kept, again, "a copy used all along was dropped at prefix %d", i)
	}
	assert.Len(t, c.healed, maxHealed)
	assert.Len(t, c.healedOrder, maxHealed)
	again, err := c.after([]byte("a"))
	require.NoError(t, err)
	assert.NotSame(t, first, again, "the least recently used copy was dropped and compiled again")
	require.NoError(t, again.Match([]byte("abc")))
}

// TestConcurrentBindsShareOne: goroutines that bind one constraint to
// one vocabulary at once get one automaton (one binds; the others wait
// for it), and a bind that fails fails alike for each of them.
func TestConcurrentBindsShareOne(t *testing.T) {
	m := Builtin()
	v, trie := m.Vocab(), m.tokenTrie()
	for _, src := range []string{`root ::= [a-z]+ "."`, `root ::= "a" <[999999]>`} {
		c, err := Grammar(src)
		require.NoError(t, err)
		got := make([]*automaton.Automaton, 8)
		errs := make([]error, 8)
		var wg sync.WaitGroup
		for i := range got {
			wg.Go(func() { got[i], errs[i] = c.Bind(v, trie) })
		}
		wg.Wait()
		for i := range got {
			assert.Same(t, got[0], got[i], "%s: binding %d", src, i)
			assert.Equal(t, errs[0], errs[i], "%s: binding %d", src, i)
		}
		if src == `root ::= "a" <[999999]>` {
			assert.ErrorContains(t, errs[0], "outside the vocabulary")
			assert.Empty(t, c.binding, "a failed bind is not left in progress")
		}
	}
}
