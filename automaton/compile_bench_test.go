package automaton_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/gbnf"
	"github.com/reins-go/reins/internal/shared"
)

// BenchmarkCompileSharedGrammars measures parse + compile + binding to
// the Llama-3 vocabulary for each grammar of ../shared/gbnf, beyond the
// per-vocabulary token trie (built once, outside the loop).
func BenchmarkCompileSharedGrammars(b *testing.B) {
	v := llama3Vocab(b)
	trie := automaton.NewTrie(v)
	files, _ := filepath.Glob(filepath.Join(shared.Path(b, "gbnf"), "*.gbnf"))
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(f), func(b *testing.B) {
			for b.Loop() {
				g, err := gbnf.Parse(f, string(src))
				if err != nil {
					b.Fatal(err)
				}
				p, err := grammar.Compile(g)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := automaton.New(p, v, trie); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTokenTrieLlama3 is the per-vocabulary work: building the
// token trie of the 128,256-token Llama-3 vocabulary.
func BenchmarkTokenTrieLlama3(b *testing.B) {
	v := llama3Vocab(b)
	for b.Loop() {
		automaton.NewTrie(v)
	}
}
