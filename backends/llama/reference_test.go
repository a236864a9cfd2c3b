package llama

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/internal/fixture"
)

// TestReferenceEngineBounds checks that grammars and schemas nested
// deeper than llama.cpp's recursive parsers survive are refused before
// they reach it (100,000 nested groups and 10,000 nested arrays crash
// it), and that what is within the bounds works.
func TestReferenceEngineBounds(t *testing.T) {
	r := NewReferenceVocab(fixture.New().Vocab())
	nested := func(n int) string { return "root ::= " + strings.Repeat("(", n) + `"a"` + strings.Repeat(")", n) }
	g, err := r.Grammar(nested(MaxReferenceNesting))
	require.NoError(t, err)
	g.Close()
	_, err = r.Grammar(nested(100_000))
	assert.ErrorContains(t, err, "grammar nested 100000 deep: llama.cpp's engine takes at most 1000 levels")
	// Parentheses in literals, classes and comments do not count.
	g, err = r.Grammar("root ::= \"((((\" [(] x # ((((\nx ::= \"\\\"(\"")
	require.NoError(t, err)
	g.Close()
	assert.Equal(t, 0, gbnfNesting(`root ::= "(((\"(((" [(((\]] # (((`))

	schema := func(n int) []byte {
		return []byte(strings.Repeat(`{"type":"array","items":`, n) + `{"type":"string","description":"{[{[ \" ]]"}` + strings.Repeat("}", n))
	}
	_, err = SchemaToGrammar(schema(20))
	require.NoError(t, err)
	_, err = SchemaToGrammar(schema(10_000))
	assert.ErrorContains(t, err, "schema nested 10001 deep")
	// Nested arrays name their rules root-item-item-...: the grammar of
	// 999 levels outgrows the buffer ollama's binding copies it into, and
	// a cut grammar is refused rather than used.
	_, err = SchemaToGrammar(schema(MaxReferenceNesting - 1))
	assert.ErrorContains(t, err, "does not fit ollama's buffer")
	// A constant nested as deep as the bound is converted whole.
	src, err := SchemaToGrammar([]byte(`{"const":` + strings.Repeat("[", MaxReferenceNesting-1) + strings.Repeat("]", MaxReferenceNesting-1) + `}`))
	require.NoError(t, err)
	assert.Contains(t, src, strings.Repeat("[", MaxReferenceNesting-1))
	_, err = SchemaToGrammar([]byte(`"` + strings.Repeat("x", MaxReferenceSource) + `"`))
	assert.ErrorContains(t, err, "llama.cpp's engine takes at most 8388608")
}

// TestReferenceAcceptRefusesDisallowedTokens: llama.cpp aborts on a
// token its grammar does not allow; Accept returns an error instead.
func TestReferenceAcceptRefusesDisallowedTokens(t *testing.T) {
	v := fixture.New().Vocab()
	g, err := NewReferenceVocab(v).Grammar(`root ::= "a" "b"`)
	require.NoError(t, err)
	defer g.Close()
	a, b := fixture.Raw('a'), fixture.Raw('b')
	assert.True(t, g.Allows(a))
	assert.False(t, g.Allows(b))
	assert.ErrorContains(t, g.Accept(b), "does not allow token")
	require.NoError(t, g.Accept(a))
	assert.ErrorContains(t, g.Accept(a), "does not allow token", "the mask is recomputed after each token")
	require.NoError(t, g.Accept(b))
	mask := make([]uint32, (v.Len()+31)/32)
	g.FillMask(mask)
	assert.False(t, g.Allows(a))
	assert.False(t, g.Allows(-1))
	assert.False(t, g.Allows(v.Len()))
}
