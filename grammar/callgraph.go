package grammar

import "slices"

// callGraph is which rules refer to which: out[a] lists the rules that
// rule a refers to, each once, in increasing order, with how many
// references a makes to it; in[b] lists the rules whose out holds b,
// each once. Counts saturate at sizeCap. inline grows it as it inlines
// rules: inlining x into c leaves c in in[x], which nothing asks about
// again, since x is then inlined everywhere.
type callGraph struct {
	out [][]callEdge
	in  [][]int32
	buf []callEdge // scratch for inlineInto
}

// callEdge is a rule's n references to rule to.
type callEdge struct{ to, n int }

// newCallGraph builds the call graph of n rules from the references scan
// recorded. Every rule's lists share one array at first, each capped at
// its own length, so that growing one moves it out.
func newCallGraph(n int, refs *ruleRefs) *callGraph {
	g := &callGraph{out: make([][]callEdge, n), in: make([][]int32, n)}
	edges := make([]callEdge, 0, len(refs.to))
	indegree := make([]int32, n)
	var targets []int32
	for a := range n {
		targets = append(targets[:0], refs.to[refs.at[a]:refs.at[a+1]]...)
		slices.Sort(targets)
		from := len(edges)
		for _, t := range targets {
			if k := len(edges) - 1; k >= from && edges[k].to == int(t) {
				edges[k].n = satAdd(edges[k].n, 1)
				continue
			}
			edges = append(edges, callEdge{to: int(t), n: 1})
			indegree[t]++
		}
		g.out[a] = edges[from:len(edges):len(edges)]
	}
	callers := make([]int32, len(edges))
	at := 0
	for b := range n {
		g.in[b] = callers[at : at : at+int(indegree[b])]
		at += int(indegree[b])
	}
	for a, out := range g.out {
		for _, e := range out {
			g.in[e.to] = append(g.in[e.to], int32(a))
		}
	}
	return g
}

// count returns how many references rule a makes to rule b.
func (g *callGraph) count(a, b int) int {
	edges := g.out[a]
	i, ok := slices.BinarySearchFunc(edges, b, func(e callEdge, b int) int { return e.to - b })
	if !ok {
		return 0
	}
	return edges[i].n
}

// inlineInto replaces rule c's references to rule x by x's own, k times
// over (k being how many c makes).
func (g *callGraph) inlineInto(c, x, k int) {
	from, with := g.out[c], g.out[x]
	merged := g.buf[:0]
	i, j := 0, 0
	for i < len(from) || j < len(with) {
		switch {
		case j == len(with) || (i < len(from) && from[i].to < with[j].to):
			if from[i].to != x {
				merged = append(merged, from[i])
			}
			i++
		case i == len(from) || with[j].to < from[i].to:
			merged = append(merged, callEdge{to: with[j].to, n: satMul(k, with[j].n)})
			g.in[with[j].to] = append(g.in[with[j].to], int32(c)) // new to c
			j++
		default: // both refer to it (and it is not x, which does not refer to itself)
			merged = append(merged, callEdge{to: from[i].to, n: satAdd(from[i].n, satMul(k, with[j].n))})
			i, j = i+1, j+1
		}
	}
	g.buf = merged
	g.out[c] = append(from[:0], merged...) // merged is apart from from
}

// ruleCallers lists, for each rule, the rules whose bodies refer to it,
// once per reference, in order (a caller's references in a row): the
// callers of rule t are from[at[t]:at[t+1]].
type ruleCallers struct {
	at   []int32
	from []int32
}

// callers returns the callers of each of n rules, from the references
// alone: productivity's worklist needs no more, and a call graph (which
// counts and sorts each rule's references for inline) costs more.
func (r *ruleRefs) callers(n int) ruleCallers {
	x := ruleCallers{at: make([]int32, n+1), from: make([]int32, len(r.to))}
	for _, t := range r.to {
		x.at[t+1]++
	}
	for t := range n {
		x.at[t+1] += x.at[t]
	}
	next := slices.Clone(x.at[:n])
	for a := range n {
		for _, t := range r.to[r.at[a]:r.at[a+1]] {
			x.from[next[t]] = int32(a)
			next[t]++
		}
	}
	return x
}

// of returns the callers of rule t.
func (x ruleCallers) of(t int) []int32 { return x.from[x.at[t]:x.at[t+1]] }
