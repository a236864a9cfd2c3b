package llama

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/gbnf"
	"github.com/reins-go/reins/internal/earley"
	"github.com/reins-go/reins/internal/shared"
	"github.com/reins-go/reins/vocab"
)

// llamaGrammar runs llama.cpp's own grammar engine on vocabulary v
// (through ReferenceVocab, which refuses what would crash it). Control,
// unknown and unused tokens get an empty piece, which llama.cpp always
// refuses, as reins refuses them outside token terminals.
func llamaGrammar(t testing.TB, src string, r *ReferenceVocab) *ReferenceGrammar {
	g := llamaGrammarOrNil(src, r)
	require.NotNil(t, g, "llama.cpp refused the grammar")
	return g
}

// llamaGrammarOrNil is llamaGrammar, returning nil when llama.cpp refuses.
func llamaGrammarOrNil(src string, r *ReferenceVocab) *ReferenceGrammar {
	g, err := r.Grammar(src)
	if err != nil {
		return nil
	}
	return g
}

// TestMasksAgreeWithLlamaCpp walks every grammar of ../shared/gbnf at
// random through the tokens reins allows, and compares reins' mask with
// llama.cpp's at every step, on three real vocabularies.
//
// Where the two differ, the test accepts only the cases where llama.cpp
// is known to be wrong, names them, and counts them (explained below);
// any other difference fails.
//
//   - NUL: tokens whose bytes contain NUL, which the C strings of
//     llama.cpp's grammar API cut short: it judges a shorter token than
//     the model would produce.
//   - bad-lead: llama.cpp allows a token that makes the output invalid
//     UTF-8 (a lead byte such as 0xF5, which would encode a code point
//     above U+10FFFF): its partial-character decoder trusts any lead
//     byte. reins refuses: no valid character starts so.
//   - partial-char: reins allows a token that ends inside a multi-byte
//     character which the grammar accepts once completed (" \xe2\x80"
//     before "\x93", an en dash, in list.gbnf); llama.cpp refuses it: its
//     partial-character match against negated classes is too strict.
//   - eog-mid-char: llama.cpp allows end-of-generation while the output
//     ends inside a multi-byte character; reins refuses: that output is
//     not valid UTF-8.
func TestMasksAgreeWithLlamaCpp(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	vocabs := []string{"ggml-vocab-llama-bpe.gguf", "ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"}
	files, _ := filepath.Glob(filepath.Join(shared.Path(t, "gbnf"), "*.gbnf"))
	require.NotEmpty(t, files)
	for vi, vname := range vocabs {
		v, err := vocab.Load(shared.Path(t, filepath.Join("vocab", vname)))
		require.NoError(t, err)
		trie := automaton.NewTrie(v)
		ref := NewReferenceVocab(v)
		for fi, f := range files {
			if fi%len(vocabs) == vi && !shared.Sweep() {
				continue // each grammar on two of the vocabularies; on all with REINS_SWEEP set
			}
			t.Run(vname+"/"+filepath.Base(f), func(t *testing.T) {
				src, err := os.ReadFile(f)
				require.NoError(t, err)
				g, err := gbnf.Parse(filepath.Base(f), string(src))
				require.NoError(t, err)
				p, err := grammar.Compile(g)
				require.NoError(t, err)
				a, err := automaton.New(p, v, trie)
				require.NoError(t, err)
				r := rand.New(rand.NewPCG(uint64(len(f)), uint64(len(vname))))
				excused := map[string]int{}
				defer func() {
					if len(excused) > 0 {
						t.Logf("differences where llama.cpp is wrong: %v", excused)
					}
				}()
				for walk := range 2 {
					lg := llamaGrammar(t, string(src), ref)
					walkAndCompare(t, v, a.NewMatcher(), lg, r, 12, excused, fmt.Sprintf("walk %d", walk))
					lg.Close()
				}
			})
		}
	}
}

// walkAndCompare walks matcher m and llama.cpp's grammar lg together
// for up to steps tokens, picking at random among the tokens reins
// allows, and compares the two masks before every step. A difference
// that a named llama.cpp flaw explains is counted in excused (tokens
// with NUL bytes are skipped: llama.cpp cannot see them); any other
// fails the test. It returns how many masks it compared.
func walkAndCompare(t *testing.T, v *vocab.Vocab, m *automaton.Matcher, lg *ReferenceGrammar, r *rand.Rand, steps int, excused map[string]int, where string) int {
	t.Helper()
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	wantMask := make([]uint32, automaton.MaskWords(v.Len()))
	var text []byte
	for step := range steps {
		require.NoError(t, m.FillMask(mask))
		lg.FillMask(wantMask)
		var allowed []int
		for id := range v.Len() {
			got := mask[id/32]&(1<<(id%32)) != 0
			if got {
				allowed = append(allowed, id)
			}
			want := wantMask[id/32]&(1<<(id%32)) != 0
			if got == want || bytes.IndexByte(v.Bytes(id), 0) >= 0 {
				continue
			}
			if why := llamaCppFlaw(text, v, id, got); why != "" {
				excused[why]++
				continue
			}
			t.Fatalf("%s step %d after %q: token %d %q: reins allows=%v, llama.cpp allows=%v", where, step, text, id, v.Bytes(id), got, want)
		}
		require.NotEmpty(t, allowed)
		tok := allowed[r.IntN(len(allowed))]
		if v.IsEOG(tok) {
			return step + 1
		}
		require.NoError(t, m.Advance(tok))
		if lg.Accept(tok) != nil {
			return step + 1 // an excused difference: llama.cpp cannot follow
		}
		text = append(text, v.Bytes(tok)...)
	}
	return steps
}

// llamaCppFlaw names the known llama.cpp flaw that explains a difference
// on token id after text, where reinsAllows is reins' answer, or "".
func llamaCppFlaw(text []byte, v *vocab.Vocab, id int, reinsAllows bool) string {
	after := append(append([]byte(nil), text...), v.Bytes(id)...)
	switch {
	case v.IsEOG(id) && !reinsAllows && incompleteTail(text) > 0:
		return "eog-mid-char"
	case !reinsAllows && !validUTF8Prefix(after):
		return "bad-lead"
	case reinsAllows && incompleteTail(after) > 0:
		return "partial-char"
	}
	return ""
}

// incompleteTail returns how many trailing bytes of b form an incomplete
// but valid start of a UTF-8 character, or 0.
func incompleteTail(b []byte) int {
	for k := 1; k <= 3 && k <= len(b); k++ {
		tail := b[len(b)-k:]
		if utf8.RuneStart(tail[0]) {
			if !utf8.FullRune(tail) && validStart(tail) {
				return k
			}
			return 0
		}
	}
	return 0
}

// validStart reports whether p can begin a valid UTF-8 encoding.
func validStart(p []byte) bool {
	for c := 0x80; c <= 0xBF; c++ { // try to complete it
		q := append(append([]byte(nil), p...), byte(c))
		if utf8.FullRune(q) {
			if r, size := utf8.DecodeRune(q); r != utf8.RuneError || size > 1 {
				return true
			}
			continue
		}
		if validStart(q) {
			return true
		}
	}
	return false
}

// validUTF8Prefix reports whether b is valid UTF-8 but for an incomplete
// last character that can still be completed.
func validUTF8Prefix(b []byte) bool {
	return utf8.Valid(b[:len(b)-incompleteTail(b)])
}

// randomGrammar writes a random GBNF grammar over a small alphabet with
// multi-byte characters: alternation, sequences, groups, classes (some
// negated), repetitions and references between rules. A reference is
// always preceded in its sequence by a literal, so there is no left
// recursion (which llama.cpp refuses), and only literals and classes are
// repeated: llama.cpp overflows its stack on a repeated group that can be
// empty, such as ("a"?)*, which reins parses (see the grammar tests).
func randomGrammar(r *rand.Rand) string {
	lits := []string{"a", "b", "ab", "é", "日本", " ", "\\n", "c", "{", "}"}
	classes := []string{"[a-c]", "[^a\\n]", "[é-ë]", "[0-9]", "[日本語]", "[^\"\\\\]"}
	reps := []string{"", "", "", "*", "+", "?", "{1,3}", "{2}"}
	nRules := 1 + r.IntN(3)
	var b strings.Builder
	var body func(depth int) string
	body = func(depth int) string {
		var alts []string
		for range 1 + r.IntN(3) {
			var seq []string
			for j := range 1 + r.IntN(3) {
				var item string
				switch k := r.IntN(10); {
				case k < 4:
					item = `"` + lits[r.IntN(len(lits))] + `"` + reps[r.IntN(len(reps))]
				case k < 7:
					item = classes[r.IntN(len(classes))] + reps[r.IntN(len(reps))]
				case k < 8 && depth > 0:
					item = "(" + body(depth-1) + ")"
				case j > 0:
					item = fmt.Sprintf("r%d", r.IntN(nRules))
				default:
					item = `"` + lits[r.IntN(len(lits))] + `"`
				}
				seq = append(seq, item)
			}
			alts = append(alts, strings.Join(seq, " "))
		}
		return strings.Join(alts, " | ")
	}
	fmt.Fprintf(&b, "root ::= r0\n")
	for i := range nRules {
		fmt.Fprintf(&b, "r%d ::= %s\n", i, body(2))
	}
	return b.String()
}

// TestRandomGrammarsAgreeWithLlamaCpp compares masks on random grammars,
// on three vocabularies, along random walks.
func TestRandomGrammarsAgreeWithLlamaCpp(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	for _, vname := range []string{"ggml-vocab-llama-bpe.gguf", "ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"} {
		t.Run(vname, func(t *testing.T) { randomGrammarsAgree(t, vname) })
	}
}

func randomGrammarsAgree(t *testing.T, vname string) {
	v, err := vocab.Load(shared.Path(t, filepath.Join("vocab", vname)))
	require.NoError(t, err)
	trie := automaton.NewTrie(v)
	ref := NewReferenceVocab(v)
	r := rand.New(rand.NewPCG(7, uint64(len(vname))))
	compared, refused := 0, 0
	for i := range 20 {
		src := randomGrammar(r)
		g, err := gbnf.Parse("random.gbnf", src)
		require.NoError(t, err, src)
		p, err := grammar.Compile(g)
		if err != nil {
			continue // e.g. no rule ever ends: nothing to compare
		}
		a, err := automaton.New(p, v, trie)
		require.NoError(t, err)
		lg := llamaGrammarOrNil(src, ref)
		if lg == nil {
			refused++ // left recursion through a nullable prefix: llama.cpp refuses it, reins parses it
			continue
		}
		compared += walkAndCompare(t, v, a.NewMatcher(), lg, r, 8, map[string]int{}, fmt.Sprintf("grammar %d:\n%s", i, src))
		lg.Close()
	}
	t.Logf("%d masks compared; %d grammars refused by llama.cpp", compared, refused)
	require.Greater(t, compared, 60)
}

// TestGeneratedStringsAcceptedTokenByToken generates strings of each
// shared grammar (random walks over bytes that end where the grammar may
// end), tokenizes them with llama.cpp's tokenizer for Llama-3 and
// Llama-2, and checks that the matcher accepts every token and the end.
func TestGeneratedStringsAcceptedTokenByToken(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(shared.Path(t, "gbnf"), "*.gbnf"))
	for _, vname := range []string{"ggml-vocab-llama-bpe.gguf", "ggml-vocab-gpt-2.gguf"} {
		tok, err := LoadTokenizer(shared.Path(t, filepath.Join("vocab", vname)))
		require.NoError(t, err)
		v := tok.Vocab()
		trie := automaton.NewTrie(v)
		for _, f := range files {
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			g, err := gbnf.Parse(filepath.Base(f), string(src))
			require.NoError(t, err)
			p, err := grammar.Compile(g)
			require.NoError(t, err)
			a, err := automaton.New(p, v, trie)
			require.NoError(t, err)
			r := rand.New(rand.NewPCG(uint64(len(src)), 3))
			for n := range 15 {
				s := generate(r, p, 200)
				if s == nil {
					continue
				}
				ids, err := tok.Tokenize(string(s), false)
				require.NoError(t, err)
				require.Equal(t, s, v.Decode(ids), "the tokens spell the string")
				m := a.NewMatcher()
				for i, id := range ids {
					require.NoError(t, m.Advance(id), "%s %s string %d %q: token %d of %d", vname, filepath.Base(f), n, s, i, len(ids))
				}
				require.True(t, m.CanEnd(), "%s %s: %q complete", vname, filepath.Base(f), s)
			}
		}
		tok.Close()
	}
}

// generate walks p's parser at random over bytes and returns a string
// of its language of at most about max bytes, or nil when the walk got
// nowhere.
func generate(r *rand.Rand, p *grammar.Prog, max int) []byte {
	ps := earley.NewParser(p)
	var s []byte
	for len(s) < 4*max {
		if ps.CanEnd() && (len(s) >= max || r.IntN(20) == 0) {
			return s
		}
		next, _ := ps.Next()
		var opts []byte
		for c := 0; c < 256; c++ {
			if next[c>>6]&(1<<(c&63)) != 0 {
				opts = append(opts, byte(c))
			}
		}
		if len(opts) == 0 {
			break
		}
		// Prefer ASCII so that strings look like text and stay short.
		c := opts[r.IntN(len(opts))]
		if c >= 0x80 && r.IntN(4) != 0 {
			for _, o := range opts {
				if o < 0x80 {
					c = o
					break
				}
			}
		}
		ps.Push(c)
		s = append(s, c)
	}
	if ps.CanEnd() {
		return s
	}
	return nil
}
