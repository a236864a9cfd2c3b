package decode_test

import (
	"os"
	"testing"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/shared"
)

func BenchmarkMaskJSONLlama3(b *testing.B) {
	v, err := decode.LoadVocab(shared.Path(b, "vocab/ggml-vocab-llama-bpe.gguf"))
	if err != nil {
		b.Fatal(err)
	}
	src, err := os.ReadFile(shared.Path(b, "gbnf/json.gbnf"))
	if err != nil {
		b.Fatal(err)
	}
	a := automaton(b, v, string(src))
	mask := make([]uint32, decode.MaskWords(v.Len()))
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
