package jsonschema

import (
	"strings"
	"testing"

	"github.com/reins-go/reins/grammar"
	"github.com/stretchr/testify/assert"
)

// TestNodeSlab checks that nodes made in the slab are apart: growing one
// node's list or changing the caller's slice changes no other node, and
// literals keep their bytes, short and long.
func TestNodeSlab(t *testing.T) {
	var s nodeSlab
	a, b := s.bytes("a"), s.bytes("bc")
	subs := []*grammar.Node{a, b}
	x := s.seq(subs...)
	y := s.alt(b, a)
	subs[0] = b // the caller's slice is copied
	x.Subs = append(x.Subs, a)
	assert.Equal(t, []*grammar.Node{a, b, a}, x.Subs)
	assert.Equal(t, []*grammar.Node{b, a}, y.Subs, "y's list is not overwritten by x's growing")
	long := strings.Repeat("z", 100)
	assert.Equal(t, "a", string(a.Bytes()))
	assert.Equal(t, long, string(s.bytes(long).Bytes()))
	a.Leaf.Bytes = append(a.Bytes(), 'q')
	assert.Equal(t, "bc", string(b.Bytes()), "b's bytes are not overwritten by a's growing")
	var many []*grammar.Node
	for range 200 {
		many = append(many, s.repeat(a, 0, 3))
	}
	z := s.alt(many...)
	assert.Len(t, z.Subs, 200)
	for _, n := range z.Subs {
		assert.Equal(t, grammar.OpRepeat, n.Op)
		assert.Equal(t, []*grammar.Node{a}, n.Subs)
	}
}
