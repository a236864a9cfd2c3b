package automaton_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/grammar/jsonschema"
	"github.com/reins-go/reins/internal/earley"
	"github.com/reins-go/reins/internal/fixture"
	"github.com/reins-go/reins/internal/shared"
)

// fewestTokens finds, by breadth-first search over the tokens each mask
// allows, the fewest tokens after which m's output may end (-1 beyond
// limit). States are told apart by the text so far, which is enough for
// the unambiguous grammars it is used on.
func fewestTokens(t *testing.T, a *automaton.Automaton, m *automaton.Matcher, limit int) int {
	t.Helper()
	v := a.Vocab()
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	type state struct {
		m    *automaton.Matcher
		text string
	}
	level := []state{{m.Clone(), ""}}
	for depth := 0; depth <= limit; depth++ {
		seen := map[string]bool{}
		var next []state
		for _, s := range level {
			if s.m.CanEnd() {
				return depth
			}
			require.NoError(t, s.m.FillMask(mask))
			for tok := range v.Len() {
				if mask[tok/32]&(1<<(tok%32)) == 0 || v.IsEOG(tok) {
					continue
				}
				text := s.text + string(v.Bytes(tok))
				if seen[text] {
					continue
				}
				seen[text] = true
				c := s.m.Clone()
				require.NoError(t, c.Advance(tok))
				next = append(next, state{c, text})
			}
		}
		level = next
	}
	return -1
}

// TestTokensToEndIsFewest compares TokensToEnd with a search for the
// fewest tokens on grammars that run straight through their bytes
// (literals, classes, counted repetitions), where it is exact, along the
// way through a valid output.
func TestTokensToEndIsFewest(t *testing.T) {
	v := fixture.New().Vocab()
	for _, tt := range []struct{ src, walk string }{
		{`root ::= "the cat sat on the mat"`, "the cat sat on the mat"},
		{`root ::= [0-9]{3} "x"`, "123x"},
		{`root ::= "{\"name\":\"" [a-z]{2,3} "\"}"`, `{"name":"then"}`[:11] + `"}`},
		{`root ::= "in the " ("sun" | "river") "."`, "in the river."},
		{`root ::= "he" [a-z] "er"`, "heter"},
	} {
		a := bindGBNF(t, v, tt.src)
		m := a.NewMatcher()
		toks, err := fixture.New().NewBackend().Tokenize(tt.walk, false)
		require.NoError(t, err)
		for i := 0; ; i++ {
			want := fewestTokens(t, a, m, 30)
			assert.Equal(t, want, m.TokensToEnd(), "%s after %d tokens", tt.src, i)
			if i == len(toks) {
				break
			}
			require.NoError(t, m.Advance(toks[i]), "%s token %d", tt.src, i)
		}
	}
}

// TestFillMaskWithin checks, along random walks, that FillMaskWithin
// keeps exactly the allowed tokens after which TokensToEnd fits in the
// budget left, and that it keeps some whenever TokensToEnd fits now.
func TestFillMaskWithin(t *testing.T) {
	v := fixture.New().Vocab()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, src := range []string{fixture.Arithmetic, `root ::= "[" ( root ("," root)* )? "]"`, `root ::= "{\"a\": " ("true" | "[" [0-9]{1,3} "]") ", \"b\": \"" [a-z]* "\"}"`} {
		a := bindGBNF(t, v, src)
		plain := make([]uint32, automaton.MaskWords(v.Len()))
		within := make([]uint32, len(plain))
		for range 30 {
			m := a.NewMatcher()
			for step := 0; step < 25; step++ {
				require.NoError(t, m.FillMask(plain))
				need := m.TokensToEnd()
				for budget := max(1, need-1); budget <= need+3; budget++ {
					require.NoError(t, m.FillMaskWithin(within, budget))
					kept := 0
					for tok := range v.Len() {
						in := within[tok/32]&(1<<(tok%32)) != 0
						if plain[tok/32]&(1<<(tok%32)) == 0 {
							require.False(t, in, "token %d is not even allowed", tok)
							continue
						}
						if v.IsEOG(tok) {
							require.True(t, in, "end-of-generation stays where the output may end")
							continue
						}
						c := m.Clone()
						require.NoError(t, c.Advance(tok))
						assert.Equal(t, c.TokensToEnd() <= budget-1, in, "%s: token %q at budget %d", src, v.Bytes(tok), budget)
						if in {
							kept++
						}
					}
					if need <= budget && need > 0 {
						assert.Positive(t, kept, "%s: the budget %d fits the %d needed, so a token must fit", src, budget, need)
					}
				}
				// Advance by a random allowed token.
				var allowed []int
				for tok := range v.Len() {
					if plain[tok/32]&(1<<(tok%32)) != 0 && !v.IsEOG(tok) {
						allowed = append(allowed, tok)
					}
				}
				if len(allowed) == 0 {
					break
				}
				require.NoError(t, m.Advance(allowed[rng.IntN(len(allowed))]))
			}
		}
	}
}

// TestMatcherAfterPrefix: a matcher past a prefix allows what a matcher
// advanced over the same bytes token by token allows, and a prefix no
// output begins with is an error.
func TestMatcherAfterPrefix(t *testing.T) {
	v := fixture.New().Vocab()
	a := bindGBNF(t, v, `root ::= "{\"a\": " [0-9]+ ", \"b\": \"" [a-z]* "\"}"`)
	prefix := `{"a": 12, "b": "x`
	after, err := a.NewMatcherAfter([]byte(prefix))
	require.NoError(t, err)
	stepped := a.NewMatcher()
	for i := 0; i < len(prefix); i++ {
		require.NoError(t, stepped.Advance(fixture.Raw(prefix[i])))
	}
	m1 := make([]uint32, automaton.MaskWords(v.Len()))
	m2 := make([]uint32, len(m1))
	require.NoError(t, after.FillMask(m1))
	require.NoError(t, stepped.FillMask(m2))
	assert.Equal(t, m2, m1)
	assert.Equal(t, stepped.TokensToEnd(), after.TokensToEnd())
	_, err = a.NewMatcherAfter([]byte(`{"a": x`))
	assert.ErrorContains(t, err, "byte 6")
}

// TestMaskWorkBudget: on an ambiguous grammar, whose parse work grows
// with the cube of the input, a mask fails its step with a budget error
// once the work passes the bound, instead of taking minutes; the failed
// matcher stays failed.
func TestMaskWorkBudget(t *testing.T) {
	v := fixture.New().Vocab()
	a := bindGBNF(t, v, "root ::= x\nx ::= x x | \"a\" | \"\"\n")
	m := a.NewMatcher()
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	var err error
	n := 0
	for ; n < 5000 && err == nil; n++ {
		if err = m.FillMask(mask); err == nil {
			err = m.Advance(fixture.Raw('a'))
		}
	}
	require.Error(t, err, "the work bound stops an ambiguous parse")
	assert.ErrorIs(t, err, earley.ErrWorkBudget)
	t.Logf("stopped after %d tokens: %v", n, err)
	assert.ErrorIs(t, m.FillMask(mask), earley.ErrWorkBudget, "a failed matcher stays failed")
	assert.ErrorIs(t, m.Advance(fixture.Raw('a')), earley.ErrWorkBudget)
	m.Reset()
	require.NoError(t, m.FillMask(mask), "Reset starts over")
}

// TestMaskWorkCutShortNotCached: a mask whose context-dependent walk
// stops at its work bound fails, and leaves nothing in the cache: a new
// matcher in the same state fails as well, instead of taking the tokens
// found before the stop as the whole mask.
func TestMaskWorkCutShortNotCached(t *testing.T) {
	v := llama3Vocab(t)
	src, err := os.ReadFile(shared.Path(t, "gbnf/json.gbnf"))
	require.NoError(t, err)
	a := bindGBNF(t, v, string(src))
	a.Plain() // context-dependent tokens are walked with the parser
	a.SetMaskWork(1)
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	failed := 0
	for _, text := range []string{`{"k": [[`, `{"a": [1`, `{"a": {"b": 1`} {
		for range 2 {
			m := a.NewMatcher()
			for i := range len(text) {
				require.True(t, m.Parser().Push(text[i]))
			}
			if err := m.FillMask(mask); err != nil {
				assert.ErrorIs(t, err, earley.ErrWorkBudget)
				failed++
			}
		}
	}
	assert.Equal(t, 6, failed, "each mask, the second in each state too, passes the bound")
}

// TestFillMaskWithinWorkBounded: a grammar waiting for many token
// terminals at once makes FillMaskWithin's check of every allowed token
// advance the parser over all of them, token after token; that work is
// bounded (by MaskWork and withinWork a token), and past it the step
// fails with ErrWorkBudget (7,000 terminals took 37 s for 50 tokens of
// llama-2-tiny-random). Within the bound the same grammar's check works.
func TestFillMaskWithinWorkBounded(t *testing.T) {
	v := fixture.New().Vocab()
	var src strings.Builder
	src.WriteString("root ::= (")
	for id := range 4000 {
		if id > 0 {
			src.WriteString(" | ")
		}
		fmt.Fprintf(&src, "<[%d]> | !<[%d]>", 3+id%50, 3+id%50+1)
	}
	src.WriteString(")+")
	a := bindGBNF(t, v, src.String())
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	require.NoError(t, a.NewMatcher().FillMaskWithin(mask, 2), "within MaskWork")
	a.SetMaskWork(20000)
	err := a.NewMatcher().FillMaskWithin(mask, 2)
	require.ErrorIs(t, err, earley.ErrWorkBudget)
	assert.ErrorContains(t, err, "units (MaskWork and 4096 a token)")
}

// TestFillMaskWithinOrdinaryWork: an ordinary grammar's check of every
// token near the budget's end stays within the bound on Llama-3's
// vocabulary, even where most tokens are allowed and many rules are open
// at once (a string that may match any of eight patterns took 72M units,
// past MaskWork alone).
func TestFillMaskWithinOrdinaryWork(t *testing.T) {
	v := llama3Vocab(t)
	var pats []string
	for c := 'a'; c < 'a'+8; c++ {
		pats = append(pats, fmt.Sprintf(`{"type": "string", "pattern": "^[^%c]*$"}`, c))
	}
	schema := `{"type": "object", "properties": {"x": {"anyOf": [` + strings.Join(pats, ", ") + `]}}, "required": ["x"], "additionalProperties": false}`
	_, p, err := jsonschema.CompileProg([]byte(schema), jsonschema.Options{})
	require.NoError(t, err)
	a, err := automaton.New(p, v, automaton.NewTrie(v))
	require.NoError(t, err)
	m, err := a.NewMatcherAfter([]byte(`{"x": "`))
	require.NoError(t, err)
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	before := m.Work()
	require.NoError(t, m.FillMaskWithin(mask, 3))
	t.Logf("%d units of work, MaskWork %d", m.Work()-before, automaton.MaskWork)
}

// TestCacheBytesCountsTokenCosts: the token costs TokensToEnd builds,
// two words per instruction, are counted in CacheBytes once built.
func TestCacheBytesCountsTokenCosts(t *testing.T) {
	v := fixture.New().Vocab()
	a := bindGBNF(t, v, `root ::= [a-z]{200} "x"`)
	m := a.NewMatcher()
	m.FillMask(make([]uint32, automaton.MaskWords(v.Len())))
	before := a.CacheBytes()
	m.TokensToEnd()
	assert.GreaterOrEqual(t, a.CacheBytes()-before, int64(8*len(a.Prog().Inst)), "%d bytes before, %d after", before, a.CacheBytes())
}
