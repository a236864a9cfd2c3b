package grammar

import "slices"

// inlineBudget bounds how much inlining may grow a grammar, in
// (estimated) instructions: a grammar may grow to inlineBudget, and one
// larger than that is not grown at all, its rules compiled once each
// with calls between them. Inlining saves the masks a call where a
// token crosses a rule's end, and costs the compile a copy at each
// reference; in a small grammar the masks win, and in a large one the
// copies do: the time to compile a large schema follows the memory its
// program and tree fill more than the instructions it runs. (Letting a
// grammar grow to twice its size instead, on MaskBench's dev set: TTFM
// p99 about 10% higher, mask and commit about 7% faster on average.) The
// estimate leaves out each rule's match instruction, so a grammar near
// MaxInst can still pass it.
const inlineBudget = 10000

// inline decides which rules compile inlines: every rule that is not
// the start rule, not marked Called, and does not refer to itself is
// compiled in place at each reference, and the others stay as calls.
// Inlining a rule into its callers can make a caller refer to itself,
// which then stays. A rule whose inlining would exceed the budget stays
// too. This changes no language, only how the parser sees it: a JSON
// string inlined into "object" ends inside "object", so the tokens that
// close it and go on (`":`, `",`) are judged without looking below the
// current rule.
//
// A rule whose body is a bounded repetition with its body hoisted (see
// hoisted), such as JSON's whitespace, [ \t\n\r]{0,16}, stays called:
// inlined, each use would be a copy of its chain of calls (two
// instructions a repetition), and a JSON Schema's grammar uses its
// whitespace rule at every comma, colon and bracket; called, each use is
// one instruction. (Counting its uses instead would depend on the order
// of the rules: inlined first into a rule that has one use of it, it
// would be copied wherever that rule is inlined.)
//
// It returns, beside the rules to inline, the estimated size of the
// program: the rules compiled as rules, each with the rules inlined into
// it counted at every reference (compile shares the copies that go on
// at the same place, so programs come to half of it, or less).
//
// It decides on the call graph (reference counts and sizes: sizes[i] is
// the unrolled size of rules[i].Body, see nodeSize), in rule order, pass
// after pass, and grows the graph as it inlines. Counts and sizes
// saturate at sizeCap.
func inline(rules []Rule, sizes []int, calls func() *callGraph, start string, repeats []bool) (inlined []bool, emitted int) {
	n := len(rules)
	size := slices.Clone(sizes)
	total := 0
	for i := range rules {
		total = satAdd(total, size[i])
	}
	budget := min(max(inlineBudget, total), MaxInst)
	inlined = make([]bool, n)
	if total >= budget && !slices.Contains(size, 0) {
		return inlined, total // no room, and no rule that takes none
	}
	g := calls()
	var order []int // callers of the rule being inlined, in rule order
	for changed := true; changed; {
		changed = false
		for x := range rules {
			if rules[x].Name == start || rules[x].Called || inlined[x] || repeats[x] || g.count(x, x) > 0 {
				continue
			}
			uses := 0
			order = order[:0]
			for _, c := range g.in[x] {
				if !inlined[c] {
					uses = satAdd(uses, g.count(int(c), x))
					order = append(order, int(c))
				}
			}
			if uses == 0 || satAdd(total, satMul(uses, size[x])) > budget {
				continue
			}
			slices.Sort(order)
			for _, c := range order {
				k := g.count(c, x)
				g.inlineInto(c, x, k)
				size[c] = satAdd(size[c], satMul(k, size[x]))
			}
			total = satAdd(total, satMul(uses, size[x]))
			inlined[x] = true
			changed = true
		}
	}
	for i := range rules {
		if !inlined[i] {
			emitted = satAdd(emitted, size[i])
		}
	}
	return inlined, emitted
}
