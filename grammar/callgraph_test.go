package grammar

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCallGraphInlineInto checks the counts and callers after a rule is
// inlined into another: its references replace the caller's to it, k
// times over, added to the caller's own.
func TestCallGraphInlineInto(t *testing.T) {
	// Rule 0 refers to 1 twice and to 2; rule 1 to 2 and twice to 3;
	// rule 3 to 0.
	refs := &ruleRefs{at: []int{0, 3, 6, 6, 7}, to: []int32{1, 2, 1, 3, 2, 3, 0}}
	g := newCallGraph(4, refs)
	assert.Equal(t, 2, g.count(0, 1))
	assert.Equal(t, 1, g.count(0, 2))
	assert.Equal(t, 0, g.count(0, 3))
	assert.Equal(t, []int32{0, 1}, g.in[2])

	g.inlineInto(0, 1, g.count(0, 1))
	assert.Equal(t, []callEdge{{to: 2, n: 1 + 2*1}, {to: 3, n: 2 * 2}}, g.out[0])
	assert.Equal(t, 0, g.count(0, 1))
	assert.Contains(t, g.in[3], int32(0), "0 now refers to 3")
	assert.Equal(t, []int32{0, 1}, g.in[2], "0 referred to 2 already")

	// Inlining 3 into 0 makes 0 refer to itself.
	g.inlineInto(0, 3, g.count(0, 3))
	assert.Equal(t, 4, g.count(0, 0))
	assert.Equal(t, 0, g.count(0, 3))
	assert.Contains(t, g.in[0], int32(0))

	// Counts saturate.
	g.out[0][1] = callEdge{to: 2, n: sizeCap - 1}
	g.inlineInto(3, 0, 3)
	assert.Equal(t, sizeCap, g.count(3, 2))
}
