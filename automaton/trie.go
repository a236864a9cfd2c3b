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
	// upTo[n] is the set of plain-text tokens of at most n characters,
	// for n up to maxExact: from a state that absorbs exactly n more
	// characters of plain text (the inside of a string nearing its
	// maxLength), those are the plain-text tokens allowed, and a walk
	// looks only at the tokens that are not plain text (the rest of the
	// first slice).
	upTo [][]uint32
	// singles is the bytes that are a token by themselves (a 256-bit
	// set), found once here: each Automaton takes it, where looking over
	// the trie's first level (a cache miss a node) cost several
	// microseconds of every compile.
	singles [4]uint64
}

// maxExact is the longest exact bound of a state's plain text that a
// Trie keeps the tokens of (see Trie.upTo).
const maxExact = 64

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
	t.singles = t.singleBytes()
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
	t.upTo = make([][]uint32, maxExact+1)
	for n := range t.upTo {
		t.upTo[n] = make([]uint32, MaskWords(v.Len()))
	}
	for _, id := range ids {
		if b := v.Bytes(id); isPlain(b) {
			if n := utf8.RuneCount(b); n <= maxExact {
				t.upTo[n][id/32] |= 1 << (id % 32)
			}
		}
	}
	for n := 1; n <= maxExact; n++ {
		for i, w := range t.upTo[n-1] {
			t.upTo[n][i] |= w
		}
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

// singleBytes returns the bytes that are a token by themselves, as a
// 256-bit set.
func (t *Trie) singleBytes() (set [4]uint64) {
	for p := 0; p < len(t.nodes); p += int(t.nodes[p].size) {
		if n := &t.nodes[p]; n.tokEnd > n.tokStart {
			set[n.b>>6] |= 1 << (n.b & 63)
		}
	}
	return set
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

// dfaWalk walks a trie with a parser's local automaton from a state s0
// and sorts tokens into those it accepts (acc) and those whose fate
// depends on context below s0's step: the subtrees refused only after
// the walk reached the end of a rule that began before s0, by their
// root nodes, in trie order (cd).
//
// With memo, a large subtree below an accepted node is taken from what
// a walk of it from the canonical state found (LocalDFA.Canon): its
// accepted tokens are accepted, its refusals before any rule ended
// stand, and only its subtrees refused after a rule that began before
// the node ended are walked again from the actual state. A string's
// content, say, is walked once for all the places the string appears
// (and its automaton's states are built once), instead of once for
// each.
type dfaWalk struct {
	t       *Trie
	d       *earley.LocalDFA
	v       *vocab.Vocab
	memo    *walkMemo // nil: walk everything
	acc, cd []int32
	// st[k] is the state after the first k bytes of the current path,
	// negated when the walk there depends on context (tainted); state
	// ids start at 0, so st holds id+1.
	st []int32
}

// memoMin is the smallest subtree a walk takes from its memo: below
// it, the lookup costs about what walking saves.
const memoMin = 16

// walkMemo holds, per trie node and canonical state, what a walk of
// the node's subtree from that state found; toks bounds the tokens it
// keeps (memoMax).
type walkMemo struct {
	m    map[memoKey]*subtreeWalk
	toks int
}

// memoMax bounds the tokens an Automaton's walk memo keeps, so that a
// long-lived automaton's memory stays bounded: past it, subtrees are
// walked every time.
const memoMax = 1 << 22

type memoKey struct {
	t     *Trie
	node  int32
	state int32
}

// subtreeWalk is what a walk of a subtree from a canonical state found:
// the tokens it accepts, and the subtrees it refuses after a rule that
// began before the state ended.
type subtreeWalk struct {
	acc, cd []int32
}

// run walks the whole trie from s0.
func (w *dfaWalk) run(s0 int32) {
	w.sizeStack()
	w.walk(0, len(w.t.nodes), 0, s0, false, w.memo != nil)
}

// sizeStack makes st as deep as the trie.
func (w *dfaWalk) sizeStack() {
	if cap(w.st) < w.t.maxDepth+1 {
		w.st = make([]int32, w.t.maxDepth+1)
	}
	w.st = w.st[:w.t.maxDepth+1]
}

// walk walks nodes [from, to), whole subtrees whose parent is at depth
// base, from state s, tainted when the path to it depends on context.
func (w *dfaWalk) walk(from, to, base int, s int32, tainted, memo bool) {
	st, d := w.st, w.d
	if tainted {
		st[base] = -(s + 1)
	} else {
		st[base] = s + 1
	}
	nodes, toks := w.t.nodes, w.t.toks
	for p := from; p < to; {
		n := &nodes[p]
		parent := st[n.depth-1]
		s, tainted := parent-1, false
		if parent < 0 {
			s, tainted = -parent-1, true
		}
		next, taint, ok := d.Peek(s, n.b)
		if !ok {
			next, taint = d.Step(s, n.b)
		}
		if next < 0 {
			if tainted {
				w.cd = append(w.cd, int32(p))
			}
			p += int(n.size)
			continue
		}
		for i := n.tokStart; i < n.tokEnd; i++ {
			w.acc = append(w.acc, toks[i])
		}
		if tainted || taint {
			st[n.depth] = -(next + 1)
		} else {
			if memo && n.size >= memoMin {
				w.fromMemo(p, next)
				p += int(n.size)
				continue
			}
			st[n.depth] = next + 1
		}
		p++
	}
}

// fromMemo walks the subtree below node p, reached untainted in state
// x, from the memo of its canonical state's walk.
func (w *dfaWalk) fromMemo(p int, x int32) {
	n := &w.t.nodes[p]
	c := w.d.Canon(x)
	key := memoKey{w.t, int32(p), c}
	m := w.memo.m[key]
	if m == nil {
		acc0, cd0 := len(w.acc), len(w.cd)
		w.walk(p+1, p+int(n.size), int(n.depth), c, false, false)
		m = &subtreeWalk{acc: slices.Clone(w.acc[acc0:]), cd: slices.Clone(w.cd[cd0:])}
		w.acc, w.cd = w.acc[:acc0], w.cd[:cd0]
		if w.memo.toks+len(m.acc)+len(m.cd) <= memoMax {
			if w.memo.m == nil {
				w.memo.m = map[memoKey]*subtreeWalk{}
			}
			w.memo.m[key] = m
			w.memo.toks += len(m.acc) + len(m.cd) + 1
		}
	}
	w.acc = append(w.acc, m.acc...)
	if c == x { // the canonical walk is this one
		w.cd = append(w.cd, m.cd...)
		return
	}
	toks := w.t.toks
	for _, r := range m.cd {
		// Step from x to r's parent: the path that the canonical walk
		// accepted, and so x accepts too, spelt by r's first token.
		rn := &w.t.nodes[r]
		s, tainted := x, false
		for _, b := range w.v.Bytes(int(toks[rn.tokStart]))[n.depth : rn.depth-1] {
			var taint bool
			if s, taint = w.d.Step(s, b); s < 0 {
				break // cannot happen (see Canon); if it did, the parser decides
			}
			tainted = tainted || taint
		}
		if s < 0 {
			w.cd = append(w.cd, r)
			continue
		}
		w.walk(int(r), int(r)+int(rn.size), int(rn.depth)-1, s, tainted, false)
	}
}

// subtrees is a set of subtrees of a trie, by root node, in trie order:
// the tokens a state mask leaves to be checked against the context.
type subtrees struct {
	t     *Trie
	roots []int32
}

// walk calls allow for every token of the subtrees whose whole byte
// string w accepts, w being at depth base of the trie (the roots are
// below it). It pushes the path to each root (the bytes after base of
// any of its tokens), keeping what the previous root's path shares with
// it, and walks the subtree with walkRoot, or as walkRange does when
// walkRoot is nil.
func (s *subtrees) walk(v *vocab.Vocab, w byteWalker, base int, allow func(tok int32), walkRoot func(r int32)) {
	t := s.t
	var path []byte // the bytes pushed
	refused := -1   // the byte w refused after path, if any
	for _, r := range s.roots {
		root := &t.nodes[r]
		// A subtree's first token (at tokStart, as the trie was built)
		// spells the path to it.
		want := v.Bytes(int(t.toks[root.tokStart]))[base : root.depth-1]
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
		if walkRoot != nil {
			walkRoot(r)
		} else {
			t.walkRange(w, int(r), int(r)+int(root.size), int(root.depth)-1, allow)
		}
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
