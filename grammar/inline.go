package grammar

import "slices"

// inlineBudget bounds how much inlining may grow a grammar, in
// (estimated) instructions: a grammar may grow to twice its size, or to
// inlineBudget when that is more.
const inlineBudget = 10000

// inline decides which rules compile inlines: every rule that is not
// the start rule and does not refer to itself is compiled in place at
// each reference, and rules that refer to themselves stay as calls.
// Inlining a rule into its callers can make a caller refer to itself,
// which then stays. A rule whose inlining would exceed the budget stays
// too. This changes no language, only how the parser sees it: a JSON
// string inlined into "object" ends inside "object", so the tokens that
// close it and go on (`":`, `",`) are judged without looking below the
// current rule.
//
// A rule whose body is a bounded repetition with its body hoisted (see
// hoisted), such as JSON's whitespace, [ \t\n\r]{0,16}, stays called
// where it has more than one use: inlined, each use would be a copy of
// its chain of calls (two instructions a repetition), and a JSON
// Schema's grammar uses its whitespace rule at every comma, colon and
// bracket; called, each use is one instruction.
//
// It decides on the call graph (reference counts and sizes: sizes[i] is
// the unrolled size of rules[i].Body, see nodeSize; calls[a][b] counts
// the references from rule a to rule b, and inline consumes it), in rule
// order, pass after pass. Counts and sizes saturate at sizeCap.
func inline(rules []Rule, sizes []int, calls []map[int]int, start string, repeats []bool) []bool {
	n := len(rules)
	callers := make([]map[int]bool, n) // callers[b]: the a with calls[a][b] > 0
	size := slices.Clone(sizes)
	total := 0
	for i := range rules {
		callers[i] = map[int]bool{}
	}
	for i := range rules {
		for x := range calls[i] {
			callers[x][i] = true
		}
		total += size[i]
	}
	budget := max(inlineBudget, 2*total)
	inlined := make([]bool, n)
	var order []int // callers of the rule being inlined, in rule order
	for changed := true; changed; {
		changed = false
		for x := range rules {
			if rules[x].Name == start || inlined[x] || calls[x][x] > 0 {
				continue
			}
			uses := 0
			order = order[:0]
			for c := range callers[x] {
				if !inlined[c] {
					uses = satAdd(uses, calls[c][x])
					order = append(order, c)
				}
			}
			if uses == 0 || (repeats[x] && uses > 1) || satAdd(total, satMul(uses, size[x])) > budget {
				continue
			}
			slices.Sort(order)
			for _, c := range order {
				k := calls[c][x]
				delete(calls[c], x)
				delete(callers[x], c)
				for d, m := range calls[x] {
					calls[c][d] = satAdd(calls[c][d], satMul(k, m))
					callers[d][c] = true
				}
				size[c] = satAdd(size[c], satMul(k, size[x]))
			}
			total = satAdd(total, satMul(uses, size[x]))
			inlined[x] = true
			changed = true
		}
	}
	return inlined
}
