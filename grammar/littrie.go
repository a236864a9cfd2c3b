package grammar

import (
	"bytes"
	"encoding/binary"
	"slices"
	"unicode/utf8"
)

// A litTrie holds the literal branches of an alternation, byte by byte,
// so that they compile with their common prefixes shared and their
// common endings too: an enum of 250 two-letter codes, or the 34 escapes
// of JSON's control characters, becomes a small automaton instead of a
// branch per literal. The language is the same; the parser holds one
// item where it held one per branch, and the program is smaller.
//
// The literals are added in sorted order, so each node's children come
// in byte order and after it: the passes below go backwards over the
// nodes instead of recursing, however long a literal is.
type litTrie struct {
	nodes []litNode
}

// litNode is a node of a litTrie: its children are a list through next.
type litNode struct {
	end         bool  // a literal ends here
	b           byte  // the byte that leads here from the parent
	first, last int32 // the first and last child, or 0
	next        int32 // the next sibling, or 0
}

// add adds literal w, which sorts after every literal added before.
func (t *litTrie) add(w []byte) {
	if len(t.nodes) == 0 {
		t.nodes = append(t.nodes, litNode{})
	}
	at := int32(0)
	for _, c := range w {
		if l := t.nodes[at].last; l != 0 && t.nodes[l].b == c {
			at = l
			continue
		}
		t.nodes = append(t.nodes, litNode{b: c})
		n := int32(len(t.nodes) - 1)
		if l := t.nodes[at].last; l != 0 {
			t.nodes[l].next = n
		} else {
			t.nodes[at].first = n
		}
		t.nodes[at].last = n
		at = n
	}
	t.nodes[at].end = true
}

// litClassKey identifies the class of a node with at most one child.
type litClassKey struct {
	end   bool
	b     byte
	child int32 // the child's class, or -1
}

// classes numbers the nodes by the set of endings they accept: two nodes
// of the same class accept the same rests, and compile to one piece of
// code. It returns each node's class and the number of classes.
func (t *litTrie) classes() ([]int32, int) {
	class := make([]int32, len(t.nodes))
	small := map[litClassKey]int32{}
	var big map[string]int32
	var key []byte
	n := int32(0)
	for i := len(t.nodes) - 1; i >= 0; i-- {
		nd := &t.nodes[i]
		var id int32
		var ok bool
		if nd.first == nd.last { // at most one child: the common case
			k := litClassKey{nd.end, 0, -1}
			if nd.first != 0 {
				k.b, k.child = t.nodes[nd.first].b, class[nd.first]
			}
			if id, ok = small[k]; !ok {
				id, small[k] = n, n
			}
		} else {
			// One flag byte, then (byte, varint class) per child: a key
			// reads back one way only.
			key = append(key[:0], 0)
			if nd.end {
				key[0] = 1
			}
			for k := nd.first; k != 0; k = t.nodes[k].next {
				key = append(key, t.nodes[k].b)
				key = binary.AppendUvarint(key, uint64(class[k]))
			}
			if big == nil {
				big = map[string]int32{}
			}
			if id, ok = big[string(key)]; !ok {
				id, big[string(key)] = n, n
			}
		}
		if !ok {
			n++
		}
		class[i] = id
	}
	return class, int(n)
}

// literalBytes returns the bytes literal node n stands for.
func (c *compiler) literalBytes(n *Node) ([]byte, error) {
	if n.Op == OpBytes {
		return n.Bytes(), nil
	}
	var b []byte
	for _, r := range n.Runes() {
		if r < 0 || r > utf8.MaxRune || (r >= 0xD800 && r <= 0xDFFF) {
			return nil, c.nodeErrorf(c.rule, n, nil, "code point U+%04X cannot be encoded in UTF-8", r)
		}
		b = utf8.AppendRune(b, r)
	}
	return b, nil
}

// isLiteral reports whether n is a literal branch for a litTrie.
func isLiteral(n *Node) bool { return n.Op == OpLit || n.Op == OpBytes }

// sharePrefixes reports whether two of the literal branches subs of an
// alternation begin with the same byte: then a litTrie shares it.
func sharePrefixes(subs []*Node) bool {
	var seen [256 / 64]uint64
	for _, n := range subs {
		var b byte
		bs, rs := n.Bytes(), n.Runes()
		switch {
		case n.Op == OpBytes && len(bs) > 0:
			b = bs[0]
		case n.Op == OpLit && len(rs) > 0 && rs[0] >= 0 && rs[0] < utf8.RuneSelf:
			b = byte(rs[0])
		case n.Op == OpLit && len(rs) > 0:
			// A multi-byte lead (or a bad code point, which the trie
			// reports): counted by its first UTF-8 byte.
			var buf [utf8.UTFMax]byte
			if utf8.EncodeRune(buf[:], rs[0]) == 0 {
				continue
			}
			b = buf[0]
		default:
			continue
		}
		if seen[b/64]&(1<<(b%64)) != 0 {
			return true
		}
		seen[b/64] |= 1 << (b % 64)
	}
	return false
}

// litPlan is the trie of an alternation's literal branches and its
// classes, built once however many times the alternation is compiled
// (a node shared by many parents, an automaton's edge class, say, is
// compiled at each of their continuations).
type litPlan struct {
	t      litTrie
	class  []int32
	nclass int
}

// literalPlan returns the plan of alternation alt's literal branches,
// or nil where no two of them begin alike (see sharePrefixes).
func (c *compiler) literalPlan(alt *Node) (*litPlan, error) {
	if !sharePrefixes(alt.Subs) {
		return nil, nil
	}
	if p, ok := c.litPlans[alt]; ok {
		return p, nil
	}
	var words [][]byte
	for _, n := range alt.Subs {
		if !isLiteral(n) {
			continue
		}
		b, err := c.literalBytes(n)
		if err != nil {
			return nil, err
		}
		words = append(words, b)
	}
	slices.SortFunc(words, bytes.Compare)
	p := &litPlan{}
	for _, w := range words {
		p.t.add(w)
	}
	p.class, p.nclass = p.t.classes()
	if c.litPlans == nil {
		c.litPlans = map[*Node]*litPlan{}
	}
	c.litPlans[alt] = p
	return p, nil
}

// literals emits plan's trie continuing at next, and returns its entry.
func (c *compiler) literals(p *litPlan, next uint32) uint32 {
	t, class := &p.t, p.class
	entry := slices.Grow(c.litEntry[:0], p.nclass)[:p.nclass]
	done := slices.Grow(c.litDone[:0], p.nclass)[:p.nclass]
	clear(done)
	c.litEntry, c.litDone = entry, done
	var alts []uint32
	for i := len(t.nodes) - 1; i >= 0; i-- {
		if done[class[i]] {
			continue
		}
		nd := &t.nodes[i]
		alts = alts[:0]
		if nd.end {
			alts = append(alts, next)
		}
		// Neighbouring bytes that lead to the same code share one range.
		for k := nd.first; k != 0; {
			lo, hi := k, k
			for h := t.nodes[hi].next; h != 0 && t.nodes[h].b == t.nodes[hi].b+1 && class[h] == class[lo]; h = t.nodes[h].next {
				hi = h
			}
			alts = append(alts, c.emit(Inst{Op: InstByte, Lo: t.nodes[lo].b, Hi: t.nodes[hi].b, Out: entry[class[lo]]}))
			k = t.nodes[hi].next
		}
		entry[class[i]], done[class[i]] = c.alts(alts), true
	}
	return entry[class[0]]
}
