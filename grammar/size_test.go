package grammar

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSize checks estimateSize's measure on small trees, and that it bounds the
// instructions Compile emits for them.
func TestSize(t *testing.T) {
	tests := []struct {
		name string
		n    *Node
		want int
	}{
		{"literal", Lit("ab"), 8}, // four per character
		{"bytes", &Node{Op: OpBytes, Leaf: &Leaf{Bytes: []byte("abc")}}, 3},
		{"class", Class('a', 'z', '0', '9'), 8}, // two per range bound
		{"ref", Ref("x"), 1},                    // rules are measured on their own
		{"seq", Seq(Lit("a"), Ref("x")), 1 + 4 + 1},
		{"repeat", Repeat(Class('a', 'z'), 2, 3), 3 * (1 + 4)},
		{"unbounded", Repeat(Lit("a"), 1, -1), 2 * (1 + 4)},
		{"hoisted", Repeat(Lit("abc"), 0, 10), (1 + 12) + 2*10}, // a large body repeated often is a rule
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, estimateSize(tt.n), tt.name)
		g := &Grammar{Start: "root", Rules: []Rule{{Name: "root", Body: tt.n}, {Name: "x", Body: Lit("x")}}}
		p, err := Compile(g)
		require.NoError(t, err, tt.name)
		assert.LessOrEqual(t, len(p.Inst), estimateSize(tt.n)+estimateSize(g.Rules[1].Body)+4, "%s: the program's size is within the estimate", tt.name)
	}
}

// TestSizeShared checks that a shared node counts at each use, and that
// a tree sharing nodes exponentially is measured in time linear in its
// distinct nodes and saturates at MaxInst+1.
func TestSizeShared(t *testing.T) {
	a := Lit("a")
	assert.Equal(t, 1+2*estimateSize(a), estimateSize(Seq(a, a)))
	n := Lit("x")
	for range 64 {
		n = Seq(n, n)
	}
	assert.Equal(t, MaxInst+1, estimateSize(n))
}

// estimateSize returns the number of instructions Compile estimates n compiles
// to, the measure its budget (MaxInst) is checked with: n's unrolled
// size, where a bounded repetition costs its body once per copy (a large
// body repeated often is compiled once, as a rule, at two instructions a
// copy), a literal a byte (four per character of a Lit), a class two per
// range bound, and a reference to a rule one (rules are measured on their
// own). A node shared by several parents counts at each. The result
// saturates at MaxInst+1. The tests check Compile's budget measure
// (nodeSize) with it.
//
// Its work is linear in the tree's size counting shared nodes once.
func estimateSize(n *Node) int {
	z := sizer{budget: sizeSteps}
	if s, ok := z.size(n); ok {
		return s
	}
	z = sizer{memo: map[*Node]int{}}
	s, _ := z.size(n)
	return s
}

// sizeSteps bounds the nodes estimateSize visits walking the tree as it is
// (quick where little is shared) before it measures again with a memo.
const sizeSteps = 1 << 16

// sizer measures nodes for estimateSize: without memo within budget visits,
// else with memo.
type sizer struct {
	memo   map[*Node]int
	budget int
}

// size returns n's size, and false when the budget ran out.
func (z *sizer) size(n *Node) (int, bool) {
	if z.memo != nil {
		if s, ok := z.memo[n]; ok {
			return s, true
		}
	} else if z.budget--; z.budget < 0 {
		return 0, false
	}
	subs := 0
	for _, sub := range n.Subs {
		s, ok := z.size(sub)
		if !ok {
			return 0, false
		}
		subs = satAdd(subs, s)
	}
	s := min(nodeSize(n, subs), MaxInst+1)
	if z.memo != nil {
		z.memo[n] = s
	}
	return s, true
}
