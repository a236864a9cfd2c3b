package earley

import (
	"container/heap"

	"github.com/reins-go/reins/grammar"
)

// NoCost marks an instruction from which its rule cannot be finished.
const NoCost = int32(1 << 28)

// Costs prices the ways to finish a parse, for Parser.CostToEnd: how
// many units (bytes, tokens) the cheapest way from each instruction to
// the end of its rule takes. It is immutable once built.
type Costs struct {
	// Rest[pc] is the fewest units from instruction pc to the end of its
	// rule; NoCost when there is no way.
	Rest []int32
	// Rule[pc] is the rule instruction pc belongs to.
	Rule []uint32
}

// Bytes returns about the memory c holds.
func (c *Costs) Bytes() int64 { return 4 * int64(cap(c.Rest)+cap(c.Rule)) }

// Edge is one more way on from an instruction at a price: to instruction
// To, in the same rule, consuming input that costs Cost.
type Edge struct {
	From, To uint32
	Cost     int32
}

// NewCosts prices prog. byteCost(pc) is what crossing byte instruction
// pc costs (NoCost when nothing can), a token instruction costs 1, and
// shortcuts are further edges, such as one token that spells several
// literal bytes at once. It is a shortest-path computation over the
// instructions in which a call costs its rule's cheapest way through
// plus the way on after it (Knuth's generalisation of Dijkstra's
// algorithm).
func NewCosts(prog *grammar.Prog, byteCost func(pc int) int32, shortcuts []Edge) *Costs {
	n := len(prog.Inst)
	c := &Costs{Rest: make([]int32, n), Rule: ruleOf(prog)}
	for i := range c.Rest {
		c.Rest[i] = NoCost
	}
	type pred struct {
		from uint32
		cost int32
	}
	preds := make([][]pred, n)                   // plain edges, reversed
	callsTo := make([][]uint32, n)               // call instructions whose Out is pc
	callers := make([][]uint32, len(prog.Rules)) // call instructions of each rule
	addEdge := func(from, to uint32, cost int32) {
		if cost < NoCost {
			preds[to] = append(preds[to], pred{from, cost})
		}
	}
	for pc, in := range prog.Inst {
		switch in.Op {
		case grammar.InstByte:
			addEdge(uint32(pc), in.Out, byteCost(pc))
		case grammar.InstSplit:
			addEdge(uint32(pc), in.Out, 0)
			addEdge(uint32(pc), in.Arg, 0)
		case grammar.InstToken:
			addEdge(uint32(pc), in.Out, 1)
		case grammar.InstCall:
			callers[in.Arg] = append(callers[in.Arg], uint32(pc))
			callsTo[in.Out] = append(callsTo[in.Out], uint32(pc))
		}
	}
	for _, e := range shortcuts {
		addEdge(e.From, e.To, e.Cost)
	}
	startOf := make([][]uint32, n) // rules whose start is pc
	for r, pr := range prog.Rules {
		startOf[pr.Start] = append(startOf[pr.Start], uint32(r))
	}

	done := make([]bool, n)
	q := &costQueue{}
	relax := func(pc uint32, cost int32) {
		if !done[pc] && cost < c.Rest[pc] {
			c.Rest[pc] = cost
			heap.Push(q, costEntry{pc, cost})
		}
	}
	// A call is priced once its rule's start and its Out are settled.
	relaxCall := func(call uint32) {
		in := prog.Inst[call]
		start := prog.Rules[in.Arg].Start
		if done[start] && done[in.Out] {
			relax(call, c.Rest[start]+c.Rest[in.Out])
		}
	}
	for pc, in := range prog.Inst {
		if in.Op == grammar.InstMatch {
			relax(uint32(pc), 0)
		}
	}
	for q.Len() > 0 {
		e := heap.Pop(q).(costEntry)
		if done[e.pc] || e.cost != c.Rest[e.pc] {
			continue // a stale entry
		}
		done[e.pc] = true
		for _, p := range preds[e.pc] {
			relax(p.from, e.cost+p.cost)
		}
		for _, call := range callsTo[e.pc] {
			relaxCall(call)
		}
		for _, r := range startOf[e.pc] {
			for _, call := range callers[r] {
				relaxCall(call)
			}
		}
	}
	return c
}

// ruleOf returns the rule of every instruction, found by walking each
// rule from its start (calls do not enter the called rule).
func ruleOf(prog *grammar.Prog) []uint32 {
	rule := make([]uint32, len(prog.Inst))
	seen := make([]bool, len(prog.Inst))
	var stack []uint32
	for r, pr := range prog.Rules {
		stack = append(stack[:0], pr.Start)
		for len(stack) > 0 {
			pc := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[pc] {
				continue
			}
			seen[pc] = true
			rule[pc] = uint32(r)
			in := prog.Inst[pc]
			switch in.Op {
			case grammar.InstByte, grammar.InstToken, grammar.InstCall:
				stack = append(stack, in.Out)
			case grammar.InstSplit:
				stack = append(stack, in.Out, in.Arg)
			}
		}
	}
	return rule
}

type costEntry struct {
	pc   uint32
	cost int32
}

// costQueue is a min-heap of costEntry by cost.
type costQueue []costEntry

func (q costQueue) Len() int           { return len(q) }
func (q costQueue) Less(i, j int) bool { return q[i].cost < q[j].cost }
func (q costQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *costQueue) Push(x any)        { *q = append(*q, x.(costEntry)) }
func (q *costQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// CostMemo remembers, between calls of CostToEnd on one parser, what
// finishing costs after each rule invoked at each step below a mark;
// steps at or above the mark (which pushes and pops change) are priced
// afresh each time. The zero value is ready.
type CostMemo struct {
	below  int // steps below this are remembered
	stable map[uint64]int32
	fresh  map[uint64]int32
}

// Mark makes the memo remember the steps below step n, and forget what
// it knew of steps at or above it.
func (m *CostMemo) Mark(n int) {
	if m.stable == nil {
		m.stable = map[uint64]int32{}
	}
	if n < m.below {
		for k := range m.stable {
			if int(k>>32) >= n {
				delete(m.stable, k)
			}
		}
	}
	m.below = n
}

// priced marks, in a memo table, a step whose rules are all priced.
const priced = 1<<32 - 1

// CostToEnd returns the fewest units (priced by c) that finish the
// parse from the current step: 0 when the input may end here, NoCost
// when nothing can finish it.
func (ps *Parser) CostToEnd(c *Costs, memo *CostMemo) int32 {
	if memo.fresh == nil {
		memo.fresh = map[uint64]int32{}
	}
	if memo.stable == nil {
		memo.stable = map[uint64]int32{}
	}
	clear(memo.fresh)
	best := NoCost
	for _, it := range ps.set(ps.top()) {
		if r := c.Rest[it.pc]; r < best {
			best = min(best, r+ps.after(c, memo, int(it.origin), c.Rule[it.pc]))
		}
	}
	return min(best, NoCost)
}

// after returns the fewest units that finish the parse once rule,
// invoked at step origin, has matched.
func (ps *Parser) after(c *Costs, memo *CostMemo, origin int, rule uint32) int32 {
	tab := memo.fresh
	if origin < memo.below {
		tab = memo.stable
	}
	step := uint64(origin) << 32
	if _, ok := tab[step|priced]; !ok {
		ps.priceStep(c, memo, tab, origin)
	}
	if v, ok := tab[step|uint64(rule)]; ok {
		return v
	}
	return NoCost
}

// priceStep prices, into tab, finishing after every rule invoked at step
// k: through each call item of the step, the way on after the call plus
// what finishing costs after the calling rule. A caller invoked at an
// earlier step is priced there (recursively); callers invoked at k itself
// (a rule that calls another at its very start) are relaxed in rounds
// until nothing changes.
func (ps *Parser) priceStep(c *Costs, memo *CostMemo, tab map[uint64]int32, k int) {
	step := uint64(k) << 32
	val := func(rule uint32) int32 {
		if v, ok := tab[step|uint64(rule)]; ok {
			return v
		}
		return NoCost
	}
	lower := func(rule uint32, v int32) bool {
		if v < val(rule) {
			tab[step|uint64(rule)] = v
			return true
		}
		return false
	}
	if k == 0 {
		lower(uint32(ps.prog.Start), 0)
	}
	calls := ps.callsOf(k)
	for _, w := range calls {
		if int(w.origin) < k {
			out := c.Rest[ps.prog.Inst[w.pc].Out]
			lower(w.call-1, out+ps.after(c, memo, int(w.origin), c.Rule[w.pc]))
		}
	}
	for changed := true; changed; {
		changed = false
		for _, w := range calls {
			if int(w.origin) == k {
				out := c.Rest[ps.prog.Inst[w.pc].Out]
				if v := val(c.Rule[w.pc]); v < NoCost && lower(w.call-1, out+v) {
					changed = true
				}
			}
		}
	}
	tab[step|priced] = 0
}
