package grammar

// compiledNodes remembers the code of the sequences and alternations
// compiled last, by node and by where each goes on: a front end shares
// one node among many places (JSON Schema's compiler one "any character
// but these" for every key trie node whose next characters are the
// same), and where two of them go on at the same instruction (the rest
// of the key, the trie's end) their code is the same and is emitted
// once. Code does not change once compiled (the two kinds of
// instruction patched later, a loop's split and a tail jump's entry, are
// patched once, in place, the same for every way in), so reusing it
// changes no language.
//
// It is a small cache, not a map (a map made compiling slower than
// sharing made it faster): a lookup is one slot, and an entry a later
// one overwrites is compiled again, as without it. The slot is chosen
// by the node's content near its top and by next, never by the node's
// address: which entries overwrite which must not depend on where nodes
// sit in memory, or one grammar would compile to different programs
// from run to run (TestCompileDeterministic). Code is shared only
// within a program rule, since where a node goes on is always an
// instruction of the rule being compiled. It is off (off > 0) inside an
// inlined rule's body, whose code copyInlined may copy instead of
// compiling it: a copy must be what compiling would make.
type compiledNodes struct {
	slots [compiledNodeSlots]compiledNode
	off   int
}

type compiledNode struct {
	node     *Node
	next, at uint32
}

const (
	compiledNodeBits  = 10
	compiledNodeSlots = 1 << compiledNodeBits
)

// slot is where node n going on at next is remembered.
func (x *compiledNodes) slot(n *Node, next uint32) *compiledNode {
	h := (fingerprint(n) ^ uint64(next)) * 0x9e3779b97f4a7c15
	return &x.slots[h>>(64-compiledNodeBits)]
}

// fingerprint mixes n's kind and width with its leftmost leaf's kind
// and first byte or range: enough to tell apart the nodes a front end
// shares ("any character but these" differs in its class, deep on the
// left), cheap to compute, and the same in every run.
func fingerprint(n *Node) uint64 {
	h := uint64(n.Op)<<40 | uint64(len(n.Subs))<<32
	leaf := n
	for k := 0; k < 4 && len(leaf.Subs) > 0; k++ {
		leaf = leaf.Subs[0]
		h ^= uint64(len(leaf.Subs)) << (8 * k)
	}
	h ^= uint64(leaf.Op) << 56
	rs, bs := leaf.Runes(), leaf.Bytes()
	switch {
	case len(rs) >= 2:
		h ^= uint64(rs[0])<<20 ^ uint64(rs[len(rs)-2]) ^ uint64(len(rs))<<48
	case len(bs) > 0:
		h ^= uint64(bs[0])<<20 ^ uint64(bs[len(bs)-1]) ^ uint64(len(bs))<<48
	case len(rs) > 0:
		h ^= uint64(rs[0])<<20 ^ uint64(len(rs))<<48
	default:
		h ^= uint64(len(leaf.Name)) << 48
	}
	return h
}
