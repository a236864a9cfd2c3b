package automaton_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/vocab"
)

// TestExactBoundMasks walks strings to their maxLength, where a state
// absorbs exactly the plain text that fits, and checks every mask
// against the parser token by token: the plain-text tokens taken whole
// from the bound's set, the rest walked.
func TestExactBoundMasks(t *testing.T) {
	v := llama3Vocab(t)
	for _, tc := range []struct {
		name, src, text string
		exact           bool // some state takes the exact bound's tokens
	}{
		{"json string", `root ::= "\"" char{0,24} "\"" [0-9]?` + "\n" + `char ::= [^"\\\x00-\x1F] | "\\" ["\\/bfnrt]`, `"over the lazy dog, é ok"7`, true},
		{"then more", `root ::= "{\"a\":\"" [^"\\]{2,12} "\",\"b\":" [0-9]+ "}"`, `{"a":"hello world","b":12}`, true},
		// Any text of up to 6 characters, then only a-m: not an exact
		// bound, "example" goes on past it.
		{"wider after", `root ::= "\"" [^"\\]{0,6} [a-m]* "\""`, `"example"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := bindGBNF(t, v, tc.src)
			m := a.NewMatcher()
			mask := make([]uint32, automaton.MaskWords(v.Len()))
			toks := greedyTokens(v, tc.text)
			for i, tok := range toks {
				if i >= len(toks)-8 || i < 3 { // near the bound and at the start: each mask against the parser
					checkTextTokens(t, m, v, mask)
				}
				require.NoError(t, m.Advance(tok))
			}
			checkTextTokens(t, m, v, mask)
			assert.True(t, m.CanEnd())
			if tc.exact {
				assert.Positive(t, a.ExactStates(), "states inside the bounded string took the exact bound's tokens")
			}
		})
	}
}

// checkTextTokens checks that the mask allows exactly the text tokens
// whose bytes the matcher's parser accepts from where it stands.
func checkTextTokens(t *testing.T, m *automaton.Matcher, v *vocab.Vocab, mask []uint32) {
	t.Helper()
	require.NoError(t, m.FillMask(mask))
	p := m.Parser()
	for tok := range v.Len() {
		b := v.Bytes(tok)
		if k := v.Kind(tok); k.Special() || k == vocab.KindUnused || len(b) == 0 {
			continue
		}
		n := 0
		for n < len(b) && p.Push(b[n]) {
			n++
		}
		p.Pop(n)
		require.Equal(t, n == len(b), allowed(mask, tok), "token %d %q", tok, b)
	}
}
