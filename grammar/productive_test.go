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

// TestProductivityJudgesACallerOnce: a rule that refers k times to a
// rule made productive in the worklist is judged once, not k times (each
// judgment walks its body: k of them made it quadratic, 4.5 s at
// k = 32,000). The grammar is ordered so that three passes do not settle
// it: A's last item waits on a chain of ten rules written callee last.
func TestProductivityJudgesACallerOnce(t *testing.T) {
	const k = 2000
	items := make([]*Node, 0, k+1)
	for range k {
		items = append(items, Ref("x"))
	}
	items = append(items, Ref("d10"))
	g := &Grammar{Start: "S", Rules: []Rule{{Name: "S", Body: Ref("A")}, {Name: "A", Body: Seq(items...)}}}
	for i := 1; i <= 10; i++ {
		g.Rules = append(g.Rules, Rule{Name: fmt.Sprint("d", i), Body: Ref(fmt.Sprint("d", i-1))})
	}
	g.Rules = append(g.Rules, Rule{Name: "x", Body: Lit("a")}, Rule{Name: "d0", Body: Lit("z")})
	c := scanned(t, g)
	c.productivity()
	assert.True(t, c.productive[0], "S is productive")
	assert.Positive(t, c.judged, "the worklist ran")
	assert.LessOrEqual(t, c.judged, 2*len(g.Rules), "each caller judged about once per callee made productive, not once per reference")
}
