package earley

import (
	"slices"
	"unsafe"

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

// dfaState is one state: its byte and call items (d.items[lo:hi]), the
// hash it is interned by, and whether Absorbs proved it absorbs text of
// any length over absorbASCII.
type dfaState struct {
	lo, hi  uint32
	hash    uint64
	canon   int32 // Canon's answer plus one; 0 not yet computed
	absorbs bool
}

// An entry of the transition table is 0 while unknown, else
// (id+2)<<1 | tainted, where id -1 is a refusal: one decoding for all,
// so that Step inlines.
const dfaRefused = 1 << 1

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
// Its data is flat, so that building a state allocates nothing once the
// slices have grown: the states' items in one slice, an open-addressing
// index of the states by hash, and one table of transitions with a row
// per state and a column per byte class of the program (bytes that no
// byte instruction tells apart share a column).
//
// A LocalDFA grows as it is used and is not safe for concurrent use.
type LocalDFA struct {
	prog   *grammar.Prog
	states []dfaState
	items  []dfaItem // the states' items, state after state
	index  []int32   // open addressing by hash: state id+1, 0 empty
	// trans holds the states' transitions, transChunk states to a
	// chunk: state s's on byte b is trans[s/transChunk][(s%transChunk)*
	// nclass+class[b]] (see row). Chunks, not one table, so that a
	// growing automaton never copies its table.
	trans  [][]uint32
	class  [256]uint8
	first  []byte // the first byte of each class
	nclass int
	// scratch for building a state
	build []dfaItem
	// kept are the byte and call items of build, the ones a state keeps,
	// and keptHash the sum of their keys mixed.
	kept     []dfaItem
	keptHash uint64
	seen     keySet   // the items built whose rule began at an earlier state
	here     pcStamps // those whose rule began at the state being built
	outer    pcStamps // those whose rule began below the walk
	taint    bool
	// predicted marks the rules predicted at the state being built;
	// preds holds what a prediction of each rule adds.
	predicted pcStamps
	preds     *Predictions
	// scratch for Absorbs: the steps seen, the work list, and the ASCII
	// set the states' absorbs flags hold for.
	absorbSeen  keySet
	absorbWork  []absorbKey
	absorbASCII [2]uint64
	absorbRuns  []seqEdge // absorbASCII as runs of bytes, each going on at seqStart
	// absorbSucc caches, per state and UTF-8 position (key s<<3|seq),
	// where the bytes Absorbs follows from there lead: the distinct
	// next steps, packed as state<<3|seq, at absorbPool[off:off+n] for
	// the value off<<32|n, or absorbRefuses when one of the bytes is
	// refused or ends a rule that began before the walk. A walk that
	// comes back to a state then costs its few successors, not a look
	// at every byte class.
	absorbSucc  map[uint64]uint64
	absorbPool  []uint64
	absorbEdges []seqEdge // scratch
}

// useASCII makes ascii the set Absorbs' results and caches hold for,
// dropping them when it changes.
func (d *LocalDFA) useASCII(ascii [2]uint64) {
	if ascii == d.absorbASCII && d.absorbRuns != nil {
		return
	}
	d.absorbASCII = ascii
	for i := range d.states {
		d.states[i].absorbs = false
	}
	clear(d.absorbSucc)
	d.absorbPool = d.absorbPool[:0]
	d.absorbRuns = d.absorbRuns[:0]
	for lo := 0; lo < 128; {
		if ascii[lo/64]&(1<<(lo%64)) == 0 {
			lo++
			continue
		}
		hi := lo
		for hi+1 < 128 && ascii[(hi+1)/64]&(1<<((hi+1)%64)) != 0 {
			hi++
		}
		d.absorbRuns = append(d.absorbRuns, seqEdge{byte(lo), byte(hi), seqStart})
		lo = hi + 1
	}
	if d.absorbRuns == nil {
		d.absorbRuns = []seqEdge{} // known, and empty
	}
}

// absorbRefuses marks a cached step of Absorbs that refuses.
const absorbRefuses = ^uint64(0)

// absorbSuccessors returns the distinct next steps of Absorbs from
// state s at UTF-8 position seq, over the bytes absorbASCII and UTF-8
// allow there, computing missing transitions; ok is false when one of
// those bytes is refused, or completes a rule that began before the
// walk.
func (d *LocalDFA) absorbSuccessors(s int32, seq uint8) (succ []uint64, ok bool) {
	key := uint64(uint32(s))<<3 | uint64(seq)
	if v, hit := d.absorbSucc[key]; hit {
		if v == absorbRefuses {
			return nil, false
		}
		return d.absorbPool[v>>32:][:v&0xFFFFFFFF], true
	}
	if d.absorbSucc == nil {
		d.absorbSucc = map[uint64]uint64{}
	}
	edges := d.absorbEdges[:0]
	if seq == seqStart {
		edges = append(edges, d.absorbRuns...)
	}
	edges = append(edges, seqEdges[seq]...)
	d.absorbEdges = edges
	off := len(d.absorbPool)
	row := d.row(s)
	for _, e := range edges {
		// Take the edge a byte class at a time: each class leads to
		// one state, and a class that leads where the one before it
		// does (the same entry) adds nothing.
		prev := uint32(0)
		for c := int(d.class[e.lo]); c <= int(d.class[e.hi]); c++ {
			v := d.entry(row, s, c, e.lo)
			if v == prev {
				continue
			}
			prev = v
			next, taint := int32(v>>1)-2, v&1 != 0
			if next < 0 || taint {
				d.absorbPool = d.absorbPool[:off]
				d.absorbSucc[key] = absorbRefuses
				return nil, false
			}
			x := uint64(uint32(next))<<3 | uint64(e.next)
			if !slices.Contains(d.absorbPool[off:], x) {
				d.absorbPool = append(d.absorbPool, x)
			}
		}
	}
	d.absorbSucc[key] = uint64(off)<<32 | uint64(len(d.absorbPool)-off)
	return d.absorbPool[off:], true
}

// NewLocalDFA returns an empty automaton for p. Its byte classes are
// computed at the first Start, so that binding a grammar stays cheap.
func NewLocalDFA(p *grammar.Prog) *LocalDFA {
	return &LocalDFA{prog: p, preds: NewPredictions(p)}
}

// Bytes estimates the memory d holds: its states, their items and
// transitions, its index and Absorbs' caches. It grows as d is used, by
// as much as a vocabulary's trie walk from a new start where the parse
// counts (text that must come a fixed number of characters after
// another, say): a caller that lives long resets d past a bound.
func (d *LocalDFA) Bytes() int {
	return len(d.states)*int(unsafe.Sizeof(dfaState{})) + len(d.items)*int(unsafe.Sizeof(dfaItem{})) +
		len(d.index)*4 + len(d.trans)*transChunk*d.nclass*4 + len(d.absorbPool)*8 + len(d.absorbSucc)*24
}

// Reset forgets every state (their ids are no longer valid), keeping the
// program's byte classes and predictions. Parsers may share the
// predictions, but read them through their own pointer
// (Parser.SetPredictions), not through d, whose fields Reset writes.
func (d *LocalDFA) Reset() {
	*d = LocalDFA{prog: d.prog, preds: d.preds, class: d.class, first: d.first, nclass: d.nclass}
}

// initClasses splits the byte values into the classes no byte
// instruction of the program tells apart.
func (d *LocalDFA) initClasses() {
	var cut [257]bool
	cut[0] = true
	for i := range d.prog.Inst {
		if in := &d.prog.Inst[i]; in.Op == grammar.InstByte {
			cut[in.Lo], cut[int(in.Hi)+1] = true, true
		}
	}
	c := -1
	for b := range 256 {
		if cut[b] {
			c++
			d.first = append(d.first, byte(b))
		}
		d.class[b] = uint8(c)
	}
	d.nclass = c + 1
}

// Predictions returns the prediction closures the automaton uses, for
// parsers of the same program to share (see Parser.SetPredictions).
func (d *LocalDFA) Predictions() *Predictions { return d.preds }

// States returns how many states have been built.
func (d *LocalDFA) States() int { return len(d.states) }

// Start returns the state of ps's current step as a local parser sees it
// (the same key as Listing's signature).
func (d *LocalDFA) Start(ps *Parser) int32 {
	if d.nclass == 0 {
		d.initClasses()
	}
	cur := uint32(ps.top())
	d.begin()
	for _, it := range ps.set(int(cur)) {
		o := dfaOuter
		if it.origin == cur {
			o = dfaHere
		}
		d.keep(dfaItem{it.pc, o}, d.prog.Inst[it.pc].Op)
	}
	return d.intern()
}

// Step returns the state after byte b from state s, and whether reaching
// it completed a rule that began below the walk's first step (the walk
// depends on context from there on). A negative state means b is
// refused.
func (d *LocalDFA) Step(s int32, b byte) (int32, bool) {
	if v := d.trans[uint32(s)/transChunk][int(uint32(s)%transChunk)*d.nclass+int(d.class[b])]; v != 0 {
		return int32(v>>1) - 2, v&1 != 0
	}
	return d.step(s, b)
}

// Peek is Step when the transition is known (ok), and computes nothing
// otherwise: cheap enough to inline into a walk's inner loop, which
// calls Step only when ok is false.
func (d *LocalDFA) Peek(s int32, b byte) (next int32, taint, ok bool) {
	v := d.trans[uint32(s)/transChunk][int(uint32(s)%transChunk)*d.nclass+int(d.class[b])]
	return int32(v>>1) - 2, v&1 != 0, v != 0
}

// Canon returns the state s would be if every rule that began before s
// (at an earlier state of the walk, or below the walk) had begun below
// the walk: s's items with every origin but s itself made outer. Its
// local view is s's until one of those rules ends, where a walk from s
// goes on into the state the rule began at and a walk from Canon(s) is
// tainted instead. So a token Canon(s) accepts, s accepts; one it
// refuses untainted, s refuses; only the rest depends on where the rules
// began. States that differ only in that share their canonical state,
// and whatever is computed from it.
func (d *LocalDFA) Canon(s int32) int32 {
	if c := d.states[s].canon; c != 0 {
		return c - 1
	}
	d.begin()
	for _, it := range d.stateItems(s) {
		if it.origin != dfaHere {
			it.origin = dfaOuter
		}
		d.keep(it, d.prog.Inst[it.pc].Op)
	}
	c := d.intern()
	d.states[s].canon, d.states[c].canon = c+1, c+1
	return c
}

// stateItems returns the byte and call items of state s.
func (d *LocalDFA) stateItems(s int32) []dfaItem {
	st := &d.states[s]
	return d.items[st.lo:st.hi]
}

// step computes and records a transition, for b and every byte that
// the same byte items of s match, which leads to the same state.
func (d *LocalDFA) step(s int32, b byte) (int32, bool) {
	d.begin()
	lo, hi := 0, 0xFF // the run of bytes around b that s's byte items do not tell apart
	for _, it := range d.stateItems(s) {
		in := &d.prog.Inst[it.pc]
		if in.Op != grammar.InstByte {
			continue
		}
		switch {
		case b < in.Lo:
			hi = min(hi, int(in.Lo)-1)
		case b > in.Hi:
			lo = max(lo, int(in.Hi)+1)
		default:
			lo, hi = max(lo, int(in.Lo)), min(hi, int(in.Hi))
			o := it.origin
			if o == dfaHere {
				o = s
			}
			d.add(in.Out, o)
		}
	}
	v := uint32(dfaRefused)
	next, taint := int32(-1), false
	if len(d.build) > 0 {
		d.close()
		taint = d.taint
		next = d.intern()
		v = uint32(next+2) << 1
		if taint {
			v |= 1
		}
	}
	row := d.row(s)
	for c := d.class[lo]; ; c++ {
		row[c] = v
		if c == d.class[hi] {
			break
		}
	}
	return next, taint
}

func (d *LocalDFA) begin() {
	d.build, d.kept, d.keptHash = d.build[:0], d.kept[:0], 0
	d.seen.Reset()
	d.here.reset(len(d.prog.Inst))
	d.outer.reset(len(d.prog.Inst))
	d.predicted.reset(len(d.prog.Rules))
	d.taint = false
}

// keep records an item of the state being built, once; op is its
// instruction's.
func (d *LocalDFA) keep(it dfaItem, op grammar.InstOp) {
	if d.mark(it) {
		d.build = append(d.build, it)
		if op == grammar.InstByte || op == grammar.InstCall {
			d.kept = append(d.kept, it)
			d.keptHash += mix64(it.key())
		}
	}
}

// mark adds an item to the items seen while building a state, and
// reports whether it was new.
func (d *LocalDFA) mark(it dfaItem) bool {
	switch it.origin {
	case dfaHere:
		return d.here.add(it.pc)
	case dfaOuter:
		return d.outer.add(it.pc)
	}
	return d.seen.Add(it.key())
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
			d.keep(dfaItem{pc, origin}, in.Op)
			return
		}
		if !d.mark(dfaItem{pc, origin}) {
			return
		}
		d.add(in.Out, origin)
		pc = in.Arg
	}
}

// close predicts and completes over the state being built, as
// Parser.close does, with origins as states.
func (d *LocalDFA) close() {
	for k := 0; k < len(d.build); k++ {
		it := d.build[k]
		in := &d.prog.Inst[it.pc]
		switch in.Op {
		case grammar.InstCall:
			r := &d.prog.Rules[in.Arg]
			if d.predicted.add(in.Arg) {
				if c, ok := d.preds.closure(in.Arg); ok {
					for _, c := range c {
						if c.op == grammar.InstCall {
							d.predicted.add(c.arg)
						}
						d.keep(dfaItem{c.pc, dfaHere}, c.op)
					}
				} else {
					d.add(r.Start, dfaHere)
				}
			}
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
				for _, w := range d.stateItems(a) {
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
	n := len(d.kept)
	h := mix64(d.keptHash + uint64(n))
	if 2*(len(d.states)+1) > len(d.index) {
		d.growIndex()
	}
	mask := uint64(len(d.index) - 1)
	i := h & mask
	for ; d.index[i] != 0; i = (i + 1) & mask {
		id := d.index[i] - 1
		if st := &d.states[id]; st.hash == h && int(st.hi-st.lo) == n && d.isBuilt(id) {
			return id
		}
	}
	id := int32(len(d.states))
	d.index[i] = id + 1
	lo := uint32(len(d.items))
	d.items = append(d.items, d.kept...)
	d.states = append(d.states, dfaState{lo: lo, hi: uint32(len(d.items)), hash: h})
	if id%transChunk == 0 {
		d.trans = append(d.trans, make([]uint32, transChunk*d.nclass))
	}
	return id
}

// transChunk is how many states' transitions a chunk of trans holds.
const transChunk = 64

// row returns state s's transitions, by byte class.
func (d *LocalDFA) row(s int32) []uint32 {
	return d.trans[uint32(s)/transChunk][int(uint32(s)%transChunk)*d.nclass:][:d.nclass]
}

// entry returns row[c], state s's transition entry on byte class c,
// computing it (from c's first byte at or above lo) when not yet known.
// A row stays where it is as states are added: its chunk does not move.
func (d *LocalDFA) entry(row []uint32, s int32, c int, lo byte) uint32 {
	if row[c] == 0 {
		d.step(s, max(d.first[c], lo))
	}
	return row[c]
}

// growIndex doubles the index of states by hash.
func (d *LocalDFA) growIndex() {
	d.index = make([]int32, max(64, 2*len(d.index)))
	mask := uint64(len(d.index) - 1)
	for id := range d.states {
		i := d.states[id].hash & mask
		for d.index[i] != 0 {
			i = (i + 1) & mask
		}
		d.index[i] = int32(id) + 1
	}
}

// isBuilt reports whether state id holds exactly the byte and call
// items of the state being built (it has as many).
func (d *LocalDFA) isBuilt(id int32) bool {
	for _, it := range d.stateItems(id) {
		var ok bool
		switch it.origin {
		case dfaHere:
			ok = d.here.has(it.pc)
		case dfaOuter:
			ok = d.outer.has(it.pc)
		default:
			ok = d.seen.Has(it.key())
		}
		if !ok {
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
// chain that goes on is a bounded string, which cannot absorb it. The
// start of a key in an object of many properties and any other key
// takes a step per prefix of the names (see TestAbsorbsManyNames): on
// maskbench-dev, a limit of 4096 instead of 1024 makes the mask walks
// visit 14% fewer trie nodes in all (693M to 597M) for 3% more
// automaton states; 8192 and 16384 save 2% more.
const (
	absorbLimit = 4096
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
	d.useASCII(ascii)
	if d.states[s].absorbs {
		return true, 0 // also within any bound
	}
	seen := &d.absorbSeen
	seen.Reset()
	work := append(d.absorbWork[:0], absorbKey{s, seqStart, 0})
	seen.Add(work[0].key())
	defer func() { d.absorbWork = work[:0] }()
	for i := 0; i < len(work); i++ { // breadth first, so depths are shortest
		k := work[i]
		if k.seq == seqStart && maxChars >= 0 && int(k.chars) >= maxChars {
			continue
		}
		succ, ok := d.absorbSuccessors(k.s, k.seq)
		if !ok {
			refused := int(k.chars) // the character this byte is part of, counted
			if k.seq == seqStart {
				refused++
			}
			return false, refused
		}
		for _, x := range succ {
			n, next := int32(x>>3), uint8(x&7)
			nk := absorbKey{n, next, k.chars}
			if k.seq == seqStart {
				nk.chars++
			}
			if nk.seq == seqStart && d.states[n].absorbs {
				continue // proven before: whatever follows is absorbed
			}
			sk := nk
			if maxChars < 0 {
				sk.chars = 0 // the state alone decides what follows
			}
			if !seen.Has(sk.key()) {
				if seen.Len() >= absorbLimit {
					return false, 0
				}
				if maxChars < 0 && nk.chars > absorbDepth {
					return false, 0
				}
				seen.Add(sk.key())
				work = append(work, nk)
			}
		}
	}
	if maxChars < 0 {
		for _, k := range work {
			if k.seq == seqStart {
				d.states[k.s].absorbs = true
			}
		}
	}
	return true, 0
}

// ExactlyAbsorbs reports whether state s absorbs every text Absorbs
// considers of up to n characters (n ≥ 1), and refuses outright the
// next character of every one of n: a text of the kind is accepted from
// s, without reaching the end of a rule that began before the walk, if
// and only if it has at most n characters. Inside a string of at most n
// more characters, say, the plain-text tokens of at most n characters
// are the ones allowed, and a trie walk needs to look only at the
// others.
func (d *LocalDFA) ExactlyAbsorbs(s int32, ascii [2]uint64, n int) bool {
	if n < 1 {
		return false
	}
	d.useASCII(ascii)
	seen := &d.absorbSeen
	seen.Reset()
	work := append(d.absorbWork[:0], absorbKey{s, seqStart, 0})
	seen.Add(work[0].key())
	defer func() { d.absorbWork = work[:0] }()
	for i := 0; i < len(work); i++ { // every text of up to n characters
		k := work[i]
		if k.seq == seqStart && int(k.chars) == n {
			if !d.refusesEveryChar(k.s) {
				return false
			}
			continue
		}
		succ, ok := d.absorbSuccessors(k.s, k.seq)
		if !ok {
			return false
		}
		for _, x := range succ {
			nk := absorbKey{int32(x >> 3), uint8(x & 7), k.chars}
			if k.seq == seqStart {
				nk.chars++
			}
			if !seen.Has(nk.key()) {
				if seen.Len() >= absorbLimit {
					return false
				}
				seen.Add(nk.key())
				work = append(work, nk)
			}
		}
	}
	return true
}

// refusesEveryChar reports whether state s refuses every byte that can
// begin a character Absorbs considers: the ASCII of absorbASCII, and
// every UTF-8 lead byte.
func (d *LocalDFA) refusesEveryChar(s int32) bool {
	for _, e := range d.absorbRuns {
		if !d.refusesRange(s, e.lo, e.hi) {
			return false
		}
	}
	return d.refusesRange(s, 0xC2, 0xF4)
}

// refusesRange reports whether state s refuses every byte in [lo, hi].
func (d *LocalDFA) refusesRange(s int32, lo, hi byte) bool {
	row := d.row(s)
	for c := int(d.class[lo]); c <= int(d.class[hi]); c++ {
		if d.entry(row, s, c, lo) != dfaRefused {
			return false
		}
	}
	return true
}

// key packs a step of Absorbs into a keySet key.
func (k absorbKey) key() uint64 {
	return uint64(uint32(k.s))<<32 | uint64(k.seq)<<24 | uint64(uint32(k.chars)&0xFFFFFF)
}
