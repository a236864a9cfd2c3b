package grammar

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProductiveRulesDifferential compares the rules Compile finds
// productive (scan settles some, productivity the others) with a plain
// fixpoint, on random grammars whose rules refer to rules before and
// after them, to themselves, and to rules that derive nothing: the
// unproductive rules are the warnings, or the start rule's error.
func TestProductiveRulesDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 34))
	for round := range 3000 {
		g := randomRefGrammar(rng, 2+rng.IntN(7))
		want := naiveProductive(g)
		p, err := Compile(g)
		if !want[0] {
			require.Error(t, err, "round %d:\n%s", round, g)
			assert.Contains(t, err.Error(), "start rule r0 matches no string", "round %d", round)
			continue
		}
		require.NoError(t, err, "round %d:\n%s", round, g)
		var got []string
		for _, w := range p.Warnings {
			name, _, ok := strings.Cut(strings.TrimPrefix(w, "rule "), " matches no string")
			require.True(t, ok, "warning %q", w)
			got = append(got, name)
		}
		var unproductive []string
		for i, r := range g.Rules {
			if !want[i] {
				unproductive = append(unproductive, r.Name)
			}
		}
		slices.Sort(got)
		slices.Sort(unproductive)
		assert.Equal(t, unproductive, got, "round %d:\n%s", round, g)
	}
}

// randomRefGrammar returns n rules r0..r(n-1), r0 the start, whose
// bodies are small trees of literals, references to any rule, empty
// alternations and repetitions.
func randomRefGrammar(rng *rand.Rand, n int) *Grammar {
	var node func(depth int) *Node
	node = func(depth int) *Node {
		k := rng.IntN(10)
		if depth > 2 {
			k = rng.IntN(4)
		}
		switch k {
		case 0, 1:
			return Ref(fmt.Sprintf("r%d", rng.IntN(n)))
		case 2:
			return Lit("a")
		case 3:
			return Alt() // matches nothing
		case 4, 5:
			return Seq(node(depth+1), node(depth+1))
		case 6, 7:
			return Alt(node(depth+1), node(depth+1))
		case 8:
			return Repeat(node(depth+1), 0, 2)
		default:
			return Repeat(node(depth+1), 1, -1)
		}
	}
	g := &Grammar{Start: "r0"}
	for i := range n {
		g.Rules = append(g.Rules, Rule{Name: fmt.Sprintf("r%d", i), Body: node(0)})
	}
	return g
}

// naiveProductive is the least fixpoint of "derives a string", settled
// by passes over every rule until none changes.
func naiveProductive(g *Grammar) []bool {
	index := map[string]int{}
	for i, r := range g.Rules {
		index[r.Name] = i
	}
	prod := make([]bool, len(g.Rules))
	var derives func(n *Node) bool
	derives = func(n *Node) bool {
		switch n.Op {
		case OpRef:
			return prod[index[n.Name]]
		case OpSeq:
			for _, s := range n.Subs {
				if !derives(s) {
					return false
				}
			}
			return true
		case OpAlt:
			for _, s := range n.Subs {
				if derives(s) {
					return true
				}
			}
			return false
		case OpRepeat:
			return n.Min == 0 || derives(n.Subs[0])
		}
		return true
	}
	for changed := true; changed; {
		changed = false
		for i, r := range g.Rules {
			if !prod[i] && derives(r.Body) {
				prod[i], changed = true, true
			}
		}
	}
	return prod
}
