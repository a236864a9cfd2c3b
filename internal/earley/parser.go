package earley

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/reins-go/reins/grammar"
)

// item is an Earley item: instruction pc of some rule, which that rule's
// current invocation entered at set origin. Only items at instructions
// that consume input (byte, token), wait for a rule (call) or end a rule
// (match) are stored; splits are followed as they are added.
type item struct {
	pc     uint32
	origin uint32
	// call is the rule a call item waits for, plus one (0 for other
	// items): a completion scans its origin set for its callers, and
	// reading this beside the item is much cheaper than looking up each
	// instruction.
	call uint32
}

// Parser recognises a Prog's language byte by byte with Earley's
// algorithm. It keeps one Earley set per step; Push adds a set, Pop
// removes sets, so a speculative walk (a token trie, say) pushes bytes and
// pops back. A Parser is not safe for concurrent use; many may share one
// Prog.
//
// Each step has a work budget (SetStepBudget), and a job may bound the
// work of many steps (SetWorkLimit): an ambiguous grammar makes Earley's
// algorithm cubic, and the budget stops it with an error (Err) instead
// of running for minutes.
type Parser struct {
	prog *grammar.Prog
	// The live sets, base onwards, kept whole: items holds their items,
	// set after set, and sets[k] is where set base+k starts.
	items []item
	sets  []uint32
	base  uint32
	// calls holds the live sets' call items again, set after set, and
	// callAt[k] is where set base+k's start: a completion scans only the
	// calls of its origin set.
	calls  []item
	callAt []uint32
	// The committed sets, before base, keep only their call items: the
	// only ones a later completion looks up. cSet lists, in increasing
	// order, the committed sets that have any, and cOff where each starts
	// in cItems.
	cItems []item
	cSet   []uint32
	cOff   []uint32
	gcAt   int    // collect when cItems grows past this
	ckeep  []bool // scratch for collect
	// built deduplicates the items of the set being built.
	built itemSet
	// predicted marks the rules predicted at the set being built, whose
	// closures preds (when set) holds.
	predicted pcStamps
	preds     *Predictions
	buildAt   uint32 // index of the set being built
	kernel    []item // scratch for AdvanceToken
	// The call-items keys of sets for ContextKey, from ctxTab: ctxLive
	// by live set, ctxCommitted by committed set (as cSet); 0 unknown.
	ctxTab       *ContextTable
	ctxLive      []uint32
	ctxCommitted []uint32
	ctxBuf       []uint32
	ctxPairs     []uint64
	ctxSorted    []uint64 // scratch for a key's pairs, sorted
	// ctxLast is the key ContextKey returned last (0 none), and
	// ctxLastPairs its state's items, unsorted, as ContextKey listed
	// them: a state that lists the same has the same key, found without
	// sorting and interning (a string's characters, one after another).
	ctxLast      uint32
	ctxLastPairs []uint64
	// The work budget: left is what remains of budget for the set being
	// built, less the call items its completions have scanned; a set
	// that goes below 0 is abandoned, and err says so (see Err). total
	// sums the work of every set built since Reset.
	left   int
	budget int
	total  int64
	limit  int64 // on total (SetWorkLimit)
	err    error
}

// NewParser returns a parser at the start of p's language, with the
// DefaultStepBudget.
func NewParser(p *grammar.Prog) *Parser {
	ps := &Parser{prog: p, budget: DefaultStepBudget, limit: math.MaxInt64}
	ps.Reset()
	return ps
}

// Reset returns the parser to the start of the language, and clears the
// error Err reports.
func (ps *Parser) Reset() {
	ps.err, ps.total = nil, 0
	ps.items = ps.items[:0]
	ps.sets = append(ps.sets[:0], 0)
	ps.calls, ps.callAt = ps.calls[:0], append(ps.callAt[:0], 0)
	ps.base, ps.gcAt = 0, 0
	ps.cItems, ps.cSet, ps.cOff = ps.cItems[:0], ps.cSet[:0], ps.cOff[:0]
	ps.ctxLive, ps.ctxCommitted = ps.ctxLive[:0], ps.ctxCommitted[:0]
	ps.begin(0)
	ps.add(ps.prog.Rules[ps.prog.Start].Start, 0)
	ps.close(0)
}

// Len returns the number of steps taken (pushed bytes and tokens).
func (ps *Parser) Len() int { return ps.top() }

// top returns the index of the current set.
func (ps *Parser) top() int { return int(ps.base) + len(ps.sets) - 1 }

// Base returns the oldest step Pop and Truncate can return to: Commit
// moves it up to the current step.
func (ps *Parser) Base() int { return int(ps.base) }

// Pop undoes the last n steps; it cannot go below Base.
func (ps *Parser) Pop(n int) {
	if n <= 0 {
		return
	}
	if n > len(ps.sets)-1 {
		panic(fmt.Sprintf("grammar: Pop(%d) below the committed base", n))
	}
	k := len(ps.sets) - n
	ps.items = ps.items[:ps.sets[k]]
	ps.sets = ps.sets[:k]
	ps.calls = ps.calls[:ps.callAt[k]]
	ps.callAt = ps.callAt[:k]
	if len(ps.ctxLive) > k {
		ps.ctxLive = ps.ctxLive[:k]
	}
}

// Truncate undoes steps until Len() is n: a snapshot is just a length.
func (ps *Parser) Truncate(n int) { ps.Pop(ps.Len() - n) }

// set returns the items of set i; of a committed set, its call items.
func (ps *Parser) set(i int) []item {
	if i >= int(ps.base) {
		from, to := span(ps.sets, i-int(ps.base), len(ps.items))
		return ps.items[from:to]
	}
	j, found := slices.BinarySearch(ps.cSet, uint32(i))
	if !found {
		return nil
	}
	from, to := span(ps.cOff, j, len(ps.cItems))
	return ps.cItems[from:to]
}

// span returns where entry k of a list kept set after set begins and
// ends: offs[k] to offs[k+1], the last entry to n.
func span(offs []uint32, k, n int) (uint32, uint32) {
	if k+1 < len(offs) {
		return offs[k], offs[k+1]
	}
	return offs[k], uint32(n)
}

// callsOf returns the call items of set i.
func (ps *Parser) callsOf(i int) []item {
	if i >= int(ps.base) {
		from, to := span(ps.callAt, i-int(ps.base), len(ps.calls))
		return ps.calls[from:to]
	}
	return ps.set(i) // a committed set keeps only its call items
}

// Commit compacts every set before the current one; see CommitTo.
func (ps *Parser) Commit() { ps.CommitTo(ps.top()) }

// CommitTo compacts every set before step n to its call items, which is
// all that parsing on needs; Pop and Truncate can then no longer go back
// before step n. It keeps a long parse's state proportional to its open
// rule invocations rather than to its length.
func (ps *Parser) CommitTo(n int) {
	last := n - int(ps.base)
	if last <= 0 {
		return
	}
	if last >= len(ps.sets) {
		panic(fmt.Sprintf("grammar: CommitTo(%d) beyond the current step %d", n, ps.top()))
	}
	for k := range last {
		off := len(ps.cItems)
		ps.cItems = append(ps.cItems, ps.calls[ps.callAt[k]:ps.callAt[k+1]]...)
		if len(ps.cItems) > off {
			ps.cSet = append(ps.cSet, ps.base+uint32(k))
			ps.cOff = append(ps.cOff, uint32(off))
			var key uint32
			if k < len(ps.ctxLive) {
				key = ps.ctxLive[k]
			}
			for len(ps.ctxCommitted) < len(ps.cSet)-1 {
				ps.ctxCommitted = append(ps.ctxCommitted, 0)
			}
			ps.ctxCommitted = append(ps.ctxCommitted, key)
		}
	}
	if len(ps.ctxLive) > last {
		ps.ctxLive = ps.ctxLive[:copy(ps.ctxLive, ps.ctxLive[last:])]
	} else {
		ps.ctxLive = ps.ctxLive[:0]
	}
	shift := ps.sets[last]
	n2 := copy(ps.items, ps.items[shift:])
	ps.items = ps.items[:n2]
	m := copy(ps.sets, ps.sets[last:])
	ps.sets = ps.sets[:m]
	for i := range ps.sets {
		ps.sets[i] -= shift
	}
	cshift := ps.callAt[last]
	ps.calls = ps.calls[:copy(ps.calls, ps.calls[cshift:])]
	ps.callAt = ps.callAt[:copy(ps.callAt, ps.callAt[last:])]
	for i := range ps.callAt {
		ps.callAt[i] -= cshift
	}
	ps.base += uint32(last)
	if len(ps.cItems) > ps.gcAt {
		ps.collect()
		ps.gcAt = 2*len(ps.cItems) + 64
	}
}

// collect drops the committed sets that no completion can reach: a set
// is looked up only as the origin of an item that completes, and the
// items that can still complete are the live ones and, through their
// origins, the committed call items they may return to. It compacts in
// place and allocates nothing once its scratch has grown.
func (ps *Parser) collect() {
	ps.ckeep = slices.Grow(ps.ckeep[:0], len(ps.cSet))[:len(ps.cSet)]
	clear(ps.ckeep)
	mark := func(origin uint32) {
		if origin < ps.base {
			if j, ok := slices.BinarySearch(ps.cSet, origin); ok {
				ps.ckeep[j] = true
			}
		}
	}
	for _, it := range ps.items {
		mark(it.origin)
	}
	for j := len(ps.cSet) - 1; j >= 0; j-- {
		if ps.ckeep[j] {
			from, to := span(ps.cOff, j, len(ps.cItems))
			for _, it := range ps.cItems[from:to] {
				mark(it.origin)
			}
		}
	}
	w, k := 0, 0
	for j := range ps.cSet {
		if !ps.ckeep[j] {
			continue
		}
		from, to := span(ps.cOff, j, len(ps.cItems))
		copy(ps.cItems[w:], ps.cItems[from:to])
		ps.cSet[k], ps.cOff[k] = ps.cSet[j], uint32(w)
		if j < len(ps.ctxCommitted) { // k <= j
			ps.ctxCommitted[k] = ps.ctxCommitted[j]
		} else if k < len(ps.ctxCommitted) {
			ps.ctxCommitted[k] = 0
		}
		w += int(to - from)
		k++
	}
	ps.cItems, ps.cSet, ps.cOff = ps.cItems[:w], ps.cSet[:k], ps.cOff[:k]
	ps.ctxCommitted = ps.ctxCommitted[:min(k, len(ps.ctxCommitted))]
}

// StateBytes returns the memory the parse state occupies, in bytes.
func (ps *Parser) StateBytes() int {
	const itemBytes = int(unsafe.Sizeof(item{}))
	return itemBytes*(cap(ps.items)+cap(ps.calls)+cap(ps.cItems)+cap(ps.kernel)) +
		4*(cap(ps.sets)+cap(ps.callAt)+cap(ps.cSet)+cap(ps.cOff)+cap(ps.ctxLive)+cap(ps.ctxCommitted)) + ps.built.Bytes()
}

// Push consumes byte b. It returns false, and changes nothing, when b
// cannot continue the parse, and also when the step would go over the
// work budget or the parser has failed before: Err tells these apart.
func (ps *Parser) Push(b byte) bool {
	if ps.err != nil {
		return false
	}
	cur := ps.top()
	start := uint32(len(ps.items))
	ps.sets = append(ps.sets, start)
	ps.callAt = append(ps.callAt, uint32(len(ps.calls)))
	ps.begin(uint32(cur + 1))
	for _, it := range ps.set(cur) {
		in := &ps.prog.Inst[it.pc]
		if in.Op == grammar.InstByte && in.Lo <= b && b <= in.Hi {
			ps.add(in.Out, it.origin)
		}
	}
	return ps.finish(start)
}

func (ps *Parser) finish(start uint32) bool {
	if uint32(len(ps.items)) != start {
		ps.close(start)
		if ps.err == nil {
			ps.total += int64(ps.budget-ps.left) + int64(uint32(len(ps.items))-start)
			if ps.total <= ps.limit {
				return true
			}
			ps.overLimit(start)
		}
		ps.items = ps.items[:start] // abandoned over the budget
	}
	ps.sets = ps.sets[:len(ps.sets)-1]
	ps.calls = ps.calls[:ps.callAt[len(ps.callAt)-1]]
	ps.callAt = ps.callAt[:len(ps.callAt)-1]
	return false
}

// begin starts deduplication, and the work count, for the set being
// built.
func (ps *Parser) begin(set uint32) {
	ps.buildAt = set
	ps.built.reset(len(ps.prog.Inst))
	if ps.preds != nil {
		ps.predicted.reset(len(ps.prog.Rules))
	}
	ps.left = ps.budget
}

// add adds item (pc, origin) to the set being built, following splits.
func (ps *Parser) add(pc, origin uint32) {
	for {
		in := &ps.prog.Inst[pc]
		if in.Op == grammar.InstFail {
			return
		}
		if !ps.built.add(pc, origin) {
			return
		}
		if in.Op != grammar.InstSplit {
			it := item{pc: pc, origin: origin}
			if in.Op == grammar.InstCall {
				it.call = in.Arg + 1
				ps.calls = append(ps.calls, it)
			}
			ps.items = append(ps.items, it)
			return
		}
		ps.add(in.Out, origin)
		pc = in.Arg
	}
}

// SetPredictions makes the parser add predicted items from pr, the
// shared prediction closures of its program (nil: follow the program).
func (ps *Parser) SetPredictions(pr *Predictions) {
	ps.preds = pr
	if pr != nil {
		ps.predicted.reset(len(ps.prog.Rules))
	}
}

// predict adds the items predicting rule (which starts at start) adds
// to the set being built, cur.
func (ps *Parser) predict(rule, start, cur uint32) {
	if ps.preds == nil {
		ps.add(start, cur)
		return
	}
	if !ps.predicted.add(rule) {
		return
	}
	c, ok := ps.preds.closure(rule)
	if !ok {
		ps.add(start, cur)
		return
	}
	for _, c := range c {
		if !ps.built.add(c.pc, cur) {
			continue
		}
		it := item{pc: c.pc, origin: cur}
		if c.op == grammar.InstCall {
			ps.predicted.add(c.arg)
			it.call = c.arg + 1
			ps.calls = append(ps.calls, it)
		}
		ps.items = append(ps.items, it)
	}
}

// close runs prediction and completion over the items of the set being
// built, from index from on, until nothing new is added. It stops, and
// sets err, when the set's work passes the budget.
func (ps *Parser) close(from uint32) {
	cur := ps.buildAt
	for k := from; k < uint32(len(ps.items)); k++ {
		it := ps.items[k]
		in := &ps.prog.Inst[it.pc]
		switch in.Op {
		case grammar.InstCall:
			r := &ps.prog.Rules[in.Arg]
			ps.predict(in.Arg, r.Start, cur)
			if r.Nullable { // Aycock–Horspool: step over a rule that can be empty
				ps.add(in.Out, it.origin)
			}
		case grammar.InstMatch:
			rule := in.Arg
			if it.origin == cur {
				continue // an empty completion: callers stepped over it when they predicted
			}
			calls := ps.callsOf(int(it.origin))
			if ps.left -= len(calls); ps.left < 0 {
				ps.overBudget()
				return
			}
			for _, w := range calls {
				if w.call == rule+1 {
					ps.add(ps.prog.Inst[w.pc].Out, w.origin)
				}
			}
		}
	}
}

// CanEnd reports whether the input so far is a whole sentence.
func (ps *Parser) CanEnd() bool {
	for _, it := range ps.set(ps.top()) {
		in := &ps.prog.Inst[it.pc]
		if in.Op == grammar.InstMatch && it.origin == 0 && int(in.Arg) == ps.prog.Start {
			return true
		}
	}
	return false
}

// Next describes what may come next: the bytes that can be pushed (a
// 256-bit set), and whether a token terminal is waiting.
func (ps *Parser) Next() (bytes [4]uint64, token bool) {
	for _, it := range ps.set(ps.top()) {
		in := &ps.prog.Inst[it.pc]
		switch in.Op {
		case grammar.InstByte:
			for c := int(in.Lo); c <= int(in.Hi); c++ {
				bytes[c>>6] |= 1 << (c & 63)
			}
		case grammar.InstToken:
			token = true
		}
	}
	return bytes, token
}

// AdvanceToken consumes one token: its text byte by byte, and at the
// same time the token itself for the grammar's token terminals (inSet
// reports whether it is in token set k; nil when no set holds it). The
// two paths are merged into one step. It returns false, and changes
// nothing, when neither path accepts the token.
func (ps *Parser) AdvanceToken(text []byte, inSet func(set int) bool) bool {
	if ps.err != nil {
		return false
	}
	cur := ps.top()
	ps.kernel = ps.kernel[:0]
	if inSet != nil && len(ps.prog.TokenSets) > 0 {
		items := ps.set(cur)
		for _, it := range items {
			in := &ps.prog.Inst[it.pc]
			if in.Op == grammar.InstToken && inSet(int(in.Arg)) {
				ps.kernel = append(ps.kernel, item{pc: in.Out, origin: it.origin})
			}
		}
		ps.total += int64(len(items)) // the set scanned for token terminals
	}
	n := 0
	for _, b := range text {
		if !ps.Push(b) {
			break
		}
		n++
	}
	bytesOK := len(text) > 0 && n == len(text)
	if !bytesOK {
		ps.Pop(n)
	}
	if len(ps.kernel) == 0 || ps.err != nil {
		return bytesOK
	}
	if bytesOK {
		// Merge into the set the bytes built; its dedup marks are current.
		from, left := uint32(len(ps.items)), ps.left
		for _, k := range ps.kernel {
			ps.add(k.pc, k.origin)
		}
		ps.close(from)
		if ps.err == nil {
			// The merge's work counts toward the whole job's limit too.
			ps.total += int64(left-ps.left) + int64(uint32(len(ps.items))-from)
			if ps.total > ps.limit {
				ps.err = &BudgetError{Step: int(ps.buildAt), Work: ps.total, Budget: ps.limit, Whole: true}
			}
		}
		if ps.err != nil {
			ps.Pop(n)
			return false
		}
		return true
	}
	start := uint32(len(ps.items))
	ps.sets = append(ps.sets, start)
	ps.callAt = append(ps.callAt, uint32(len(ps.calls)))
	ps.begin(uint32(cur + 1))
	for _, k := range ps.kernel {
		ps.add(k.pc, k.origin)
	}
	return ps.finish(start)
}

// WaitingTokenSets calls fn for each token set a token terminal waits
// for at the current step.
func (ps *Parser) WaitingTokenSets(fn func(set int)) {
	for _, it := range ps.set(ps.top()) {
		if in := &ps.prog.Inst[it.pc]; in.Op == grammar.InstToken {
			fn(int(in.Arg))
		}
	}
}

// CopyFrom makes ps an independent copy of other's state (both must run
// the same Prog).
func (ps *Parser) CopyFrom(other *Parser) {
	ps.prog = other.prog
	ps.items = append(ps.items[:0], other.items...)
	ps.sets = append(ps.sets[:0], other.sets...)
	ps.calls = append(ps.calls[:0], other.calls...)
	ps.callAt = append(ps.callAt[:0], other.callAt...)
	ps.base = other.base
	ps.cItems = append(ps.cItems[:0], other.cItems...)
	ps.cSet = append(ps.cSet[:0], other.cSet...)
	ps.cOff = append(ps.cOff[:0], other.cOff...)
	ps.gcAt = other.gcAt
	ps.ctxTab = nil // keys are computed again
	ps.SetPredictions(other.preds)
	ps.budget, ps.total, ps.limit, ps.err = other.budget, other.total, other.limit, other.err
}

// Listing appends to buf the keys of the current step's items as a
// local parser sees them (see LocalDFA), in the order the step holds
// them: each item's instruction, and whether its rule began at this
// step or before. Sorted and without repeats, they are the step's
// signature: two steps with the same signature accept the same token
// strings locally. Unsorted, a caller that remembers the last listing
// tells a step that repeats it (a string's characters, say) without
// sorting. With canon, an item's instruction pc counts as canon[pc]:
// instructions a caller knows to be alike for its purpose share a key
// (see grammar.RepeatCopies).
func (ps *Parser) Listing(buf []uint32, canon []uint32) []uint32 {
	cur := uint32(ps.top())
	for _, it := range ps.set(int(cur)) {
		pc := it.pc
		if canon != nil {
			pc = canon[pc]
		}
		k := pc << 1
		if it.origin == cur {
			k |= 1
		}
		buf = append(buf, k)
	}
	return buf
}
