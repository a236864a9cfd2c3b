package llama

import (
	"errors"
	"fmt"
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

// Bounds on what the reference engine is given: llama.cpp's grammar
// parser and its json_schema_to_grammar recurse once per level of
// nesting and overflow the C stack (a segmentation fault: 100,000
// nested parentheses; a schema of 10,000 nested arrays). Ten times
// below what crashed, and far above any real grammar or schema.
const (
	MaxReferenceNesting = 1000    // nested groups of a grammar, objects and arrays of a schema
	MaxReferenceSource  = 8 << 20 // bytes of a grammar or schema
)

// SchemaToGrammar is llama.cpp's json_schema_to_grammar: the GBNF
// grammar llama.cpp derives from a JSON Schema.
func SchemaToGrammar(schema []byte) (string, error) {
	if err := checkReferenceSource("schema", schema, jsonNesting(schema)); err != nil {
		return "", err
	}
	if err := schemaPatternFault(schema); err != nil {
		return "", fmt.Errorf("llama.cpp's json_schema_to_grammar cannot take the %w", err)
	}
	g := llama.SchemaToGrammar(schema)
	if g == nil {
		return "", errors.New("llama.cpp's json_schema_to_grammar refused the schema")
	}
	// ollama's binding copies the grammar into a buffer of at most
	// grammarRoom bytes less one, and cuts what does not fit.
	if len(g) >= grammarRoom(len(schema))-1 {
		return "", fmt.Errorf("llama.cpp's grammar for the schema does not fit ollama's buffer of %d bytes", grammarRoom(len(schema)))
	}
	return string(g), nil
}

// grammarRoom is the buffer ollama's llama.SchemaToGrammar gives the
// grammar of a schema of n bytes.
func grammarRoom(n int) int { return max(32768, min(1024*1024, n*4)) }

func checkReferenceSource(what string, src []byte, depth int) error {
	switch {
	case len(src) > MaxReferenceSource:
		return fmt.Errorf("%s of %d bytes: llama.cpp's engine takes at most %d", what, len(src), MaxReferenceSource)
	case depth > MaxReferenceNesting:
		return fmt.Errorf("%s nested %d deep: llama.cpp's engine takes at most %d levels (it recurses and overflows its stack)", what, depth, MaxReferenceNesting)
	}
	return nil
}

// jsonNesting returns how deep objects and arrays nest in a JSON text
// (strings skipped).
func jsonNesting(b []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// gbnfNesting returns how deep groups nest in a GBNF grammar (literals,
// character classes and comments skipped).
func gbnfNesting(src string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"', '[':
			end := byte('"')
			if c == '[' {
				end = ']'
			}
			for i++; i < len(src) && src[i] != end; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case '(':
			depth++
			deepest = max(deepest, depth)
		case ')':
			depth--
		}
	}
	return deepest
}

// ReferenceGrammar is one GBNF grammar in llama.cpp's grammar engine,
// at one position of one output.
type ReferenceGrammar struct {
	r       *ReferenceVocab
	src     string
	g       *llama.Grammar
	allowed []uint32 // the mask at this position, when known
	known   bool
}

// Grammar starts llama.cpp's engine on a GBNF grammar.
func (r *ReferenceVocab) Grammar(gbnf string) (*ReferenceGrammar, error) {
	if err := checkReferenceSource("grammar", []byte(gbnf), gbnfNesting(gbnf)); err != nil {
		return nil, err
	}
	g := &ReferenceGrammar{r: r, src: gbnf, allowed: make([]uint32, (r.n+31)/32)}
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
	clear(g.allowed)
	for i, d := range data {
		if !math.IsInf(float64(d.Logit), -1) {
			g.allowed[i/32] |= 1 << (i % 32)
		}
	}
	g.known = true
	copy(mask, g.allowed)
	clear(mask[min(len(mask), len(g.allowed)):])
}

// Allows reports whether the engine allows tok next.
func (g *ReferenceGrammar) Allows(tok int) bool {
	if !g.known {
		g.FillMask(g.allowed)
	}
	return tok >= 0 && tok < g.r.n && g.allowed[tok/32]&(1<<(tok%32)) != 0
}

// Accept advances by tok. A token the engine does not allow here is an
// error, and llama.cpp is not called: it aborts the process on one.
func (g *ReferenceGrammar) Accept(tok int) error {
	if !g.Allows(tok) {
		return fmt.Errorf("llama.cpp's grammar engine does not allow token %d here", tok)
	}
	g.g.Accept(int32(tok))
	g.known = false
	return nil
}

// Close frees the engine's state. It is safe to call more than once.
func (g *ReferenceGrammar) Close() {
	if g.g != nil {
		g.g.Free()
		g.g = nil
	}
	g.known = false
}
