package decode_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/gbnf"
	"github.com/reins-go/reins/vocab"
)

// bindGBNF compiles a GBNF grammar and binds it to v.
func bindGBNF(t testing.TB, v *vocab.Vocab, src string) *automaton.Automaton {
	t.Helper()
	g, err := gbnf.Parse("test.gbnf", src)
	require.NoError(t, err)
	p, err := grammar.Compile(g)
	require.NoError(t, err)
	a, err := automaton.New(p, v, automaton.NewTrie(v))
	require.NoError(t, err)
	return a
}

// matcherOf is the Options.Constraint of a: a fresh matcher per branch.
func matcherOf(a *automaton.Automaton) func() decode.Constraint {
	return func() decode.Constraint { return a.NewMatcher() }
}
