package automaton_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/gbnf"
	"github.com/reins-go/reins/internal/fixture"
	"github.com/reins-go/reins/internal/shared"
	"github.com/reins-go/reins/vocab"
)

func bindGBNF(t testing.TB, v *vocab.Vocab, src string) *automaton.Automaton {
	t.Helper()
	g, err := gbnf.Parse("test.gbnf", src)
	require.NoError(t, err)
	p, err := grammar.Compile(g)
	require.NoError(t, err)
	a, err := automaton.New(p, v, automaton.NewTrie(v))
	require.NoError(t, err)
	return a
}

func allowed(mask []uint32, t int) bool { return mask[t/32]&(1<<(t%32)) != 0 }

// checkMaskInvariant asserts that exactly the tokens the mask allows are
// accepted by Advance, and that a refused Advance changes nothing.
func checkMaskInvariant(t *testing.T, m *automaton.Matcher, v *vocab.Vocab, mask []uint32) {
	t.Helper()
	require.NoError(t, m.FillMask(mask))
	mark := m.Snapshot()
	for tok := range v.Len() {
		err := m.Advance(tok)
		if allowed(mask, tok) {
			require.NoError(t, err, "token %d %q allowed by the mask but refused", tok, v.Bytes(tok))
			m.Restore(mark)
		} else {
			require.Error(t, err, "token %d %q refused by the mask but accepted", tok, v.Bytes(tok))
		}
	}
	again := make([]uint32, len(mask))
	require.NoError(t, m.FillMask(again))
	require.Equal(t, mask, again, "masks after restore equal those before")
}

func TestMatcherInvariantsRandomWalks(t *testing.T) {
	v := fixture.New().Vocab()
	a := bindGBNF(t, v, fixture.Arithmetic)
	r := rand.New(rand.NewPCG(1, 1))
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	for walk := range 20 {
		m := a.NewMatcher()
		var text []byte
		for step := 0; step < 40; step++ {
			checkMaskInvariant(t, m, v, mask)
			var ok []int
			for tok := range v.Len() {
				if allowed(mask, tok) {
					ok = append(ok, tok)
				}
			}
			require.NotEmpty(t, ok, "walk %d step %d: a live state always allows something", walk, step)
			tok := ok[r.IntN(len(ok))]
			require.NoError(t, m.Advance(tok))
			if v.IsEOG(tok) {
				break
			}
			text = append(text, v.Bytes(tok)...)
		}
		// Soundness: the text so far is a prefix of the language, and a
		// whole sentence where the matcher says it can end.
		assert.True(t, fixture.IsArithmeticPrefix(string(text)), "%q", text)
	}
}

func TestMatcherEndAndRestore(t *testing.T) {
	v := fixture.New().Vocab()
	a := bindGBNF(t, v, `root ::= "ab" | "abc"`)
	m := a.NewMatcher()
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	require.NoError(t, m.FillMask(mask))
	assert.False(t, allowed(mask, fixture.EOS), "EOS only where the output can end")
	require.NoError(t, m.Advance(fixture.Raw('a')))
	require.NoError(t, m.Advance(fixture.Raw('b')))
	require.NoError(t, m.FillMask(mask))
	assert.True(t, allowed(mask, fixture.EOS))
	assert.True(t, allowed(mask, fixture.Raw('c')))
	s := m.Snapshot()
	require.NoError(t, m.Advance(fixture.EOS))
	assert.ErrorIs(t, m.Advance(fixture.Raw('c')), automaton.ErrEnded)
	m.Restore(s)
	require.NoError(t, m.Advance(fixture.Raw('c')))
	require.NoError(t, m.FillMask(mask))
	for tok := range v.Len() {
		assert.Equal(t, v.IsEOG(tok), allowed(mask, tok), "only EOG after abc")
	}
	err := a.NewMatcher().Advance(fixture.Raw('z'))
	assert.ErrorContains(t, err, "expected 'a'")
}

func TestTokenTerminals(t *testing.T) {
	v := fixture.New().Vocab()
	// </s> (EOS) named as a token terminal; and "any token but 'x'".
	a := bindGBNF(t, v, `root ::= "a" !<[122]> "b"`)
	m := a.NewMatcher()
	require.NoError(t, m.Advance(fixture.Raw('a')))
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	require.NoError(t, m.FillMask(mask))
	assert.False(t, allowed(mask, 122))
	assert.True(t, allowed(mask, 0), "control token <s> is a token too")
	assert.False(t, allowed(mask, fixture.EOS), "EOG is not 'any token'")
	require.NoError(t, m.Advance(0))
	require.NoError(t, m.Advance(fixture.Raw('b')))
	assert.True(t, m.CanEnd())

	_, err := automaton.New(mustCompile(t, `root ::= <|nope|>`), v, automaton.NewTrie(v))
	assert.ErrorContains(t, err, "<|nope|>: no such token")
}

func mustCompile(t *testing.T, src string) *grammar.Prog {
	g, err := gbnf.Parse("t", src)
	require.NoError(t, err)
	p, err := grammar.Compile(g)
	require.NoError(t, err)
	return p
}

func TestTrieWalkVisitsEveryToken(t *testing.T) {
	path := shared.Path(t, "vocab/ggml-vocab-llama-bpe.gguf")
	v, err := vocab.Load(path)
	require.NoError(t, err)
	a := bindGBNF(t, v, `root ::= [\x00-\U0010FFFF]*`) // any UTF-8 text... and bytes that start it
	m := a.NewMatcher()
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	require.NoError(t, m.FillMask(mask))
	n := 0
	for tok := range v.Len() {
		if allowed(mask, tok) {
			n++
		}
	}
	t.Logf("%d of %d tokens allowed by 'any text'", n, v.Len())
	assert.Greater(t, n, 120000)
}

func TestMatcherStateStaysSmallOnLongOutput(t *testing.T) {
	v := fixture.New().Vocab()
	src := `root ::= "[" ws (item ("," ws item)*)? "]"
item ::= "{\"k\": \"" [a-z ]* "\", \"n\": " [0-9]+ "}"
ws ::= " "?`
	a := bindGBNF(t, v, src)
	m := a.NewMatcher()
	text := "["
	for i := range 60 {
		if i > 0 {
			text += ", "
		}
		text += `{"k": "some words in a string", "n": 12345}`
	}
	text += "]"
	b := fixture.New().NewBackend()
	toks, err := b.Tokenize(text, false)
	require.NoError(t, err)
	require.Greater(t, len(text), 2500)
	for _, tok := range toks {
		require.NoError(t, m.Advance(tok))
	}
	require.True(t, m.CanEnd())
	t.Logf("%d bytes, %d tokens: matcher state %d bytes", len(text), len(toks), m.StateBytes())
	assert.Less(t, m.StateBytes(), 16<<10, "the state of a long output stays flat")
}

func TestRestoreWithinWindow(t *testing.T) {
	v := fixture.New().Vocab()
	a := bindGBNF(t, v, fixture.Arithmetic)
	b := fixture.New().NewBackend()
	toks, err := b.Tokenize("(1+22)*3-(4*(5+6))", false)
	require.NoError(t, err)
	m := a.NewMatcher()
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	var masks [][]uint32
	for _, tok := range toks {
		require.NoError(t, m.FillMask(mask))
		masks = append(masks, append([]uint32(nil), mask...))
		require.NoError(t, m.Advance(tok))
	}
	for _, mark := range []int{len(toks) - 1, 3, 0, 7} {
		m.Restore(mark)
		require.Equal(t, mark, m.Snapshot())
		require.NoError(t, m.FillMask(mask))
		assert.Equal(t, masks[mark], mask, "mask after restoring to %d", mark)
		for _, tok := range toks[mark:] {
			require.NoError(t, m.Advance(tok))
		}
	}
	c := m.Clone()
	c.Restore(2)
	assert.Equal(t, len(toks), m.Snapshot(), "a clone is independent")

	// Beyond the window, Restore refuses loudly.
	long := a.NewMatcher()
	many, err := b.Tokenize("1"+strings.Repeat("+1", automaton.RestoreWindow+5), false)
	require.NoError(t, err)
	for _, tok := range many {
		require.NoError(t, long.Advance(tok))
	}
	assert.PanicsWithValue(t, fmt.Sprintf("automaton: Restore(1) with %d tokens advanced: a matcher restores at most %d tokens back (Clone it to keep older states)", len(many), automaton.RestoreWindow), func() { long.Restore(1) })
	long.Restore(len(many) - automaton.RestoreWindow)
	assert.Equal(t, len(many)-automaton.RestoreWindow, long.Snapshot())
}

func TestForcedBytes(t *testing.T) {
	v := fixture.New().Vocab()
	a := bindGBNF(t, v, `root ::= "{\"name\": \"" [a-z]+ "\", \"age\": " [0-9]+ "}"`)
	m := a.NewMatcher()
	assert.Equal(t, `{"name": "`, string(m.Forced()))
	assert.Equal(t, 0, m.Snapshot(), "Forced leaves the matcher as it was")
	for _, b := range []byte(`{"name": "bo`) {
		require.NoError(t, m.Advance(fixture.Raw(b)))
	}
	assert.Empty(t, m.Forced(), "inside the name anything may follow")
	require.NoError(t, m.Advance(fixture.Raw('"')))
	assert.Equal(t, `, "age": `, string(m.Forced()))
}

func TestDeepNesting(t *testing.T) {
	v := fixture.New().Vocab()
	a := bindGBNF(t, v, `root ::= "[" (root ("," root)*)? "]"`)
	m := a.NewMatcher()
	const depth = 3000
	for range depth {
		require.NoError(t, m.Advance(fixture.Raw('[')))
	}
	assert.False(t, m.CanEnd())
	for range depth {
		require.NoError(t, m.Advance(fixture.Raw(']')))
	}
	assert.True(t, m.CanEnd())
	t.Logf("state after %d levels: %d bytes", depth, m.StateBytes())
}

// TestTokenSetsSharedAndBounded: a bitset over the vocabulary per token
// terminal is 16 KB on Llama-3's; terminals of one set share one, and
// a grammar whose distinct sets would take more than 64 MB is refused
// when bound, naming why.
func TestTokenSetsSharedAndBounded(t *testing.T) {
	v := llama3Vocab(t)
	trie := automaton.NewTrie(v)
	same := "root ::=" + strings.Repeat(" <|reserved_special_token_250|> <[1000]>", 2000)
	a, err := automaton.New(mustCompile(t, same), v, trie)
	require.NoError(t, err)
	assert.Less(t, a.CacheBytes(), int64(64<<10), "4000 terminals of two sets take two bitsets")

	var distinct strings.Builder
	distinct.WriteString("root ::= ")
	for id := range 5000 {
		if id > 0 {
			distinct.WriteString(" | ")
		}
		fmt.Fprintf(&distinct, "<[%d]>", 100+id)
	}
	_, err = automaton.New(mustCompile(t, distinct.String()), v, trie)
	assert.ErrorContains(t, err, "more than 4185 different sets of tokens, which take more than 64 MB over this vocabulary of 128256 tokens")
}
