package automaton_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/gbnf"
	"github.com/reins-go/reins/grammar/jsonschema"
	"github.com/reins-go/reins/internal/pyjson"
	"github.com/reins-go/reins/internal/shared"
	"github.com/reins-go/reins/vocab"
)

// walkGrammar is a grammar for the walks of TestShortcutsMatchPlain,
// with texts they mostly follow (a schema's test instances).
type walkGrammar struct {
	name   string
	prog   *grammar.Prog
	guides []string
}

// walkGrammars returns the shared GBNF examples and every step-th
// schema of the MaskBench development set that compiles.
func walkGrammars(t testing.TB, step int) []walkGrammar {
	var gs []walkGrammar
	files, _ := filepath.Glob(filepath.Join(shared.Path(t, "gbnf"), "*.gbnf"))
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		g, err := gbnf.Parse(f, string(src))
		require.NoError(t, err)
		p, err := grammar.Compile(g)
		require.NoError(t, err)
		gs = append(gs, walkGrammar{name: filepath.Base(f), prog: p})
	}
	files, _ = filepath.Glob(filepath.Join(shared.Path(t, "maskbench-dev"), "*.json"))
	slices.Sort(files)
	for i := 0; i < len(files); i += step {
		raw, err := os.ReadFile(files[i])
		require.NoError(t, err)
		var mb struct {
			Schema json.RawMessage `json:"schema"`
			Tests  []struct {
				Data json.RawMessage `json:"data"`
			} `json:"tests"`
		}
		if json.Unmarshal(raw, &mb) != nil {
			continue
		}
		g, err := jsonschema.Compile(mb.Schema, jsonschema.Options{})
		if err != nil {
			continue
		}
		p, err := grammar.Compile(g)
		if err != nil {
			continue
		}
		wg := walkGrammar{name: filepath.Base(files[i]), prog: p}
		for _, test := range mb.Tests {
			if s, err := pyjson.Dumps(test.Data); err == nil {
				wg.guides = append(wg.guides, string(s))
			}
		}
		gs = append(gs, wg)
	}
	return gs
}

// shortcutWalks drives matchers of a along walks that mostly follow a
// guide text, with Reset, Restore and Clone along the way, checks at
// every step that Advance agrees with the mask on a few tokens, calls
// check (when set) with the matcher and its mask, and returns the
// masks and tokens of the walks, in order.
func shortcutWalks(t testing.TB, v *vocab.Vocab, a *automaton.Automaton, wg walkGrammar, seed uint64, walks, steps int, check func(m *automaton.Matcher, mask []uint32)) [][]uint32 {
	rng := rand.New(rand.NewPCG(seed, 7))
	var trace [][]uint32
	m := a.NewMatcher()
	for w := range walks {
		if rng.IntN(3) > 0 {
			m.Reset()
		} else {
			m = a.NewMatcher()
		}
		guide, pos := "", 0
		if len(wg.guides) > 0 && rng.IntN(5) > 0 {
			guide = wg.guides[rng.IntN(len(wg.guides))]
		}
		for s := range steps {
			mask := make([]uint32, automaton.MaskWords(v.Len()))
			if err := m.FillMask(mask); err != nil {
				t.Errorf("%s walk %d step %d: %v", wg.name, w, s, err)
				break
			}
			trace = append(trace, mask)
			if check != nil {
				check(m, mask)
			}
			var ok []int
			for tok := range v.Len() {
				if allowed(mask, tok) {
					ok = append(ok, tok)
				}
			}
			probe := []int{rng.IntN(v.Len()), rng.IntN(v.Len())}
			if len(ok) > 0 {
				probe = append(probe, ok[rng.IntN(len(ok))])
			}
			for _, tok := range probe {
				mark := m.Snapshot()
				err := m.Advance(tok)
				if (err == nil) != allowed(mask, tok) {
					t.Errorf("%s walk %d step %d: token %d %q: mask %v, Advance %v", wg.name, w, s, tok, v.Bytes(tok), allowed(mask, tok), err)
				}
				if err == nil {
					m.Restore(mark)
				}
			}
			if len(ok) == 0 {
				break
			}
			// The next token: mostly the longest that follows the guide.
			tok := -1
			if guide != "" && rng.IntN(10) > 0 {
				best := 0
				for _, c := range ok {
					b := v.Bytes(c)
					if len(b) > best && !v.IsEOG(c) && pos+len(b) <= len(guide) && guide[pos:pos+len(b)] == string(b) {
						tok, best = c, len(b)
					}
				}
			}
			if tok < 0 {
				guide = ""
				tok = ok[rng.IntN(len(ok))]
			}
			mark := m.Snapshot()
			if err := m.Advance(tok); err != nil {
				t.Errorf("%s walk %d step %d: allowed token %d refused: %v", wg.name, w, s, tok, err)
				break
			}
			pos += len(v.Bytes(tok))
			trace = append(trace, []uint32{uint32(tok)})
			switch r := rng.IntN(40); {
			case r == 0 && m.Snapshot() > 0:
				back := 1 + rng.IntN(min(m.Snapshot(), automaton.RestoreWindow))
				m.Restore(m.Snapshot() - back)
				guide = ""
			case r == 1:
				m = m.Clone()
			case r == 2: // back one token, and the same token again
				m.Restore(mark)
				if err := m.Advance(tok); err != nil {
					t.Errorf("%s: token %d refused again: %v", wg.name, tok, err)
				}
			}
			if v.IsEOG(tok) {
				break
			}
		}
	}
	return trace
}

// TestShortcutsMatchPlain: along walks over the GBNF examples and a
// sample of the MaskBench schemas, every mask a matcher fills with its
// shortcuts (the last step's mask and tokens, the automaton's listings,
// shared bitsets) equals a clone's, which has no last step, and a Plain
// automaton's in the same state; Advance agrees with the masks.
func TestShortcutsMatchPlain(t *testing.T) {
	v := llama3Vocab(t)
	trie := automaton.NewTrie(v)
	other := make([]uint32, automaton.MaskWords(v.Len()))
	for _, wg := range walkGrammars(t, 300) {
		a, err := automaton.New(wg.prog, v, trie)
		require.NoError(t, err)
		ref, err := automaton.New(wg.prog, v, trie)
		require.NoError(t, err)
		ref.Plain()
		shortcutWalks(t, v, a, wg, 1, 6, 40, func(m *automaton.Matcher, mask []uint32) {
			require.NoError(t, m.Clone().FillMask(other))
			if !slices.Equal(mask, other) {
				t.Errorf("%s: a clone's mask differs", wg.name)
			}
			r := ref.NewMatcher()
			r.Parser().CopyFrom(m.Parser())
			require.NoError(t, r.FillMask(other))
			if !slices.Equal(mask, other) {
				t.Errorf("%s: the Plain automaton's mask differs", wg.name)
			}
		})
	}
}

// TestShortcutsConcurrent: matchers of one automaton walking on several
// goroutines at once fill the masks a walk alone on an automaton of its
// own fills (run with -race).
func TestShortcutsConcurrent(t *testing.T) {
	v := llama3Vocab(t)
	trie := automaton.NewTrie(v)
	const n = 4
	for _, wg := range walkGrammars(t, 1600) {
		a, err := automaton.New(wg.prog, v, trie)
		require.NoError(t, err)
		var done sync.WaitGroup
		got := make([][][]uint32, n)
		for i := range n {
			done.Add(1)
			go func() {
				defer done.Done()
				got[i] = shortcutWalks(t, v, a, wg, uint64(i%2), 3, 25, nil)
			}()
		}
		done.Wait()
		for i := range n {
			alone, err := automaton.New(wg.prog, v, trie)
			require.NoError(t, err)
			want := shortcutWalks(t, v, alone, wg, uint64(i%2), 3, 25, nil)
			if !slices.EqualFunc(want, got[i], slices.Equal) {
				t.Errorf("%s: goroutine %d's walk differs from a walk alone", wg.name, i)
			}
		}
	}
}
