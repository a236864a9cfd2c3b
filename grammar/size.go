package grammar

// estimateSize returns the number of instructions Compile estimates n compiles
// to, the measure its budget (MaxInst) is checked with: n's unrolled
// size, where a bounded repetition costs its body once per copy (a large
// body repeated often is compiled once, as a rule, at two instructions a
// copy), a literal a byte (four per character of a Lit), a class two per
// range bound, and a reference to a rule one (rules are measured on their
// own). A node shared by several parents counts at each. The result
// saturates at MaxInst+1, so that a front end can check a part of its
// grammar against the budget before building the rest.
//
// Its work is linear in the tree's size counting shared nodes once.
func estimateSize(n *Node) int {
	z := sizer{budget: sizeSteps}
	if s, ok := z.size(n); ok {
		return s
	}
	z = sizer{memo: map[*Node]int{}}
	s, _ := z.size(n)
	return s
}

// sizeSteps bounds the nodes estimateSize visits walking the tree as it is
// (quick where little is shared) before it measures again with a memo.
const sizeSteps = 1 << 16

// sizer measures nodes for estimateSize: without memo within budget visits,
// else with memo.
type sizer struct {
	memo   map[*Node]int
	budget int
}

// size returns n's size, and false when the budget ran out.
func (z *sizer) size(n *Node) (int, bool) {
	if z.memo != nil {
		if s, ok := z.memo[n]; ok {
			return s, true
		}
	} else if z.budget--; z.budget < 0 {
		return 0, false
	}
	subs := 0
	for _, sub := range n.Subs {
		s, ok := z.size(sub)
		if !ok {
			return 0, false
		}
		subs = satAdd(subs, s)
	}
	s := min(nodeSize(n, subs), MaxInst+1)
	if z.memo != nil {
		z.memo[n] = s
	}
	return s, true
}
