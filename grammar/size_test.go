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
		{"bytes", &Node{Op: OpBytes, Bytes: []byte("abc")}, 3},
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
