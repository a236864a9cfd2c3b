package earley

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/grammar"
)

// compileRoot compiles the grammar whose start rule root has body, with
// rule "w" ::= [a-c]+ beside it for bodies to refer to.
func compileRoot(t *testing.T, body *grammar.Node) *grammar.Prog {
	t.Helper()
	p, err := grammar.Compile(&grammar.Grammar{Start: "root", Rules: []grammar.Rule{
		{Name: "root", Body: body},
		{Name: "w", Body: grammar.Repeat(grammar.Class('a', 'c'), 1, -1)},
	}})
	require.NoError(t, err)
	return p
}

// TestLiteralAlternationsShareBytes checks that an alternation of
// literals compiles as one trie: the same language as a branch per
// literal (each literal wrapped in a sequence, which the trie leaves
// alone), in a smaller program whose parser holds fewer items.
func TestLiteralAlternationsShareBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []rune{'a', 'b', 'c', '"', 'é', '€'}
	word := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteRune(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	for trial := range 400 {
		// Literals that share prefixes, are prefixes of one another,
		// repeat, or are empty; a non-literal branch now and then; and a
		// continuation after the alternation.
		var lits []string
		for range 1 + r.IntN(12) {
			if len(lits) > 0 && r.IntN(3) == 0 {
				lits = append(lits, lits[r.IntN(len(lits))]+word(r.IntN(3)))
			} else {
				lits = append(lits, word(r.IntN(5)))
			}
		}
		var trie, plain []*grammar.Node
		for i, l := range lits {
			var n *grammar.Node
			if i%2 == 0 {
				n = grammar.Lit(l)
			} else {
				n = &grammar.Node{Op: grammar.OpBytes, Leaf: &grammar.Leaf{Bytes: []byte(l)}}
			}
			trie = append(trie, n)
			plain = append(plain, grammar.Seq(n))
		}
		if r.IntN(3) == 0 {
			other := grammar.Seq(grammar.Lit("a"), grammar.Ref("w"))
			trie, plain = append(trie, other), append(plain, other)
		}
		tail := grammar.Lit(word(r.IntN(2)))
		got := compileRoot(t, grammar.Seq(grammar.Alt(trie...), tail))
		want := compileRoot(t, grammar.Seq(grammar.Alt(plain...), tail))
		require.LessOrEqual(t, len(got.Inst), len(want.Inst), "trial %d: the trie is larger", trial)
		var probes []string
		for _, l := range lits {
			probes = append(probes, l, l+string(tail.Runes()), strings.TrimSuffix(l, l[len(l)/2:])+string(tail.Runes()), l+"a"+string(tail.Runes()))
		}
		for range 200 {
			probes = append(probes, word(r.IntN(7)))
		}
		for _, s := range probes {
			require.Equal(t, inLanguage(want, s), inLanguage(got, s), "trial %d, literals %q, tail %q: %q", trial, lits, string(tail.Runes()), s)
		}
	}
}

// TestLiteralTrieItems checks what the trie is for: after the opening
// quote of one of 250 two-letter codes, the parser holds an item per
// first letter, not one per code, and the program is a fraction of a
// branch per code.
func TestLiteralTrieItems(t *testing.T) {
	var trie, plain []*grammar.Node
	for i := range 250 {
		code := fmt.Sprintf("%q", string(rune('A'+i/10))+string(rune('A'+i%10)))
		trie = append(trie, grammar.Lit(code))
		plain = append(plain, grammar.Seq(grammar.Lit(code)))
	}
	got := compileRoot(t, grammar.Alt(trie...))
	want := compileRoot(t, grammar.Alt(plain...))
	assert.Less(t, len(got.Inst), len(want.Inst)/4, "instructions")
	items := func(p *grammar.Prog) int {
		ps := NewParser(p)
		require.True(t, ps.Push('"'))
		return len(ps.set(ps.top()))
	}
	assert.LessOrEqual(t, items(got), 26, "items after the quote, with the trie")
	assert.GreaterOrEqual(t, items(want), 250, "items after the quote, a branch per code")
	assert.True(t, inLanguage(got, `"XJ"`))
	assert.False(t, inLanguage(got, `"ZA"`))
}

// TestLiteralTrieBadCodePoint checks that a literal the trie holds is
// still checked: a code point UTF-8 cannot encode is an error.
func TestLiteralTrieBadCodePoint(t *testing.T) {
	bad := &grammar.Node{Op: grammar.OpLit, Leaf: &grammar.Leaf{Runes: []rune{'a', 0xD800}}}
	_, err := grammar.Compile(&grammar.Grammar{Start: "root", Rules: []grammar.Rule{
		{Name: "root", Body: grammar.Alt(grammar.Lit("ab"), bad)},
	}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "U+D800")
}

// TestLiteralTrieClassKeys checks that two trie nodes with different
// rests never share a class: before, a node where a literal ends and one
// where none does, whose first child is the byte 0x01 and whose child's
// class needs two varint bytes, wrote the same key ("a" and "b" below,
// with some 195 classes from the long literal), and "a" was accepted.
func TestLiteralTrieClassKeys(t *testing.T) {
	src := `root ::= "b" | "bé" | "bĄ" | "aĄ" | "a\x01x" | "zé" | "c` + strings.Repeat("y", 190) + `"`
	p := compileGBNF(t, src)
	for s, want := range map[string]bool{"a": false, "a\x01x": true, "b": true, "bé": true, "aĄ": true, "a\x01": false, "c" + strings.Repeat("y", 190): true} {
		assert.Equal(t, want, inLanguage(p, s), "%q", s)
	}
}
