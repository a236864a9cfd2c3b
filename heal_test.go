package reins

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHealLetsTheModelJoinTheBoundary: a prompt that ends in a space
// would force the output after a lone space token; healed, the output
// spells the space again and may take a token that starts with it. The
// bigram fixture merges " t" and " the": after "The cat sat on" + " ",
// unhealed generation cannot use them, healed generation does.
func TestHealLetsTheModelJoinTheBoundary(t *testing.T) {
	m := Builtin()
	re, err := Regex(`(the|a) [a-z]+`)
	require.NoError(t, err)
	plain, err := m.Generate(context.Background(), "The cat sat on ", Options{Constraint: re, MaxTokens: 8})
	require.NoError(t, err)
	healed, err := m.Generate(context.Background(), "The cat sat on ", Options{Constraint: re, MaxTokens: 8, Heal: true})
	require.NoError(t, err)
	assert.Equal(t, " ", healed.Healed)
	require.NotEmpty(t, healed.Tokens)
	assert.Equal(t, " the", healed.Tokens[0].Token, "the merged token spans the boundary")
	assert.NotEqual(t, " the", plain.Tokens[0].Token)
	require.NoError(t, re.Match([]byte(healed.Text)), "the text after the healed bytes is in the language")
	var spelled string
	for _, tok := range healed.Tokens {
		spelled += tok.Token
	}
	assert.Equal(t, healed.Healed+healed.Text, spelled)
	assert.Greater(t, healed.Logprob(), plain.Logprob(), "the natural tokenization is the likelier one")

	// Without a constraint, healing still joins the boundary.
	free, err := m.Generate(context.Background(), "The cat sat on ", Options{MaxTokens: 4, Heal: true})
	require.NoError(t, err)
	assert.Equal(t, " the", free.Tokens[0].Token)

	// Choose with Heal scores " "+option after "The cat sat on".
	sel, err := m.Choose(context.Background(), "The cat sat on ", []string{"the mat", "a mat"}, ChooseOptions{Heal: true})
	require.NoError(t, err)
	want, err := m.Score(context.Background(), " the mat", ScoreOptions{Context: "The cat sat on"})
	require.NoError(t, err)
	assert.InDelta(t, want.Sum, sel.Options[0].Logprob, 1e-6)

	s := m.Stream(context.Background(), "x ", Options{Heal: true})
	for range s.Tokens() {
	}
	var oe *OptionError
	assert.ErrorAs(t, s.Err(), &oe)
}
