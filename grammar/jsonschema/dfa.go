package jsonschema

import (
	"encoding/binary"
	"fmt"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/regex"
)

// Automata over code points, for what a grammar of the pattern alone
// cannot say: the keys no pattern of patternProperties matches (a
// complement), a pattern within length bounds, several patterns on one
// string (an intersection), property names. A regular expression becomes
// a DFA by the subset construction over Go's own compiled program
// (regexp/syntax, the validator's reading); DFAs combine by product,
// each state labelled by a function of its components' states; the
// result is minimized and written as right-linear grammar rules.
//
// Every construction is bounded by maxDFAStates: past it the caller
// refuses, naming the keyword, rather than building a grammar too large
// to compile.

// maxDFAStates bounds the states of one automaton reins builds.
const maxDFAStates = 4096

// dfaEdge leads the runes lo to hi to state to.
type dfaEdge struct {
	lo, hi rune
	to     int32
}

// dfa is a deterministic automaton over code points. State 0 starts; a
// rune without an edge rejects. label[q] is 0 where q rejects, else the
// kind of acceptance (1 for a plain accepting state).
type dfa struct {
	edges [][]dfaEdge // per state, sorted by lo, disjoint
	label []int32
}

func (d *dfa) size() int { return len(d.label) }

// maxDFAChars bounds the characters a pattern made into a DFA matches
// one by one, counted repetitions spelled out (regex.SpelledOut): its
// program is that long, and its DFA would take more than maxDFAStates
// states long before.
const maxDFAChars = 64 * maxDFAStates

// errDFATooLarge is the error past maxDFAStates.
var errDFATooLarge = fmt.Errorf("the automaton would take more than %d states", maxDFAStates)

// nfa is a regular expression's program, run as a set of instructions.
type nfa struct {
	prog   *syntax.Prog
	search bool // a match anywhere in the string (JSON Schema's pattern); else the whole string
}

// nfaState is a set of instruction indices, sorted, plus whether a match
// was found already (search) and whether it stands at the string's start.
type nfaState struct {
	pcs     []uint32
	matched bool
	begin   bool
}

func (s nfaState) key() string {
	var b strings.Builder
	if s.matched {
		return "M"
	}
	if s.begin {
		b.WriteByte('^')
	}
	for _, pc := range s.pcs {
		b.WriteString(strconv.FormatUint(uint64(pc), 36))
		b.WriteByte(',')
	}
	return b.String()
}

// closure adds to the set what pcs reach without consuming a rune: at
// the start when begin. Instructions that consume, and zero-width ones
// that may hold at the end, stay in the set.
func (m *nfa) closure(pcs []uint32, begin bool) (nfaState, error) {
	st := nfaState{begin: begin}
	seen := make(map[uint32]bool, len(pcs)*2)
	stack := slices.Clone(pcs)
	for len(stack) > 0 {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[pc] {
			continue
		}
		seen[pc] = true
		in := &m.prog.Inst[pc]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			stack = append(stack, in.Out, in.Arg)
		case syntax.InstCapture, syntax.InstNop:
			stack = append(stack, in.Out)
		case syntax.InstEmptyWidth:
			cond := syntax.EmptyOp(in.Arg)
			if cond&(syntax.EmptyWordBoundary|syntax.EmptyNoWordBoundary|syntax.EmptyBeginLine|syntax.EmptyEndLine) != 0 {
				return st, fmt.Errorf("word boundaries and multi-line anchors are not supported")
			}
			allowed := syntax.EmptyOp(0)
			if begin {
				allowed |= syntax.EmptyBeginText
			}
			switch {
			case cond&^allowed == 0:
				stack = append(stack, in.Out)
			case cond&^(allowed|syntax.EmptyEndText) == 0:
				st.pcs = append(st.pcs, pc) // may hold at the end
			}
		case syntax.InstMatch:
			if m.search {
				return nfaState{matched: true}, nil
			}
			st.pcs = append(st.pcs, pc)
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			st.pcs = append(st.pcs, pc)
		}
	}
	slices.Sort(st.pcs)
	return st, nil
}

// accepts reports whether the string may end in state s.
func (m *nfa) accepts(s nfaState) bool {
	if s.matched {
		return true
	}
	seen := map[uint32]bool{}
	stack := slices.Clone(s.pcs)
	for len(stack) > 0 {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[pc] {
			continue
		}
		seen[pc] = true
		in := &m.prog.Inst[pc]
		switch in.Op {
		case syntax.InstMatch:
			return true
		case syntax.InstAlt, syntax.InstAltMatch:
			stack = append(stack, in.Out, in.Arg)
		case syntax.InstCapture, syntax.InstNop:
			stack = append(stack, in.Out)
		case syntax.InstEmptyWidth:
			allowed := syntax.EmptyEndText
			if s.begin {
				allowed |= syntax.EmptyBeginText
			}
			if syntax.EmptyOp(in.Arg)&^allowed == 0 {
				stack = append(stack, in.Out)
			}
		}
	}
	return false
}

// runeRanges returns the runes instruction in consumes, as ranges.
func runeRanges(in *syntax.Inst) []rune {
	switch in.Op {
	case syntax.InstRuneAny:
		return []rune{0, utf8.MaxRune}
	case syntax.InstRuneAnyNotNL:
		return []rune{0, '\n' - 1, '\n' + 1, utf8.MaxRune}
	case syntax.InstRune1:
		return []rune{in.Rune[0], in.Rune[0]}
	case syntax.InstRune:
		if len(in.Rune) == 1 { // one rune, perhaps folded
			r := in.Rune[0]
			out := []rune{r, r}
			if syntax.Flags(in.Arg)&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					out = append(out, f, f)
				}
			}
			return out
		}
		return in.Rune
	}
	return nil
}

// step returns the state after rune r.
func (m *nfa) step(s nfaState, r rune) (nfaState, error) {
	if s.matched {
		return s, nil
	}
	var next []uint32
	for _, pc := range s.pcs {
		in := &m.prog.Inst[pc]
		switch in.Op {
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			if in.MatchRune(r) {
				next = append(next, in.Out)
			}
		}
	}
	if m.search {
		next = append(next, uint32(m.prog.Start))
	}
	return m.closure(next, false)
}

// regexDFA returns the DFA of the strings that contain a match of the
// Go regular expression pat (search) or match it whole.
func regexDFA(pat string, search bool) (*dfa, error) {
	re, err := syntax.Parse(pat, syntax.Perl)
	if err != nil {
		return nil, err
	}
	// A DFA of maxDFAStates states cannot hold far longer a sequence; the
	// bound keeps syntax.Compile from spelling out \pL{1000} repeated.
	if regex.SpelledOut(re, maxDFAChars) > maxDFAChars {
		return nil, errDFATooLarge
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, err
	}
	m := &nfa{prog: prog, search: search}
	start, err := m.closure([]uint32{uint32(prog.Start)}, true)
	if err != nil {
		return nil, err
	}
	d := &dfa{}
	ids := map[string]int32{}
	var queue []nfaState
	add := func(s nfaState) (int32, error) {
		k := s.key()
		if id, ok := ids[k]; ok {
			return id, nil
		}
		if len(d.label) >= maxDFAStates {
			return 0, errDFATooLarge
		}
		id := int32(len(d.label))
		ids[k] = id
		lab := int32(0)
		if m.accepts(s) {
			lab = 1
		}
		d.label = append(d.label, lab)
		d.edges = append(d.edges, nil)
		queue = append(queue, s)
		return id, nil
	}
	if _, err := add(start); err != nil {
		return nil, err
	}
	for q := 0; q < len(queue); q++ {
		s := queue[q]
		if s.matched {
			d.edges[q] = []dfaEdge{{0, utf8.MaxRune, int32(q)}}
			continue
		}
		// The boundaries of the runes the set's instructions consume; in
		// a search every rune leads somewhere (back to the start).
		bounds := []rune{0, utf8.MaxRune + 1}
		for _, pc := range s.pcs {
			rs := runeRanges(&prog.Inst[pc])
			for i := 0; i+1 < len(rs); i += 2 {
				bounds = append(bounds, rs[i], rs[i+1]+1)
			}
		}
		slices.Sort(bounds)
		bounds = slices.Compact(bounds)
		for i := 0; i+1 < len(bounds); i++ {
			lo, hi := bounds[i], bounds[i+1]-1
			next, err := m.step(s, lo)
			if err != nil {
				return nil, err
			}
			if !next.matched && len(next.pcs) == 0 {
				continue // no match can follow
			}
			to, err := add(next)
			if err != nil {
				return nil, err
			}
			es := d.edges[q]
			if n := len(es); n > 0 && es[n-1].to == to && es[n-1].hi+1 == lo {
				es[n-1].hi = hi
			} else {
				es = append(es, dfaEdge{lo, hi, to})
			}
			d.edges[q] = es
		}
	}
	return d, nil
}

// namesDFA returns the DFA of the strings among names: state labels are
// 1 + the index of the name that ends there, 0 elsewhere.
func namesDFA(names []string) *dfa {
	d := &dfa{edges: [][]dfaEdge{nil}, label: []int32{0}}
	for i, name := range names {
		q := int32(0)
		for _, r := range name {
			next := int32(-1)
			for _, e := range d.edges[q] {
				if e.lo == r {
					next = e.to
				}
			}
			if next < 0 {
				next = int32(len(d.label))
				d.label = append(d.label, 0)
				d.edges = append(d.edges, nil)
				es := append(d.edges[q], dfaEdge{r, r, next})
				slices.SortFunc(es, func(a, b dfaEdge) int { return int(a.lo - b.lo) })
				d.edges[q] = es
			}
			q = next
		}
		if d.label[q] == 0 {
			d.label[q] = int32(i + 1)
		}
	}
	return d
}

// lengthDFA returns the DFA of the strings of min to max code points
// (max -1: no bound).
func lengthDFA(min, max int) *dfa {
	top := max
	if max < 0 {
		top = min
	}
	d := &dfa{}
	for n := 0; n <= top; n++ {
		lab := int32(0)
		if n >= min {
			lab = 1
		}
		d.label = append(d.label, lab)
		switch {
		case n < top:
			d.edges = append(d.edges, []dfaEdge{{0, utf8.MaxRune, int32(n + 1)}})
		case max < 0:
			d.edges = append(d.edges, []dfaEdge{{0, utf8.MaxRune, int32(n)}})
		default:
			d.edges = append(d.edges, nil)
		}
	}
	return d
}

// complete returns d with a rejecting state that takes every rune d
// has no edge for, so that every string reaches some state.
func (d *dfa) complete() *dfa {
	sink := int32(len(d.label))
	out := &dfa{label: append(slices.Clone(d.label), 0), edges: make([][]dfaEdge, len(d.label)+1)}
	out.edges[sink] = []dfaEdge{{0, utf8.MaxRune, sink}}
	for q, es := range d.edges {
		var filled []dfaEdge
		next := rune(0)
		for _, e := range es {
			if e.lo > next {
				filled = append(filled, dfaEdge{next, e.lo - 1, sink})
			}
			filled = append(filled, e)
			next = e.hi + 1
		}
		if next <= utf8.MaxRune {
			filled = append(filled, dfaEdge{next, utf8.MaxRune, sink})
		}
		out.edges[q] = filled
	}
	return out
}

// product runs the DFAs ds together: a state is a tuple of their states
// (a component without an edge for a rune ends the product's edge:
// complete a component that must go on), labelled by label(tuple).
// States from which no labelled state is reachable are left out.
func product(ds []*dfa, label func(tuple []int32) int32) (*dfa, error) {
	out := &dfa{}
	ids := map[string]int32{}
	var tuples [][]int32
	var key []byte
	// add returns the state of tuple t, which it may keep only when t is
	// new: the caller's scratch is cloned then.
	add := func(t []int32) (int32, error) {
		key = key[:0]
		for _, x := range t {
			key = binary.AppendUvarint(key, uint64(x))
		}
		if id, ok := ids[string(key)]; ok {
			return id, nil
		}
		if len(out.label) >= maxDFAStates {
			return 0, errDFATooLarge
		}
		id := int32(len(out.label))
		ids[string(key)] = id
		t = slices.Clone(t)
		out.label = append(out.label, label(t))
		out.edges = append(out.edges, nil)
		tuples = append(tuples, t)
		return id, nil
	}
	if _, err := add(make([]int32, len(ds))); err != nil {
		return nil, err
	}
	var bounds []rune
	idx := make([]int, len(ds))    // each component's next edge
	next := make([]int32, len(ds)) // scratch: add clones what it keeps
	for q := 0; q < len(tuples); q++ {
		t := tuples[q]
		bounds = bounds[:0]
		for i, d := range ds {
			for _, e := range d.edges[t[i]] {
				bounds = append(bounds, e.lo, e.hi+1)
			}
		}
		slices.Sort(bounds)
		bounds = slices.Compact(bounds)
		clear(idx)
		for b := 0; b+1 < len(bounds); b++ {
			lo, hi := bounds[b], bounds[b+1]-1
			ok := true
			for i, d := range ds {
				es := d.edges[t[i]]
				for idx[i] < len(es) && es[idx[i]].hi < lo {
					idx[i]++
				}
				if idx[i] >= len(es) || es[idx[i]].lo > lo {
					ok = false
					break
				}
				next[i] = es[idx[i]].to
			}
			if !ok {
				continue
			}
			to, err := add(next)
			if err != nil {
				return nil, err
			}
			es := out.edges[q]
			if n := len(es); n > 0 && es[n-1].to == to && es[n-1].hi+1 == lo {
				es[n-1].hi = hi
			} else {
				es = append(es, dfaEdge{lo, hi, to})
			}
			out.edges[q] = es
		}
	}
	return out.trim(), nil
}

// trim leaves out the states from which no labelled state is reachable
// (the start stays, perhaps without edges).
func (d *dfa) trim() *dfa {
	live := make([]bool, d.size())
	for q, l := range d.label {
		live[q] = l != 0
	}
	for changed := true; changed; {
		changed = false
		for q, es := range d.edges {
			if live[q] {
				continue
			}
			for _, e := range es {
				if live[e.to] {
					live[q], changed = true, true
					break
				}
			}
		}
	}
	live[0] = true
	renum := make([]int32, d.size())
	out := &dfa{}
	for q := range live {
		renum[q] = -1
		if live[q] {
			renum[q] = int32(len(out.label))
			out.label = append(out.label, d.label[q])
		}
	}
	out.edges = make([][]dfaEdge, len(out.label))
	for q, es := range d.edges {
		if !live[q] {
			continue
		}
		var kept []dfaEdge
		for _, e := range es {
			if to := renum[e.to]; to >= 0 {
				kept = appendEdge(kept, dfaEdge{e.lo, e.hi, to})
			}
		}
		out.edges[renum[q]] = kept
	}
	return out
}

// appendEdge appends e, merging it with the last edge where they touch
// and lead to the same state.
func appendEdge(es []dfaEdge, e dfaEdge) []dfaEdge {
	if n := len(es); n > 0 && es[n-1].to == e.to && es[n-1].hi+1 == e.lo {
		es[n-1].hi = e.hi
		return es
	}
	return append(es, e)
}

// minimize merges the states no string tells apart, by Hopcroft's
// partition refinement over the runes cut into classes that every
// state treats alike (O(k n log n) for n states and k classes).
func (d *dfa) minimize() *dfa {
	n := d.size()
	// The alphabet: the runes between consecutive edge bounds, those
	// that every state sends to the same place merged into one symbol.
	var bounds []rune
	for _, es := range d.edges {
		for _, e := range es {
			bounds = append(bounds, e.lo, e.hi+1)
		}
	}
	if len(bounds) == 0 {
		return d.minimizeLabels()
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	k := len(bounds) - 1
	dead := int32(n)
	col := make([][]int32, k) // col[a][q]: the target of state q on interval a
	for a := range col {
		col[a] = make([]int32, n+1)
		for q := range col[a] {
			col[a][q] = dead
		}
	}
	for q, es := range d.edges {
		a := 0
		for _, e := range es {
			for bounds[a] < e.lo {
				a++
			}
			for ; a < k && bounds[a] <= e.hi; a++ {
				col[a][q] = e.to
			}
		}
	}
	var syms [][]int32 // distinct columns
	seen := map[string]bool{}
	buf := make([]byte, 0, 4*(n+1))
	for _, c := range col {
		buf = buf[:0]
		for _, t := range c {
			buf = append(buf, byte(t), byte(t>>8), byte(t>>16), byte(t>>24))
		}
		if !seen[string(buf)] {
			seen[string(buf)] = true
			syms = append(syms, c)
		}
	}
	k = len(syms)
	// Inverse transitions, per symbol, in one flat list: the states that
	// go to t on a are invFrom[invAt[a*(n+2)+t]:invAt[a*(n+2)+t+1]].
	total := n + 1
	invAt := make([]int32, k*(total+1)+1)
	for a, c := range syms {
		for _, t := range c {
			invAt[a*(total+1)+int(t)+1]++
		}
	}
	for i := 1; i < len(invAt); i++ {
		invAt[i] += invAt[i-1]
	}
	invFrom := make([]int32, k*total)
	fill := slices.Clone(invAt)
	for a, c := range syms {
		for q, t := range c {
			at := &fill[a*(total+1)+int(t)]
			invFrom[*at] = int32(q)
			*at++
		}
	}
	inv := func(a, t int32) []int32 {
		i := int(a)*(total+1) + int(t)
		return invFrom[invAt[i]:invAt[i+1]]
	}
	// The refinable partition: elems holds the states block by block.
	elems := make([]int32, total)
	pos := make([]int32, total)
	blockOf := make([]int32, total)
	var first, end, marked []int32
	labelOf := func(q int) int32 {
		if q == n {
			return 0
		}
		return d.label[q]
	}
	order := make([]int32, total)
	for q := range order {
		order[q] = int32(q)
	}
	slices.SortStableFunc(order, func(x, y int32) int {
		lx, ly := labelOf(int(x)), labelOf(int(y))
		return int(lx) - int(ly)
	})
	for i, q := range order {
		if i == 0 || labelOf(int(q)) != labelOf(int(order[i-1])) {
			first = append(first, int32(i))
			end = append(end, int32(i))
			marked = append(marked, 0)
		}
		b := int32(len(first) - 1)
		elems[i], pos[q], blockOf[q] = q, int32(i), b
		end[b] = int32(i + 1)
	}
	// The work list of (block, symbol) splitters, and which are on it:
	// inW[b*k+a], for at most total blocks.
	type work struct{ b, a int32 }
	var queue []work
	inW := make([]bool, total*k)
	for b := range first {
		for a := range k {
			queue = append(queue, work{int32(b), int32(a)})
			inW[b*k+a] = true
		}
	}
	var touched, splitter []int32
	for len(queue) > 0 {
		w := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		inW[int(w.b)*k+int(w.a)] = false
		// Mark the states that go into block w.b on symbol w.a. Marking
		// moves states within their blocks, w.b among them: the splitter's
		// states are read first.
		splitter = append(splitter[:0], elems[first[w.b]:end[w.b]]...)
		for _, q := range splitter {
			for _, p := range inv(w.a, q) {
				b := blockOf[p]
				if pos[p] < first[b]+marked[b] {
					continue // marked already
				}
				if marked[b] == 0 {
					touched = append(touched, b)
				}
				// Swap p to the end of the marked part.
				j := first[b] + marked[b]
				other := elems[j]
				elems[j], elems[pos[p]] = p, other
				pos[other], pos[p] = pos[p], j
				marked[b]++
			}
		}
		for _, b := range touched {
			m := marked[b]
			marked[b] = 0
			if m == end[b]-first[b] {
				continue // the whole block: no split
			}
			// Split: the marked part becomes a new block.
			nb := int32(len(first))
			first = append(first, first[b])
			end = append(end, first[b]+m)
			marked = append(marked, 0)
			first[b] += m
			for i := first[nb]; i < end[nb]; i++ {
				blockOf[elems[i]] = nb
			}
			small := nb
			if end[b]-first[b] < end[nb]-first[nb] {
				small = b
			}
			for a := range k {
				add := small
				if inW[int(b)*k+a] {
					add = nb
				}
				queue = append(queue, work{add, int32(a)})
				inW[int(add)*k+a] = true
			}
		}
		touched = touched[:0]
	}
	// Rebuild, the start's block first, the dead state's block left out.
	renum := map[int32]int32{blockOf[0]: 0}
	for q := range n {
		if b := blockOf[q]; b != blockOf[dead] {
			if _, ok := renum[b]; !ok {
				renum[b] = int32(len(renum))
			}
		}
	}
	out := &dfa{label: make([]int32, len(renum)), edges: make([][]dfaEdge, len(renum))}
	done := make([]bool, len(renum))
	for q, es := range d.edges {
		nq, ok := renum[blockOf[q]]
		if !ok || done[nq] {
			continue
		}
		done[nq] = true
		out.label[nq] = d.label[q]
		var kept []dfaEdge
		for _, e := range es {
			if to, ok := renum[blockOf[e.to]]; ok && blockOf[e.to] != blockOf[dead] {
				kept = appendEdge(kept, dfaEdge{e.lo, e.hi, to})
			}
		}
		out.edges[nq] = kept
	}
	return out
}

// minimizeLabels is minimize for an automaton without edges.
func (d *dfa) minimizeLabels() *dfa {
	return &dfa{label: []int32{d.label[0]}, edges: [][]dfaEdge{nil}}
}

// matchString runs d on s and returns the label it ends in (0: rejected).
func (d *dfa) matchString(s string) int32 {
	q := int32(0)
	for _, r := range s {
		next := int32(-1)
		for _, e := range d.edges[q] {
			if e.lo <= r && r <= e.hi {
				next = e.to
				break
			}
		}
		if next < 0 {
			return 0
		}
		q = next
	}
	return d.label[q]
}

// String is a compact dump of d, for tests: "0: a-z>1; 1*: ...".
func (d *dfa) String() string {
	var b strings.Builder
	for q, es := range d.edges {
		fmt.Fprintf(&b, "%d", q)
		if d.label[q] != 0 {
			fmt.Fprintf(&b, "*%d", d.label[q])
		}
		b.WriteString(":")
		for _, e := range es {
			fmt.Fprintf(&b, " %q-%q>%d", e.lo, e.hi, e.to)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// dfaGrammar writes d as right-linear rules, one per state: the end
// (final(label), where the state is labelled and final gives a node) or
// the runes of an edge, in canonical JSON string encoding, then the
// target's rule. ptr is the schema the rules are for.
func (c *compiler) dfaGrammar(d *dfa, ptr string, final func(label int32) *grammar.Node) (*grammar.Node, error) {
	base := len(c.g.Rules)
	for q := range d.label {
		c.setRulePtr(base+q, ptr)
		c.g.Rules = append(c.g.Rules, grammar.Rule{Name: "r" + strconv.Itoa(base+q)})
	}
	ref := func(q int32) *grammar.Node { return c.nodes.ref(c.g.Rules[base+int(q)].Name) }
	// Scratch, reused from state to state: a state's targets in the order
	// its edges first reach them, and the runes that reach each.
	var (
		alts    []*grammar.Node
		targets []int32
		slot    = map[int32]int{}
		runes   [][]rune
	)
	for q, es := range d.edges {
		alts, targets = alts[:0], targets[:0]
		clear(slot)
		if d.label[q] != 0 {
			if f := final(d.label[q]); f != nil {
				alts = append(alts, f)
			}
		}
		for _, e := range es {
			i, ok := slot[e.to]
			if !ok {
				i = len(targets)
				slot[e.to] = i
				targets = append(targets, e.to)
				if i == len(runes) {
					runes = append(runes, nil)
				}
				runes[i] = runes[i][:0]
			}
			runes[i] = append(runes[i], e.lo, e.hi)
		}
		for i, to := range targets {
			enc, err := c.encodedClass(runes[i])
			if err != nil {
				return nil, err
			}
			alts = append(alts, c.nodes.seq(enc, ref(to)))
		}
		c.g.Rules[base+q].Body = c.nodes.alt(alts...)
	}
	return ref(0), nil
}

// encodedClass is jsonEncode of the class of ranges (rune pairs), made
// once per compile: an automaton's states share few classes, and a class
// with the control characters encodes to 35 nodes.
func (c *compiler) encodedClass(ranges []rune) (*grammar.Node, error) {
	key := c.classKey[:0]
	for _, r := range ranges {
		key = binary.LittleEndian.AppendUint32(key, uint32(r))
	}
	c.classKey = key
	if n, ok := c.encodedClasses[string(key)]; ok {
		return n, nil
	}
	n, err := jsonEncode(grammar.Class(ranges...))
	if err != nil {
		return nil, err
	}
	if c.encodedClasses == nil {
		c.encodedClasses = map[string]*grammar.Node{}
	}
	c.encodedClasses[string(key)] = n
	return n, nil
}
