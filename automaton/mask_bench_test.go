package automaton_test

import (
	"os"
	"testing"

	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/internal/shared"
	"github.com/reins-go/reins/vocab"
)

// llama3Vocab loads Llama-3's vocabulary from ../shared (skipping,
// loudly, where it is missing).
func llama3Vocab(tb testing.TB) *vocab.Vocab {
	tb.Helper()
	v, err := vocab.Load(shared.Path(tb, "vocab/ggml-vocab-llama-bpe.gguf"))
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// jsonLlama3 returns json.gbnf bound to the Llama-3 vocabulary.
func jsonLlama3(b *testing.B) (*vocab.Vocab, *automaton.Automaton) {
	v := llama3Vocab(b)
	src, err := os.ReadFile(shared.Path(b, "gbnf/json.gbnf"))
	if err != nil {
		b.Fatal(err)
	}
	return v, bindGBNF(b, v, string(src))
}

func BenchmarkMaskJSONLlama3(b *testing.B) {
	v, a := jsonLlama3(b)
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	for _, pos := range []struct{ name, prefix string }{{"start", ""}, {"between-keys", `{"a": 1, `}, {"in-string", `{"abc`}, {"in-number", `{"a": 12`}} {
		b.Run(pos.name, func(b *testing.B) {
			m := a.NewMatcher()
			for i := 0; i < len(pos.prefix); i++ {
				if !m.Parser().Push(pos.prefix[i]) {
					b.Fatalf("prefix %q refused", pos.prefix)
				}
			}
			m.FillMask(mask) // the first mask of a state fills the cache
			b.ReportAllocs()
			for b.Loop() {
				m.FillMask(mask)
			}
		})
	}
}

// greedyTokens splits doc into the vocabulary's longest normal tokens
// that fit, left to right (no tokenizer is needed to exercise a walk).
func greedyTokens(v *vocab.Vocab, doc string) []int {
	var toks []int
	for rest := []byte(doc); len(rest) > 0; {
		best, bestLen := -1, 0
		for id := range v.Len() {
			bs := v.Bytes(id)
			if v.Kind(id) == vocab.KindNormal && len(bs) > bestLen && len(bs) <= len(rest) && string(rest[:len(bs)]) == string(bs) {
				best, bestLen = id, len(bs)
			}
		}
		toks = append(toks, best)
		rest = rest[bestLen:]
	}
	return toks
}

// BenchmarkColdWalkJSONLlama3 walks a JSON document token by token on a
// new automaton each time, so that every state's mask is computed: the
// cost MaskBench sees, where a schema's few test instances visit most
// states once.
func BenchmarkColdWalkJSONLlama3(b *testing.B) {
	v, a := jsonLlama3(b)
	toks := greedyTokens(v, `{"name": "reins", "tags": ["go", "llm", "grammar"], "size": {"w": 12, "h": 3.5e2}, "ok": true, "nested": {"a": {"b": {"c": [1, 2, 3]}}}, "text": "The quick brown fox jumps over the lazy dog."}`)
	prog, trie := a.Prog(), a.Trie()
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	b.ReportMetric(float64(len(toks)), "tokens/op")
	for b.Loop() {
		a, err := automaton.New(prog, v, trie)
		if err != nil {
			b.Fatal(err)
		}
		m := a.NewMatcher()
		for _, tok := range toks {
			m.FillMask(mask)
			if err := m.Advance(tok); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkWalkJSONLlama3 walks a JSON document token by token, a mask
// and an Advance per token, with a reused matcher: in steady state it
// allocates nothing.
func BenchmarkWalkJSONLlama3(b *testing.B) {
	v, a := jsonLlama3(b)
	doc := `{"name": "reins", "tags": ["go", "llm", "grammar"], "size": {"w": 12, "h": 3.5e2}, "ok": true, "nested": {"a": {"b": {"c": [1, 2, 3]}}}}`
	for range 5 {
		doc = doc[:len(doc)-1] + `, "more": ` + doc + `}`
	}
	toks := greedyTokens(v, doc)
	m := a.NewMatcher()
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	walk := func() {
		m.Reset()
		for _, tok := range toks {
			m.FillMask(mask)
			if err := m.Advance(tok); err != nil {
				b.Fatal(err)
			}
		}
	}
	walk() // fill the state cache and grow buffers
	walk()
	b.ReportAllocs()
	b.ReportMetric(float64(len(toks)), "tokens/op")
	for b.Loop() {
		walk()
	}
}
