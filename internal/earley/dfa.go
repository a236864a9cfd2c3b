package earley

import (
	"slices"

	"github.com/reins-go/reins/grammar"
)

// Origins of a LocalDFA item that are not another state.
const (
	dfaOuter int32 = -1 // the rule began below the walk's first step
	dfaHere  int32 = -2 // the rule began at this state
)

// dfaItem is an Earley item of a LocalDFA state. Its origin is dfaOuter,
// dfaHere or the id of the state the rule began at.
type dfaItem struct {
	pc     uint32
	origin int32
}

// dfaState is one state: its byte and call items, and its transitions
// as they are learnt.
type dfaState struct {
	items []dfaItem
	next  *[256]uint32 // 0 unknown, dfaRefused, or (id+2)<<1 | tainted
	cuts  []byte       // for Absorbs: the bytes where a byte item begins or ends+1, sorted; nil until needed
}

const dfaRefused = 1

// LocalDFA is a parser's local view turned into a deterministic
// automaton over bytes, built lazily. The local view of a step sees only
// that step's items, not the sets below it: completing a rule that began
// below is not looked up but marks the walk as depending on context
// (tainted). A state is what Earley's algorithm would hold after some
// bytes pushed from a starting step, with each item's origin either below
// that step (outer), at the state itself, or an earlier state of the same
// walk. Since a state names
// the states its rules began at, equal states have equal futures, and a
// transition is computed once however many tokens of a trie walk, or
// walks, take it.
//
// A LocalDFA grows as it is used and is not safe for concurrent use.
type LocalDFA struct {
	prog   *grammar.Prog
	states []dfaState
	index  map[uint64][]int32 // states by stateHash of their items
	// scratch for building a state
	items []dfaItem
	seen  keySet
	taint bool
	// scratch for Absorbs
	absorbSeen map[absorbKey]bool
	absorbWork []absorbKey
	// absorbsAll marks the states proven to absorb text of any length
	// over absorbASCII (every state such text reaches from one that
	// absorbs it absorbs it too).
	absorbsAll  map[int32]bool
	absorbASCII [2]uint64
}

// NewLocalDFA returns an empty automaton for p.
func NewLocalDFA(p *grammar.Prog) *LocalDFA {
	return &LocalDFA{prog: p, index: map[uint64][]int32{}}
}

// States returns how many states have been built.
func (d *LocalDFA) States() int { return len(d.states) }

// Start returns the state of ps's current step as a local parser sees it
// (the same key as Signature).
func (d *LocalDFA) Start(ps *Parser) int32 {
	cur := uint32(ps.top())
	d.begin()
	for _, it := range ps.set(int(cur)) {
		o := dfaOuter
		if it.origin == cur {
			o = dfaHere
		}
		d.keep(dfaItem{it.pc, o})
	}
	return d.intern()
}

// Step returns the state after byte b from state s, and whether reaching
// it completed a rule that began below the walk's first step (the walk
// depends on context from there on). A negative state means b is
// refused.
func (d *LocalDFA) Step(s int32, b byte) (int32, bool) {
	if t := d.states[s].next; t != nil {
		if v := t[b]; v != 0 {
			if v == dfaRefused {
				return -1, false
			}
			return int32(v>>1) - 2, v&1 != 0
		}
	}
	return d.step(s, b)
}

// step computes and records a transition.
func (d *LocalDFA) step(s int32, b byte) (int32, bool) {
	d.begin()
	for _, it := range d.states[s].items {
		in := &d.prog.Inst[it.pc]
		if in.Op == grammar.InstByte && in.Lo <= b && b <= in.Hi {
			o := it.origin
			if o == dfaHere {
				o = s
			}
			d.add(in.Out, o)
		}
	}
	v := uint32(dfaRefused)
	next, taint := int32(-1), false
	if len(d.items) > 0 {
		d.close()
		taint = d.taint
		next = d.intern()
		v = uint32(next+2) << 1
		if taint {
			v |= 1
		}
	}
	// Every byte matched by the same byte items as b leads to the same
	// state: record the transition for all of them at once.
	hi := d.uniformTo(s, b, 0xFF)
	st := &d.states[s]
	lo := byte(0)
	if i, found := slices.BinarySearch(st.cuts, b); found {
		lo = b
	} else if i > 0 {
		lo = st.cuts[i-1]
	}
	if st.next == nil {
		st.next = new([256]uint32)
	}
	for x := int(lo); x <= int(hi); x++ {
		st.next[x] = v
	}
	return next, taint
}

func (d *LocalDFA) begin() {
	d.items = d.items[:0]
	d.seen.Reset()
	d.taint = false
}

// keep records an item of the state being built, once.
func (d *LocalDFA) keep(it dfaItem) {
	if d.seen.Add(it.key()) {
		d.items = append(d.items, it)
	}
}

func (it dfaItem) key() uint64 { return uint64(it.pc)<<32 | uint64(uint32(it.origin)) }

// add adds an item to the state being built, following splits.
func (d *LocalDFA) add(pc uint32, origin int32) {
	for {
		in := &d.prog.Inst[pc]
		if in.Op == grammar.InstFail {
			return
		}
		if in.Op != grammar.InstSplit {
			d.keep(dfaItem{pc, origin})
			return
		}
		if !d.seen.Add(dfaItem{pc, origin}.key()) {
			return
		}
		d.add(in.Out, origin)
		pc = in.Arg
	}
}

// close predicts and completes over the state being built, as
// Parser.close does, with origins as states.
func (d *LocalDFA) close() {
	for k := 0; k < len(d.items); k++ {
		it := d.items[k]
		in := &d.prog.Inst[it.pc]
		switch in.Op {
		case grammar.InstCall:
			r := &d.prog.Rules[in.Arg]
			d.add(r.Start, dfaHere)
			if r.Nullable {
				d.add(in.Out, it.origin)
			}
		case grammar.InstMatch:
			switch it.origin {
			case dfaHere:
				// an empty completion: callers stepped over it
			case dfaOuter:
				d.taint = true
			default:
				a := it.origin
				for _, w := range d.states[a].items {
					win := &d.prog.Inst[w.pc]
					if win.Op == grammar.InstCall && win.Arg == in.Arg {
						o := w.origin
						if o == dfaHere {
							o = a
						}
						d.add(win.Out, o)
					}
				}
			}
		}
	}
}

// intern returns the id of the state being built, adding it if new.
// Only byte and call items are kept: the others neither consume bytes
// nor are looked up by completions. States are found by a hash that does
// not depend on the items' order, and told apart by the set of items
// just built (seen), so that no sort is needed.
func (d *LocalDFA) intern() int32 {
	var h uint64
	n := 0
	for _, it := range d.items {
		if op := d.prog.Inst[it.pc].Op; op == grammar.InstByte || op == grammar.InstCall {
			h += mix64(it.key())
			n++
		}
	}
	h = mix64(h + uint64(n))
	for _, id := range d.index[h] {
		if d.isBuilt(id, n) {
			return id
		}
	}
	items := make([]dfaItem, 0, n)
	for _, it := range d.items {
		if op := d.prog.Inst[it.pc].Op; op == grammar.InstByte || op == grammar.InstCall {
			items = append(items, it)
		}
	}
	id := int32(len(d.states))
	d.states = append(d.states, dfaState{items: items})
	d.index[h] = append(d.index[h], id)
	return id
}

// isBuilt reports whether state id holds exactly the n byte and call
// items of the state being built.
func (d *LocalDFA) isBuilt(id int32, n int) bool {
	items := d.states[id].items
	if len(items) != n {
		return false
	}
	for _, it := range items {
		if !d.seen.Has(it.key()) {
			return false
		}
	}
	return true
}

// mix64 is splitmix64's finaliser: it spreads a key's bits, so that sums
// of mixed keys rarely collide.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	return x ^ x>>31
}

// absorbKey is a step of Absorbs: a state, and where in a UTF-8
// sequence the text is.
type absorbKey struct {
	s     int32
	seq   uint8
	chars int32 // characters begun, when counted
}

// UTF-8 positions for Absorbs: at a character boundary, or expecting
// continuation bytes (the ranges of the well-formed table of Unicode
// 3.9, D92).
const (
	seqStart uint8 = iota
	seqCont1       // one more 80-BF
	seqCont2       // two more
	seqCont3       // three more
	seqE0          // A0-BF, then one more
	seqED          // 80-9F, then one more
	seqF0          // 90-BF, then two more
	seqF4          // 80-8F, then two more
)

type seqEdge struct {
	lo, hi byte
	next   uint8
}

var seqEdges = [...][]seqEdge{
	seqStart: {{0xC2, 0xDF, seqCont1}, {0xE0, 0xE0, seqE0}, {0xE1, 0xEC, seqCont2}, {0xED, 0xED, seqED}, {0xEE, 0xEF, seqCont2}, {0xF0, 0xF0, seqF0}, {0xF1, 0xF3, seqCont3}, {0xF4, 0xF4, seqF4}},
	seqCont1: {{0x80, 0xBF, seqStart}},
	seqCont2: {{0x80, 0xBF, seqCont1}},
	seqCont3: {{0x80, 0xBF, seqCont2}},
	seqE0:    {{0xA0, 0xBF, seqCont1}},
	seqED:    {{0x80, 0x9F, seqCont1}},
	seqF0:    {{0x90, 0xBF, seqCont2}},
	seqF4:    {{0x80, 0x8F, seqCont2}},
}

// absorbLimit bounds the steps Absorbs explores before it gives up, and
// absorbDepth how many characters deep it goes when the length is
// unbounded: text of any length is absorbed by a loop, which closes
// within a few characters (or a few property names' length), while a
// chain that goes on is a bounded string, which cannot absorb it.
const (
	absorbLimit = 1024
	absorbDepth = 64
)

// Absorbs reports whether every well-formed UTF-8 text of at most
// maxChars characters (any number when maxChars < 0) whose ASCII bytes
// are in ascii (a 128-bit set) is accepted from state s without reaching
// the end of a rule that began before the walk: then every token made of
// such text is allowed from s whatever the context, and a trie walk can
// take them all at once (llguidance's "slices"). It may answer false for
// a state that does absorb them (after absorbLimit steps, say), never
// true for one that does not.
func (d *LocalDFA) Absorbs(s int32, ascii [2]uint64, maxChars int) bool {
	ok, _ := d.AbsorbsOrRefuses(s, ascii, maxChars)
	return ok
}

// AbsorbsOrRefuses is Absorbs, and when it answers false because some
// such text of n characters is refused (or ends a rule that began before
// the walk), that n: no bound of n or more is absorbed either, so a
// caller trying several bounds can skip those. n is 0 when the walk gave
// up at a limit instead.
func (d *LocalDFA) AbsorbsOrRefuses(s int32, ascii [2]uint64, maxChars int) (bool, int) {
	if ascii != d.absorbASCII {
		d.absorbASCII, d.absorbsAll = ascii, map[int32]bool{}
	}
	if d.absorbsAll == nil {
		d.absorbsAll = map[int32]bool{}
	}
	if d.absorbsAll[s] {
		return true, 0 // also within any bound
	}
	if d.absorbSeen == nil {
		d.absorbSeen = map[absorbKey]bool{}
	}
	clear(d.absorbSeen)
	work := append(d.absorbWork[:0], absorbKey{s, seqStart, 0})
	d.absorbSeen[work[0]] = true
	defer func() { d.absorbWork = work[:0] }()
	var edges []seqEdge
	for i := 0; i < len(work); i++ { // breadth first, so depths are shortest
		k := work[i]
		edges = edges[:0]
		if k.seq == seqStart && maxChars >= 0 && int(k.chars) >= maxChars {
			continue
		}
		if k.seq == seqStart {
			for lo := 0; lo < 128; {
				if ascii[lo/64]&(1<<(lo%64)) == 0 {
					lo++
					continue
				}
				hi := lo
				for hi+1 < 128 && ascii[(hi+1)/64]&(1<<((hi+1)%64)) != 0 {
					hi++
				}
				edges = append(edges, seqEdge{byte(lo), byte(hi), seqStart})
				lo = hi + 1
			}
		}
		edges = append(edges, seqEdges[k.seq]...)
		for _, e := range edges {
			// Split the edge where the state's byte items begin or end,
			// so that each piece leads to one state.
			for lo := int(e.lo); lo <= int(e.hi); {
				hi := d.uniformTo(k.s, byte(lo), e.hi)
				n, taint := d.Step(k.s, byte(lo))
				if n < 0 || taint {
					refused := int(k.chars) // the character this byte is part of, counted
					if k.seq == seqStart {
						refused++
					}
					return false, refused
				}
				nk := absorbKey{n, e.next, k.chars}
				if k.seq == seqStart {
					nk.chars++
				}
				if nk.seq == seqStart && d.absorbsAll[n] {
					lo = int(hi) + 1
					continue // proven before: whatever follows is absorbed
				}
				seen := nk
				if maxChars < 0 {
					seen.chars = 0 // the state alone decides what follows
				}
				if !d.absorbSeen[seen] {
					if len(d.absorbSeen) >= absorbLimit {
						return false, 0
					}
					if maxChars < 0 && nk.chars > absorbDepth {
						return false, 0
					}
					d.absorbSeen[seen] = true
					work = append(work, nk)
				}
				lo = int(hi) + 1
			}
		}
	}
	if maxChars < 0 {
		for _, k := range work {
			if k.seq == seqStart {
				d.absorbsAll[k.s] = true
			}
		}
	}
	return true, 0
}

// uniformTo returns the last byte up to hi such that every byte from lo
// to it is matched by the same byte items of state s, and so leads to
// the same state.
func (d *LocalDFA) uniformTo(s int32, lo, hi byte) byte {
	st := &d.states[s]
	if st.cuts == nil {
		var cuts []byte
		for _, it := range st.items {
			if in := &d.prog.Inst[it.pc]; in.Op == grammar.InstByte {
				cuts = append(cuts, in.Lo)
				if in.Hi < 0xFF {
					cuts = append(cuts, in.Hi+1)
				}
			}
		}
		slices.Sort(cuts)
		st.cuts = slices.Compact(cuts)
		if st.cuts == nil {
			st.cuts = []byte{} // computed, and empty
		}
	}
	if lo == 0xFF {
		return hi
	}
	// The first cut above lo ends the run.
	if i, _ := slices.BinarySearch(st.cuts, lo+1); i < len(st.cuts) && st.cuts[i] <= hi {
		return st.cuts[i] - 1
	}
	return hi
}
