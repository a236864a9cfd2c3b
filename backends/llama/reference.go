package llama

import (
	"errors"
	"math"

	"github.com/ollama/ollama/llama"

	"github.com/reins-go/reins/vocab"
)

// ReferenceVocab is a reins vocabulary as llama.cpp's own grammar engine
// sees it: token ids, pieces (empty for control, unknown and unused
// tokens, which llama.cpp's engine then refuses) and end-of-generation
// tokens. Its grammars are the engine reins' masks are compared with in
// tests and timed against in benchmarks; reins never generates with
// them. It is not safe for concurrent use.
type ReferenceVocab struct {
	n      int
	ids    []uint32
	pieces []string
	eog    []int32
	data   []llama.TokenData // scratch for FillMask
}

// NewReferenceVocab describes v to llama.cpp's grammar engine.
func NewReferenceVocab(v *vocab.Vocab) *ReferenceVocab {
	r := &ReferenceVocab{n: v.Len(), ids: make([]uint32, v.Len()), pieces: make([]string, v.Len()), data: make([]llama.TokenData, v.Len())}
	for id := range v.Len() {
		r.ids[id] = uint32(id)
		if k := v.Kind(id); !k.Special() && k != vocab.KindUnused {
			r.pieces[id] = string(v.Bytes(id))
		}
	}
	for _, id := range v.EOG() {
		r.eog = append(r.eog, int32(id))
	}
	return r
}

// SchemaToGrammar is llama.cpp's json_schema_to_grammar: the GBNF
// grammar llama.cpp derives from a JSON Schema.
func SchemaToGrammar(schema []byte) (string, error) {
	g := llama.SchemaToGrammar(schema)
	if g == nil {
		return "", errors.New("llama.cpp's json_schema_to_grammar refused the schema")
	}
	return string(g), nil
}

// ReferenceGrammar is one GBNF grammar in llama.cpp's grammar engine,
// at one position of one output.
type ReferenceGrammar struct {
	r   *ReferenceVocab
	src string
	g   *llama.Grammar
}

// Grammar starts llama.cpp's engine on a GBNF grammar.
func (r *ReferenceVocab) Grammar(gbnf string) (*ReferenceGrammar, error) {
	g := &ReferenceGrammar{r: r, src: gbnf}
	return g, g.Reset()
}

// Reset returns to the start of the grammar.
func (g *ReferenceGrammar) Reset() error {
	g.Close()
	g.g = llama.NewGrammar(g.src, g.r.ids, g.r.pieces, g.r.eog)
	if g.g == nil {
		return errors.New("llama.cpp's grammar engine refused the grammar")
	}
	return nil
}

// FillMask sets in mask the tokens llama.cpp's engine allows next.
func (g *ReferenceGrammar) FillMask(mask []uint32) {
	data := g.r.data
	for i := range data {
		data[i] = llama.TokenData{ID: int32(i)}
	}
	g.g.Apply(data)
	clear(mask)
	for i, d := range data {
		if !math.IsInf(float64(d.Logit), -1) {
			mask[i/32] |= 1 << (i % 32)
		}
	}
}

// Accept advances by a token the engine allows: llama.cpp aborts the
// process on any other, so check with FillMask or Allows first.
func (g *ReferenceGrammar) Accept(tok int) { g.g.Accept(int32(tok)) }

// Close frees the engine's state. It is safe to call more than once.
func (g *ReferenceGrammar) Close() {
	if g.g != nil {
		g.g.Free()
		g.g = nil
	}
}
