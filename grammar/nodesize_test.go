package grammar

import (
	"math"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestNodeSize: a Node is 64 bytes, one cache line, which holds all
// that the compiler's walks read of a sequence, an alternation, a
// repetition or a reference; a leaf's text and any node's position are
// behind Leaf. A field more (or wider) costs the largest schemas'
// compiles about 1% for every 8 bytes.
func TestNodeSize(t *testing.T) {
	assert.Equal(t, uintptr(64), unsafe.Sizeof(Node{}))
}

// TestRepeatBoundPastInt32: a count past what a Node holds is refused as
// too large, as it was, not wrapped to a small one.
func TestRepeatBoundPastInt32(t *testing.T) {
	for _, b := range [][2]int{{0, 1 << 32}, {1<<32 + 2, -1}, {1 << 40, 1 << 40}} {
		n := Repeat(Lit("a"), b[0], b[1])
		_, err := Compile(&Grammar{Start: "root", Rules: []Rule{{Name: "root", Body: n}}})
		assert.ErrorIs(t, err, ErrTooLarge, "{%d,%d}", b[0], b[1])
	}
	assert.Equal(t, int32(-5), RepeatBound(-5))
	assert.Equal(t, int32(math.MinInt32), RepeatBound(-1<<40))
	assert.Equal(t, int32(1000), RepeatBound(1000))
	// A bad bound is reported as the caller wrote it.
	_, err := Compile(&Grammar{Start: "root", Rules: []Rule{{Name: "root", Body: Repeat(Lit("ab"), -5, 3)}}})
	assert.ErrorContains(t, err, "bad repetition {-5,3}")
}

// TestTokenNodeWithoutSet: an OpToken node built without its set dumps
// as the empty set and is refused by Compile, without a panic.
func TestTokenNodeWithoutSet(t *testing.T) {
	n := &Node{Op: OpToken}
	assert.Equal(t, "token{}", n.String())
	_, err := Compile(&Grammar{Start: "root", Rules: []Rule{{Name: "root", Body: n}}})
	assert.ErrorContains(t, err, "empty token set")
}
