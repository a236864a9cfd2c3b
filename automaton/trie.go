package automaton

import (
	"bytes"
	"slices"
	"unicode/utf8"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/internal/earley"
	"github.com/reins-go/reins/vocab"
)

// trieNode is one node of a Trie, in depth-first order: the node's
// first child is the next node, and its next sibling is size nodes on.
type trieNode struct {
	b        byte
	depth    uint16 // length of the byte string ending here
	size     uint32 // nodes in this subtree, itself included
	tokStart uint32 // tokens whose bytes end here: trie.toks[tokStart:tokEnd]
	tokEnd   uint32
}

// Trie holds a vocabulary's text tokens (normal, byte and
// user-defined ones) as a flat prefix tree in depth-first order, so a walk
// that refuses a byte skips the whole subtree with one addition. Control,
// unknown and unused tokens are not in it: they have no text to match.
// A Trie is immutable and safe for concurrent use.
type Trie struct {
	nodes    []trieNode
	toks     []int32
	maxDepth int // the longest token's length
	// slices are sets of plain-text tokens (well-formed UTF-8 whose ASCII
	// bytes are all in plainASCII), longest first. A walk from a state
	// that absorbs every such text of a slice's length (the inside of a
	// JSON string, say) takes the slice whole and walks only the rest.
	slices []textSlice
}

// textSlice is the plain-text tokens of at most maxChars characters
// (maxChars < 0: any), as a bitset over the vocabulary, and the trie of
// the other tokens.
type textSlice struct {
	maxChars int
	bits     []uint32
	rest     *Trie
}

// sliceLengths are the slices' lengths in characters: any length, then
// bounds for states inside a bounded string (in Llama-3's vocabulary,
// 99% of plain-text tokens have at most 16 characters and 84% at most 8).
var sliceLengths = [...]int{-1, 16, 8}

// plainASCII is the ASCII of the plain-text slice: what a JSON string
// holds unescaped (printable characters and DEL, but no quote or
// backslash).
var plainASCII = func() (set [2]uint64) {
	for c := 0x20; c < 0x80; c++ {
		if c != '"' && c != '\\' {
			set[c/64] |= 1 << (c % 64)
		}
	}
	return set
}()

// NewTrie builds the trie of v's text tokens.
func NewTrie(v *vocab.Vocab) *Trie {
	var ids []int
	for id := range v.Len() {
		switch v.Kind(id) {
		case vocab.KindNormal, vocab.KindByte, vocab.KindUserDefined:
			if len(v.Bytes(id)) > 0 {
				ids = append(ids, id)
			}
		}
	}
	t := newTrie(v, ids)
	for _, n := range sliceLengths {
		sl := textSlice{maxChars: n, bits: make([]uint32, MaskWords(v.Len()))}
		var rest []int
		for _, id := range ids {
			b := v.Bytes(id)
			if isPlain(b) && (n < 0 || utf8.RuneCount(b) <= n) {
				sl.bits[id/32] |= 1 << (id % 32)
			} else {
				rest = append(rest, id)
			}
		}
		sl.rest = newTrie(v, rest)
		t.slices = append(t.slices, sl)
	}
	return t
}

// isPlain reports whether b is well-formed UTF-8 whose ASCII bytes are
// all in plainASCII.
func isPlain(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x80 && plainASCII[c/64]&(1<<(c%64)) == 0 {
			return false
		}
	}
	return true
}

// newTrie builds the trie of the given tokens of v.
func newTrie(v *vocab.Vocab, ids []int) *Trie {
	slices.SortFunc(ids, func(a, b int) int {
		if c := bytes.Compare(v.Bytes(a), v.Bytes(b)); c != 0 {
			return c
		}
		return a - b
	})
	t := &Trie{}
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
		t.maxDepth = max(t.maxDepth, len(b))
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

// spellRanges calls fn(l), once per l ≥ 2, when some token's bytes
// match run[:l], byte i in run[i]'s range. It visits at most budget
// trie nodes, so it may miss some l.
func (t *Trie) spellRanges(run []grammar.Inst, budget int, fn func(l int)) {
	found := make([]bool, len(run)+1)
	var walk func(p, end, d int)
	walk = func(p, end, d int) {
		for p < end && budget > 0 {
			n := &t.nodes[p]
			if n.b > run[d].Hi {
				return
			}
			if n.b >= run[d].Lo {
				budget--
				if n.tokEnd > n.tokStart && d >= 1 && !found[d+1] {
					found[d+1] = true
					fn(d + 1)
				}
				if d+1 < len(run) {
					walk(p+1, p+int(n.size), d+1)
				}
			}
			p += int(n.size)
		}
	}
	walk(0, len(t.nodes), 0)
}

// spellSingles calls fn for every byte that is a token by itself.
func (t *Trie) spellSingles(fn func(b byte)) {
	for p := 0; p < len(t.nodes); p += int(t.nodes[p].size) {
		if n := &t.nodes[p]; n.tokEnd > n.tokStart {
			fn(n.b)
		}
	}
}

// Nodes returns the number of nodes, for sizing and benchmarks.
func (t *Trie) Nodes() int { return len(t.nodes) }

// byteWalker is what a trie walk drives: the three verbs llguidance's
// token trie uses. Push tries one more byte and reports whether the
// parse can continue with it; Pop undoes the last n pushed bytes.
type byteWalker interface {
	Push(b byte) bool
	Pop(n int)
}

// walkDFA walks the trie with a parser's local automaton from state s0
// and sorts tokens into those it accepts (acc) and those whose fate
// depends on context below s0's step: the subtrees refused only after
// the walk reached the end of a rule that began earlier, reported by
// their root node (cd).
func (t *Trie) walkDFA(d *earley.LocalDFA, s0 int32, acc func(tok int32), cd func(node int32)) {
	st := make([]int32, t.maxDepth+1)
	tainted := make([]bool, t.maxDepth+1)
	st[0] = s0
	for p := 0; p < len(t.nodes); {
		n := &t.nodes[p]
		parent := int(n.depth) - 1
		next, taint := d.Step(st[parent], n.b)
		if next < 0 {
			if tainted[parent] {
				cd(int32(p))
			}
			p += int(n.size)
			continue
		}
		st[parent+1], tainted[parent+1] = next, tainted[parent] || taint
		for _, tok := range t.toks[n.tokStart:n.tokEnd] {
			acc(tok)
		}
		p++
	}
}

// subtrees is a set of subtrees of a trie, by root node, in trie order:
// the tokens a state mask leaves to be checked against the context.
type subtrees struct {
	t     *Trie
	roots []int32
}

// walk calls allow for every token of the subtrees whose whole byte
// string w accepts. It pushes the path to each root (the first bytes of
// any of its tokens), keeping what the previous root's path shares with
// it, and walks the subtree as walkRange does.
func (s *subtrees) walk(v *vocab.Vocab, w byteWalker, allow func(tok int32)) {
	t := s.t
	var path []byte // the bytes pushed
	refused := -1   // the byte w refused after path, if any
	for _, r := range s.roots {
		root := &t.nodes[r]
		// A subtree's first token (at tokStart, as the trie was built)
		// spells the path to it.
		want := v.Bytes(int(t.toks[root.tokStart]))[:root.depth-1]
		common := 0
		for common < len(path) && common < len(want) && path[common] == want[common] {
			common++
		}
		if refused >= 0 && common == len(path) && len(want) > common && int(want[common]) == refused {
			continue // goes through the byte just refused
		}
		w.Pop(len(path) - common)
		path, refused = path[:common], -1
		for _, b := range want[common:] {
			if !w.Push(b) {
				refused = int(b)
				break
			}
			path = append(path, b)
		}
		if refused >= 0 {
			continue
		}
		t.walkRange(w, int(r), int(r)+int(root.size), int(root.depth)-1, allow)
	}
	w.Pop(len(path))
}

// walkRange walks nodes [from, to) (whole subtrees) whose parent is at
// depth base, pushing each edge once and skipping the subtree of an edge
// w refuses, and leaves w as it found it.
func (t *Trie) walkRange(w byteWalker, from, to, base int, allow func(tok int32)) {
	depth := base
	for p := from; p < to; {
		n := &t.nodes[p]
		if d := int(n.depth) - 1; depth > d {
			w.Pop(depth - d)
			depth = d
		}
		if !w.Push(n.b) {
			p += int(n.size)
			continue
		}
		depth++
		for _, tok := range t.toks[n.tokStart:n.tokEnd] {
			allow(tok)
		}
		p++
	}
	w.Pop(depth - base)
}
