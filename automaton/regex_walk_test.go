package automaton_test

import (
	"math/rand/v2"
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/regex"
	"github.com/reins-go/reins/internal/shared"
	"github.com/reins-go/reins/vocab"
)

func regexAutomaton(t testing.TB, v *vocab.Vocab, trie *automaton.Trie, re string) *automaton.Automaton {
	g, err := regex.Parse(re)
	require.NoError(t, err)
	p, err := grammar.Compile(g)
	require.NoError(t, err)
	a, err := automaton.New(p, v, trie)
	require.NoError(t, err)
	return a
}

// TestRegexTokenWalksMatchGoRegexp walks token masks on the Llama-3
// vocabulary at random; every output that ends (end-of-generation
// allowed and taken) must match the expression in Go's regexp.
func TestRegexTokenWalksMatchGoRegexp(t *testing.T) {
	v := llama3Vocab(t)
	trie := automaton.NewTrie(v)
	patterns := []string{
		`[a-z]+@[a-z]+\.(com|org)`,
		`-?(0|[1-9][0-9]*)(\.[0-9]+)?`,
		`(?i)(yes|no|maybe), because .{1,20}\.`,
		`\p{Greek}{2,5} [日本語]+`,
		`"([^"\\]|\\.)*"`,
	}
	r := rand.New(rand.NewPCG(5, 5))
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	for _, pat := range patterns {
		a := regexAutomaton(t, v, trie, pat)
		goRE := regexp.MustCompile(`^(?:` + pat + `)$`)
		ended := 0
		for range 25 {
			m := a.NewMatcher()
			var text []byte
			for len(text) < 200 {
				require.NoError(t, m.FillMask(mask))
				var allowed []int
				for id := range v.Len() {
					if mask[id/32]&(1<<(id%32)) != 0 {
						allowed = append(allowed, id)
					}
				}
				require.NotEmpty(t, allowed)
				// A random first byte (in the order the allowed tokens
				// first show them), then a random token starting with it:
				// uniform over tokens would almost never pick ".".
				var seen [256]bool
				var firsts []byte
				for _, id := range allowed {
					if b := v.Bytes(id); len(b) > 0 && !v.IsEOG(id) && !seen[b[0]] {
						seen[b[0]] = true
						firsts = append(firsts, b[0])
					}
				}
				tok := v.EOS()
				if len(firsts) > 0 {
					first := firsts[r.IntN(len(firsts))]
					var group []int
					for _, id := range allowed {
						if b := v.Bytes(id); len(b) > 0 && !v.IsEOG(id) && b[0] == first {
							group = append(group, id)
						}
					}
					tok = group[r.IntN(len(group))]
				}
				if m.CanEnd() && r.IntN(3) == 0 {
					tok = v.EOS()
				}
				require.NoError(t, m.Advance(tok))
				if v.IsEOG(tok) {
					assert.True(t, goRE.Match(text), "%s: walk ended on %q", pat, text)
					ended++
					break
				}
				text = append(text, v.Bytes(tok)...)
			}
		}
		assert.Greater(t, ended, 5, "%s: enough walks ended to judge", pat)
	}
}

// TestAutomatonSharedAcrossGoroutines runs matchers of one automaton in
// parallel (run with -race): the state cache is shared, and every
// goroutine sees the same masks as a lone matcher.
func TestAutomatonSharedAcrossGoroutines(t *testing.T) {
	v, err := vocab.Load(shared.Path(t, "vocab/ggml-vocab-gpt-2.gguf"))
	require.NoError(t, err)
	trie := automaton.NewTrie(v)
	a := regexAutomaton(t, v, trie, `\{"[a-z]{1,8}": (true|false|[0-9]{1,4})(, "[a-z]{1,8}": (true|false|[0-9]{1,4})){0,3}\}`)
	text := `{"alpha": 12, "beta": true, "gamma": 7}`
	var toks []int
	for rest := []byte(text); len(rest) > 0; { // one byte per token: every byte has its token
		for id := range v.Len() {
			if b := v.Bytes(id); len(b) == 1 && b[0] == rest[0] && v.Kind(id) == vocab.KindNormal {
				toks = append(toks, id)
				break
			}
		}
		rest = rest[1:]
	}
	masksOf := func() [][]uint32 {
		m := a.NewMatcher()
		var out [][]uint32
		for _, tok := range toks {
			mask := make([]uint32, automaton.MaskWords(v.Len()))
			require.NoError(t, m.FillMask(mask))
			out = append(out, mask)
			require.NoError(t, m.Advance(tok))
		}
		return out
	}
	var wg sync.WaitGroup
	results := make([][][]uint32, 4)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = masksOf()
		}()
	}
	wg.Wait()
	want := masksOf()
	for i := range results {
		assert.Equal(t, want, results[i], "goroutine %d", i)
	}
}
