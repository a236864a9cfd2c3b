package jsonschema

import (
	"slices"

	"github.com/reins-go/reins/grammar"
)

// nodeSlab makes a compile's grammar nodes, and their lists of subnodes,
// in chunks: a schema's grammar is thousands of small nodes, which all
// live as long as the grammar does, and one allocation a chunk costs far
// less than one a node (about a third of compiling a median MaskBench
// schema was allocating them one by one). Lists are copied in, each
// capped at its length, so that a variadic argument stays on its
// caller's stack and appending to a list moves it out.
type nodeSlab struct {
	nodes  []grammar.Node
	leaves []grammar.Leaf
	lists  []*grammar.Node
	text   []byte
	made   int     // the nodes made, bounded by maxGrammarNodes
	at     *string // the pointer of the schema being compiled, for the error past it
}

// maxGrammarNodes bounds the grammar nodes one compile makes, those it
// keeps and those it throws away (branches of a combination it tries
// and drops): the dev set's largest grammar takes about 53,000 (its
// references and brackets counted, made in the slab too), and a schema
// that distributes allOf over many anyOf, or nests not in anyOf, made
// tens of millions (gigabytes) before its size was checked. A grammar
// of more nodes than grammar.MaxInst would pass it anyway, but for
// nodes shared many times.
const maxGrammarNodes = grammar.MaxInst

// errTooManyNodes is the panic of a slab past maxGrammarNodes, which
// Compile recovers into a limit error at ptr, the schema being compiled
// then (the compile's own pointer is unwound with the panic).
type errTooManyNodes struct{ ptr string }

// nodeChunk is how many nodes (or leaves) a chunk holds: 2 KB of nodes
// (chunks of 128 nodes of 184 bytes, 25 KB, took over half the slab's
// time in profiles to allocate; of 64 nodes of 64 bytes, the dev set's
// tail compiled 4% slower than at 32), and slabChunk how many list
// entries.
const (
	nodeChunk = 32
	slabChunk = 128
)

// node returns a copy of n made in the slab.
func (s *nodeSlab) node(n grammar.Node) *grammar.Node {
	if len(s.nodes) == cap(s.nodes) {
		if s.made += cap(s.nodes); s.made > maxGrammarNodes {
			ptr := "#"
			if s.at != nil {
				ptr = *s.at
			}
			panic(errTooManyNodes{ptr})
		}
		s.nodes = make([]grammar.Node, 0, nodeChunk)
	}
	s.nodes = append(s.nodes, n)
	return &s.nodes[len(s.nodes)-1]
}

// list returns a copy of subs made in the slab (a long one apart).
func (s *nodeSlab) list(subs []*grammar.Node) []*grammar.Node {
	if len(subs) > slabChunk/4 {
		return append([]*grammar.Node(nil), subs...)
	}
	if len(subs) > cap(s.lists)-len(s.lists) {
		s.lists = make([]*grammar.Node, 0, slabChunk)
	}
	at := len(s.lists)
	s.lists = append(s.lists, subs...)
	return s.lists[at:len(s.lists):len(s.lists)]
}

// seq is grammar.Seq made in the slab.
func (s *nodeSlab) seq(subs ...*grammar.Node) *grammar.Node {
	return s.node(grammar.Node{Op: grammar.OpSeq, Subs: s.list(subs)})
}

// alt is grammar.Alt made in the slab.
func (s *nodeSlab) alt(subs ...*grammar.Node) *grammar.Node {
	return s.node(grammar.Node{Op: grammar.OpAlt, Subs: s.list(subs)})
}

// repeat is grammar.Repeat made in the slab.
func (s *nodeSlab) repeat(sub *grammar.Node, min, max int) *grammar.Node {
	return s.node(grammar.Node{Op: grammar.OpRepeat, Subs: s.list([]*grammar.Node{sub}), Min: grammar.RepeatBound(min), Max: grammar.RepeatBound(max)})
}

// ref is grammar.Ref made in the slab. Pass the rule's own name, the
// string in its grammar.Rule: grammar.Compile then finds the rule by the
// string's storage, without hashing it.
func (s *nodeSlab) ref(name string) *grammar.Node {
	return s.node(grammar.Node{Op: grammar.OpRef, Name: name})
}

// leaf returns a copy of l made in the slab.
func (s *nodeSlab) leaf(l grammar.Leaf) *grammar.Leaf {
	if len(s.leaves) == cap(s.leaves) {
		s.leaves = make([]grammar.Leaf, 0, nodeChunk)
	}
	s.leaves = append(s.leaves, l)
	return &s.leaves[len(s.leaves)-1]
}

// bytes is a literal of the bytes of str (OpBytes), made in the slab.
func (s *nodeSlab) bytes(str string) *grammar.Node {
	if len(str) > slabChunk/4 {
		return s.node(grammar.Node{Op: grammar.OpBytes, Leaf: s.leaf(grammar.Leaf{Bytes: []byte(str)})})
	}
	if len(str) > cap(s.text)-len(s.text) {
		s.text = make([]byte, 0, slabChunk*4)
	}
	at := len(s.text)
	s.text = append(s.text, str...)
	return s.node(grammar.Node{Op: grammar.OpBytes, Leaf: s.leaf(grammar.Leaf{Bytes: s.text[at:len(s.text):len(s.text)]})})
}

// copyTree returns a copy of the tree n made in the slab, its slices
// copied too, and its shared subtrees still shared (copied holds the
// copies made so far): a tree shared across compilations goes into a
// grammar that is the caller's only as a copy.
func (s *nodeSlab) copyTree(n *grammar.Node, copied map[*grammar.Node]*grammar.Node) *grammar.Node {
	if c, ok := copied[n]; ok {
		return c
	}
	c := *n
	if n.Subs != nil {
		subs := make([]*grammar.Node, len(n.Subs))
		for i, sub := range n.Subs {
			subs[i] = s.copyTree(sub, copied)
		}
		c.Subs = s.list(subs)
	}
	if n.Leaf != nil {
		l := *n.Leaf
		l.Bytes, l.Runes, l.Tokens.Tokens = slices.Clone(l.Bytes), slices.Clone(l.Runes), slices.Clone(l.Tokens.Tokens)
		c.Leaf = s.leaf(l)
	}
	copied[n] = s.node(c)
	return copied[n]
}
