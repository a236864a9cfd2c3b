package jsonschema

import (
	"slices"

	"github.com/reins-go/reins/grammar"
)

// The grammar's instruction budget, grammar.MaxInst, is checked here as
// well as by grammar.Compile, so that a schema past it is refused with
// the JSON pointer of the part that is too large rather than a rule name
// the schema never wrote. The measure is grammar's own: a bounded
// repetition costs its body once per copy (a large body repeated often
// is compiled once, as a rule: two instructions a copy), a literal a
// byte, a class two per range.
const (
	hoistCopies = 4 // as grammar's: repetitions of more copies than this
	hoistSize   = 8 // of bodies larger than this are compiled once
)

// sizer measures grammar nodes. With memo nil it walks the tree as is,
// a shared node once per parent, which is quick where little is shared;
// steps counts the nodes visited, so that a caller can give up on a
// grammar that shares much and measure it with a memo instead.
type sizer struct {
	memo  map[*grammar.Node]int
	steps int
}

// size is the estimated instruction count of n, a rule reference
// counting one (rules are measured on their own); at most
// grammar.MaxInst+1.
func (z *sizer) size(n *grammar.Node) int {
	if z.memo != nil {
		if s, ok := z.memo[n]; ok {
			return s
		}
	}
	z.steps++
	subs := 0
	for _, sub := range n.Subs {
		subs = min(subs+z.size(sub), grammar.MaxInst+1)
	}
	size := 1 + subs
	switch n.Op {
	case grammar.OpLit:
		size += 4*len(n.Runes()) - 1
	case grammar.OpBytes:
		size += len(n.Bytes()) - 1
	case grammar.OpClass:
		size += 2*len(n.Runes()) - 1
	case grammar.OpRepeat:
		copies := max(int(n.Min), int(n.Max), 1)
		if n.Max < 0 {
			copies = int(n.Min) + 1
		}
		switch {
		case copies > hoistCopies && size > hoistSize:
			size += 2 * copies
		case size > (grammar.MaxInst+1)/copies:
			size = grammar.MaxInst + 1
		default:
			size *= copies
		}
	}
	size = min(size, grammar.MaxInst+1)
	if z.memo != nil {
		z.memo[n] = size
	}
	return size
}

// sharedMax is the largest part the compiler writes twice in place (an
// array's item in the first place and in the rest, an ordered object's
// member first and after a comma); a larger one becomes a rule, so that
// nesting (arrays of arrays) cannot double the grammar at each level.
const sharedMax = 512

// shareable returns n, or a rule of it for the schema at ptr when it is
// larger than sharedMax.
func (c *compiler) shareable(n *grammar.Node, ptr string) *grammar.Node {
	if sizeUpTo(n, sharedMax) <= sharedMax {
		return n
	}
	return c.ruleAt(n, ptr)
}

// sizeUpTo is the estimated size of n (as sizer's) while it is at most
// limit, and some size above limit otherwise, walking about limit nodes
// at most.
func sizeUpTo(n *grammar.Node, limit int) int {
	size := 1
	switch n.Op {
	case grammar.OpLit:
		size += 4*len(n.Runes()) - 1
	case grammar.OpBytes:
		size += len(n.Bytes()) - 1
	case grammar.OpClass:
		size += 2*len(n.Runes()) - 1
	}
	for _, sub := range n.Subs {
		if size > limit {
			return size
		}
		size += sizeUpTo(sub, limit-size)
	}
	if n.Op == grammar.OpRepeat {
		size *= min(max(int(n.Min), int(n.Max), 1), limit+1)
	}
	return size
}

// maxSizeSteps bounds the nodes the quick measure visits before it
// gives way to the memoized one.
const maxSizeSteps = 1 << 22

// schemaNode is the grammar compiled for the schema at ptr.
type schemaNode struct {
	n   *grammar.Node
	ptr string
}

// checkSize refuses a grammar past grammar.MaxInst: the innermost
// schema whose own grammar exceeds it, or else the schema whose rule is
// the largest part. Most grammars are measured in one quick walk.
func (c *compiler) checkSize() error {
	quick := &sizer{}
	total := 0
	for _, r := range c.g.Rules {
		total += quick.size(r.Body)
		if quick.steps > maxSizeSteps {
			break
		}
	}
	if total <= grammar.MaxInst && quick.steps <= maxSizeSteps {
		return nil
	}
	z := &sizer{memo: map[*grammar.Node]int{}}
	total = 0
	sizes := make([]int, len(c.g.Rules))
	for i, r := range c.g.Rules {
		sizes[i] = z.size(r.Body)
		total += sizes[i]
	}
	if total <= grammar.MaxInst {
		return nil
	}
	for _, s := range c.schemaNodes { // inner schemas first
		if z.size(s.n) > grammar.MaxInst {
			if sch := c.p.byLoc[s.ptr]; sch != nil && len(sch.Pattern) > 1000 {
				return c.limitf(s.ptr, "pattern", limitGrammar, "a pattern of %d bytes, whose grammar would take more than %d instructions (grammar.MaxInst)", len(sch.Pattern), grammar.MaxInst)
			}
			return c.limitf(s.ptr, "", limitGrammar, "its grammar would take more than %d instructions (grammar.MaxInst): a bound, literal or repetition too large", grammar.MaxInst)
		}
	}
	largest := slices.Index(sizes, slices.Max(sizes))
	ptr := "#"
	if largest < len(c.rulePtrs) && c.rulePtrs[largest] != "" {
		ptr = c.rulePtrs[largest]
	}
	return c.limitf(ptr, "", limitGrammar, "the grammar would take about %d instructions in all, more than grammar.MaxInst (%d); this schema's part is the largest, about %d", total, grammar.MaxInst, sizes[largest])
}
