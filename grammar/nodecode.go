package grammar

import "unsafe"

// compiledNodes remembers the code of the sequences and alternations
// compiled last, by node and by where each goes on: a front end shares
// one node among many places (JSON Schema's compiler one "any character
// but these" for every key trie node whose next characters are the
// same), and where two of them go on at the same instruction (the rest
// of the key, the trie's end) their code is the same and is emitted
// once. Code does not change once compiled, so reusing it changes no
// language.
//
// It is a small cache, not a map: a lookup is one slot, and an entry a
// later one overwrites is compiled again, as without it. Code is shared
// only within a program rule, since where a node goes on is always an
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
	h := (uint64(uintptr(unsafe.Pointer(n))) ^ uint64(next)*0x9e3779b97f4a7c15) * 0x9e3779b97f4a7c15
	return &x.slots[h>>(64-compiledNodeBits)]
}
