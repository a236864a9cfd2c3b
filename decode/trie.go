package decode

import (
	"bytes"
	"slices"
)

// trieNode is one node of a TokenTrie, in depth-first order: the node's
// first child is the next node, and its next sibling is size nodes on.
type trieNode struct {
	b        byte
	depth    uint16 // length of the byte string ending here
	size     uint32 // nodes in this subtree, itself included
	tokStart uint32 // tokens whose bytes end here: trie.toks[tokStart:tokEnd]
	tokEnd   uint32
}

// TokenTrie holds a vocabulary's text tokens (normal, byte and
// user-defined ones) as a flat prefix tree in depth-first order, so a walk
// that refuses a byte skips the whole subtree with one addition. Control,
// unknown and unused tokens are not in it: they have no text to match.
// A TokenTrie is immutable and safe for concurrent use.
type TokenTrie struct {
	nodes []trieNode
	toks  []int32
}

// NewTokenTrie builds the trie of v's text tokens.
func NewTokenTrie(v *Vocab) *TokenTrie {
	var ids []int
	for id := range v.Len() {
		switch v.Kind(id) {
		case KindNormal, KindByte, KindUserDefined:
			if len(v.Bytes(id)) > 0 {
				ids = append(ids, id)
			}
		}
	}
	return newTokenTrie(v, ids)
}

// newTokenTrie builds the trie of the given tokens of v.
func newTokenTrie(v *Vocab, ids []int) *TokenTrie {
	slices.SortFunc(ids, func(a, b int) int {
		if c := bytes.Compare(v.Bytes(a), v.Bytes(b)); c != 0 {
			return c
		}
		return a - b
	})
	t := &TokenTrie{}
	// path[d] is the index of the node at depth d+1 on the current path.
	var path []int
	var prev []byte
	for _, id := range ids {
		b := v.Bytes(id)
		common := 0
		for common < len(b) && common < len(prev) && common < len(path) && b[common] == prev[common] {
			common++
		}
		// Close the nodes beyond the shared prefix.
		for len(path) > common {
			n := path[len(path)-1]
			t.nodes[n].size = uint32(len(t.nodes) - n)
			path = path[:len(path)-1]
		}
		for d := common; d < len(b); d++ {
			path = append(path, len(t.nodes))
			t.nodes = append(t.nodes, trieNode{b: b[d], depth: uint16(d + 1), tokStart: uint32(len(t.toks)), tokEnd: uint32(len(t.toks))})
		}
		last := &t.nodes[path[len(path)-1]]
		if last.tokEnd != uint32(len(t.toks)) { // tokens of a node are contiguous: ids sharing bytes sort together
			panic("decode: trie tokens out of order")
		}
		t.toks = append(t.toks, int32(id))
		last.tokEnd++
		prev = b
	}
	for len(path) > 0 {
		n := path[len(path)-1]
		t.nodes[n].size = uint32(len(t.nodes) - n)
		path = path[:len(path)-1]
	}
	return t
}

// Nodes returns the number of nodes, for sizing and benchmarks.
func (t *TokenTrie) Nodes() int { return len(t.nodes) }

// ByteWalker is what a trie walk drives: the three verbs llguidance's
// token trie uses. Push tries one more byte and reports whether the
// parse can continue with it; Pop undoes the last n pushed bytes.
type ByteWalker interface {
	Push(b byte) bool
	Pop(n int)
}

// Walk calls allow for every token whose whole byte string w accepts,
// and leaves w as it found it. It pushes each trie edge once, and skips
// the subtree of an edge w refuses.
func (t *TokenTrie) Walk(w ByteWalker, allow func(tok int32)) { t.walk(w, nil, allow, nil) }

// walkLocal walks the trie with a parser made local at its current step
// and sorts tokens into those it accepts (acc) and those whose fate
// depends on context below that step (cd): the ones refused only after
// the walk reached the end of a rule that began earlier.
func (t *TokenTrie) walkLocal(w localWalker, acc, cd func(tok int32)) { t.walk(w, w.Tainted, acc, cd) }

// walk is Walk and walkLocal: when tainted is set and reports true at a
// refused edge, the tokens of that subtree go to cd.
func (t *TokenTrie) walk(w ByteWalker, tainted func() bool, acc, cd func(tok int32)) {
	depth := 0
	for p := 0; p < len(t.nodes); {
		n := &t.nodes[p]
		if d := int(n.depth) - 1; depth > d {
			w.Pop(depth - d)
			depth = d
		}
		if !w.Push(n.b) {
			end := p + int(n.size)
			if tainted != nil && tainted() {
				for _, tok := range t.toks[n.tokStart:t.nodes[end-1].tokEnd] {
					cd(tok)
				}
			}
			p = end
			continue
		}
		depth++
		for _, tok := range t.toks[n.tokStart:n.tokEnd] {
			acc(tok)
		}
		p++
	}
	w.Pop(depth)
}

// localWalker is a ByteWalker that can tell when its answers depend on
// context it cannot see.
type localWalker interface {
	ByteWalker
	Tainted() bool
}
