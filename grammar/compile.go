package grammar

import (
	"fmt"
	"unicode/utf8"
)

// MaxInst is the instruction budget of a compiled grammar. Bounded
// repetitions are unrolled ({m,n} costs about n copies of its body), so
// a grammar that exceeds it is refused with an error rather than
// compiled into something that exhausts memory.
const MaxInst = 1 << 20

// Error is a grammar error at a position in the grammar's source.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string {
	if e.Pos.Line == 0 {
		return e.Msg
	}
	return e.Pos.String() + ": " + e.Msg
}

func errorf(pos Pos, format string, args ...any) error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// Compile checks g and lowers it to a Prog. Undefined rules, a missing
// start rule and a start rule that matches no string are errors. Rules
// that match no string (every alternative recurses forever) are pruned,
// with a warning, so that every state the parser can reach can still be
// completed to a string of the language.
func Compile(g *Grammar) (*Prog, error) {
	c := &compiler{g: g, index: map[string]int{}, prog: &Prog{}}
	for i, r := range g.Rules {
		if _, dup := c.index[r.Name]; dup {
			return nil, errorf(r.Pos, "rule %s is defined twice", r.Name)
		}
		c.index[r.Name] = i
	}
	start, ok := c.index[g.Start]
	if !ok {
		return nil, errorf(Pos{}, "no start rule %q", g.Start)
	}
	// One walk over each rule checks it, measures it and counts the
	// calls it makes.
	sizes := make([]int, len(g.Rules))
	calls := make([]map[int]int, len(g.Rules))
	for i, r := range g.Rules {
		calls[i] = map[int]int{}
		size, err := c.scan(r.Body, calls[i])
		if err != nil {
			return nil, err
		}
		sizes[i] = size
	}
	c.productivity()
	if !c.productive[start] {
		return nil, errorf(g.Rules[start].Pos, "start rule %s matches no string: each of its alternatives recurses without end", g.Start)
	}
	for i, r := range g.Rules {
		if !c.productive[i] {
			g.Warnings = append(g.Warnings, fmt.Sprintf("%s: rule %s matches no string and is never used", r.Pos, r.Name))
		}
	}
	// Refuse before unrolling what would exceed the budget.
	total := 0
	for i, r := range g.Rules {
		total += sizes[i]
		if total > MaxInst {
			return nil, errorf(r.Pos, "grammar too large: unrolling its bounded repetitions would take more than %d instructions", MaxInst)
		}
	}
	// Compile the grammar with its non-recursive rules inlined: the
	// program's rules are the others, in order.
	c.inlined = inline(g.Rules, sizes, calls, g.Start)
	p := c.prog
	c.progRule = make([]uint32, len(g.Rules))
	for i, r := range g.Rules {
		if !c.inlined[i] {
			c.progRule[i] = uint32(len(p.Rules))
			p.Rules = append(p.Rules, ProgRule{Name: r.Name})
		}
	}
	p.Start = int(c.progRule[start])
	// Sharing inlined bodies keeps most programs below the grammar's
	// unrolled size; the rest grow by append.
	p.Inst = make([]Inst, 0, min(total+len(p.Rules), MaxInst))
	for i, r := range g.Rules {
		if c.inlined[i] {
			continue
		}
		pr := c.progRule[i]
		match := c.emit(Inst{Op: InstMatch, Arg: pr})
		if !c.productive[i] {
			p.Rules[pr].Start = c.emit(Inst{Op: InstFail})
			continue
		}
		entry, err := c.compile(r.Body, match)
		if err != nil {
			return nil, err
		}
		p.Rules[pr].Start = entry
	}
	if c.err != nil {
		return nil, c.err
	}
	c.nullable()
	return p, nil
}

type compiler struct {
	g          *Grammar
	index      map[string]int
	prog       *Prog
	productive []bool
	err        error
	classInst  []uint32 // the byte instructions of the class being compiled, for classByte
	seqs       map[[2]rune][][]byteRange
	// inlined marks the grammar's rules that are compiled in place at
	// each reference (see inline); progRule is the program rule of each
	// of the others.
	inlined  []bool
	progRule []uint32
	// expanded is the unrolled size of each inlined rule's body, with its
	// inlined references in place, plus one for the reference; 0 until
	// measured.
	expanded []int
	// hoistedRules finds the rule a repeated body was hoisted into, by
	// the body's node: bodies an inlined rule shares are hoisted once.
	hoistedRules map[*Node]*Node
	done         map[compiled]uint32
}

// scan checks n, adds its references to rules to calls (by rule index)
// and returns unrolled(n), in one walk.
func (c *compiler) scan(n *Node, calls map[int]int) (int, error) {
	switch n.Op {
	case OpRef:
		i, ok := c.index[n.Name]
		if !ok {
			return 0, errorf(n.Pos, "undefined rule %s", n.Name)
		}
		calls[i]++
	case OpClass:
		if len(n.Ranges) == 0 {
			return 0, errorf(n.Pos, "empty character class matches nothing")
		}
	case OpRepeat:
		if n.Min < 0 || (n.Max >= 0 && n.Max < n.Min) {
			return 0, errorf(n.Pos, "bad repetition {%d,%d}", n.Min, n.Max)
		}
	case OpToken:
		if len(n.Tokens) == 0 {
			return 0, errorf(n.Pos, "empty token set")
		}
	}
	subs := 0
	for _, s := range n.Subs {
		size, err := c.scan(s, calls)
		if err != nil {
			return 0, err
		}
		subs += size
	}
	return nodeSize(n, subs), nil
}

// productivity finds the rules that derive at least one string.
func (c *compiler) productivity() {
	c.productive = make([]bool, len(c.g.Rules))
	for changed := true; changed; {
		changed = false
		for i, r := range c.g.Rules {
			if !c.productive[i] && c.nodeProductive(r.Body) {
				c.productive[i] = true
				changed = true
			}
		}
	}
}

func (c *compiler) nodeProductive(n *Node) bool {
	switch n.Op {
	case OpSeq:
		for _, s := range n.Subs {
			if !c.nodeProductive(s) {
				return false
			}
		}
		return true
	case OpAlt:
		for _, s := range n.Subs {
			if c.nodeProductive(s) {
				return true
			}
		}
		return false
	case OpRepeat:
		return n.Min == 0 || c.nodeProductive(n.Subs[0])
	case OpRef:
		return n.hoisted > 0 || c.productive[c.index[n.Name]] // hoisted rules are productive
	case OpClass:
		return len(n.Ranges) > 0
	}
	return true
}

func (c *compiler) emit(in Inst) uint32 {
	if len(c.prog.Inst) >= MaxInst && c.err == nil {
		c.err = fmt.Errorf("grammar too large: more than %d instructions (reduce bounded repetitions)", MaxInst)
	}
	if c.err != nil {
		return 0
	}
	c.prog.Inst = append(c.prog.Inst, in)
	return uint32(len(c.prog.Inst) - 1)
}

func (c *compiler) split(a, b uint32) uint32 { return c.emit(Inst{Op: InstSplit, Out: a, Arg: b}) }

// compile emits n so that it continues at next, and returns its entry.
// n is productive.
func (c *compiler) compile(n *Node, next uint32) (uint32, error) {
	if c.err != nil {
		return 0, c.err
	}
	return c.compileNode(n, next)
}

// compileInlined emits the body of inlined rule i, continuing at next.
// Its code depends only on i and next, and instructions do not change
// once compile returns, so it is emitted once per next: one copy, and
// one parser state, where each reference would make its own.
func (c *compiler) compileInlined(i int, next uint32) (uint32, error) {
	key := compiled{i, next}
	if at, ok := c.done[key]; ok {
		return at, nil
	}
	at, err := c.compile(c.g.Rules[i].Body, next)
	if err == nil {
		if c.done == nil {
			c.done = map[compiled]uint32{}
		}
		c.done[key] = at
	}
	return at, err
}

// compiled is an inlined rule compiled to continue at next.
type compiled struct {
	rule int
	next uint32
}

func (c *compiler) compileNode(n *Node, next uint32) (uint32, error) {
	switch n.Op {
	case OpEmpty:
		return next, nil
	case OpLit:
		var b []byte
		for _, r := range n.Runes {
			if r < 0 || r > utf8.MaxRune || (r >= 0xD800 && r <= 0xDFFF) {
				return 0, errorf(n.Pos, "code point U+%04X cannot be encoded in UTF-8", r)
			}
			b = utf8.AppendRune(b, r)
		}
		return c.bytes(b, next), nil
	case OpBytes:
		return c.bytes(n.Bytes, next), nil
	case OpClass:
		// The sequences share their equal suffixes (the continuation
		// bytes of multi-byte characters): a smaller program, and one
		// parser state where there would be a copy per lead byte.
		var alts []uint32
		c.classInst = c.classInst[:0]
		for i := 0; i+1 < len(n.Ranges); i += 2 {
			for _, seq := range c.sequences(n.Ranges[i], n.Ranges[i+1]) {
				at := next
				for j := len(seq) - 1; j >= 0; j-- {
					at = c.classByte(seq[j].lo, seq[j].hi, at)
				}
				alts = append(alts, at)
			}
		}
		if len(alts) == 0 {
			return 0, errorf(n.Pos, "character class %s has no encodable code point", n)
		}
		return c.alts(alts), nil
	case OpSeq:
		at := next
		for i := len(n.Subs) - 1; i >= 0; i-- {
			var err error
			if at, err = c.compile(n.Subs[i], at); err != nil {
				return 0, err
			}
		}
		return at, nil
	case OpAlt:
		var alts []uint32
		for _, s := range n.Subs {
			if !c.nodeProductive(s) {
				continue
			}
			e, err := c.compile(s, next)
			if err != nil {
				return 0, err
			}
			alts = append(alts, e)
		}
		return c.alts(alts), nil
	case OpRepeat:
		sub := n.Subs[0]
		if !c.nodeProductive(sub) { // then Min is 0: only the empty repetition
			return next, nil
		}
		if copies := max(n.Min, n.Max); copies > hoistCopies && c.expandedSize(sub) > hoistSize {
			return c.hoisted(n, next)
		}
		at := next
		if n.Max < 0 {
			loop := c.split(0, next)
			body, err := c.compile(sub, loop)
			if err != nil {
				return 0, err
			}
			c.prog.Inst[loop].Out = body
			at = loop
		} else {
			for range n.Max - n.Min {
				body, err := c.compile(sub, at)
				if err != nil {
					return 0, err
				}
				at = c.split(body, next)
			}
		}
		for range n.Min {
			var err error
			if at, err = c.compile(sub, at); err != nil {
				return 0, err
			}
		}
		return at, nil
	case OpRef:
		if n.hoisted > 0 {
			return c.emit(Inst{Op: InstCall, Arg: uint32(n.hoisted - 1), Out: next}), nil
		}
		i := c.index[n.Name]
		if c.inlined[i] {
			return c.compileInlined(i, next)
		}
		return c.emit(Inst{Op: InstCall, Arg: c.progRule[i], Out: next}), nil
	case OpToken:
		c.prog.TokenSets = append(c.prog.TokenSets, TokenSet{Tokens: n.Tokens, Negated: n.Negated})
		return c.emit(Inst{Op: InstToken, Arg: uint32(len(c.prog.TokenSets) - 1), Out: next}), nil
	}
	return 0, errorf(n.Pos, "cannot compile %s node", n.Op)
}

// A bounded repetition of more than hoistCopies copies of a body of
// more than hoistSize instructions compiles the body once, as a rule of
// its own, and calls it from each copy: {0,255} of a JSON string
// character then costs 255 calls instead of 255 copies.
const (
	hoistCopies = 4
	hoistSize   = 8
)

// hoisted compiles repetition n with its body as a separate rule.
func (c *compiler) hoisted(n *Node, next uint32) (uint32, error) {
	body := n.Subs[0] // the body, or the inlined rule it calls, is the key
	if body.Op == OpRef && body.hoisted == 0 && c.inlined[c.index[body.Name]] {
		body = c.g.Rules[c.index[body.Name]].Body
	}
	if call, ok := c.hoistedRules[body]; ok { // the same body, hoisted before
		return c.compile(&Node{Op: OpRepeat, Pos: n.Pos, Subs: []*Node{call}, Min: n.Min, Max: n.Max}, next)
	}
	rule := uint32(len(c.prog.Rules))
	c.prog.Rules = append(c.prog.Rules, ProgRule{Name: fmt.Sprintf("_rep%d", rule)})
	match := c.emit(Inst{Op: InstMatch, Arg: rule})
	entry, err := c.compile(n.Subs[0], match)
	if err != nil {
		return 0, err
	}
	c.prog.Rules[rule].Start = entry
	call := &Node{Op: OpRef, Name: c.prog.Rules[rule].Name, hoisted: int(rule) + 1}
	if c.hoistedRules == nil {
		c.hoistedRules = map[*Node]*Node{}
	}
	c.hoistedRules[body] = call
	return c.compile(&Node{Op: OpRepeat, Pos: n.Pos, Subs: []*Node{call}, Min: n.Min, Max: n.Max}, next)
}

// sequences is utf8Sequences, remembered: a grammar repeats its classes
// (a JSON string's character, at every string).
func (c *compiler) sequences(lo, hi rune) [][]byteRange {
	if seq, ok := c.seqs[[2]rune{lo, hi}]; ok {
		return seq
	}
	if c.seqs == nil {
		c.seqs = map[[2]rune][][]byteRange{}
	}
	seq := utf8Sequences(lo, hi)
	c.seqs[[2]rune{lo, hi}] = seq
	return seq
}

// classByte returns a byte instruction [lo, hi] going on at out, shared
// with an equal one of the class being compiled.
func (c *compiler) classByte(lo, hi byte, out uint32) uint32 {
	for _, at := range c.classInst {
		if in := &c.prog.Inst[at]; in.Lo == lo && in.Hi == hi && in.Out == out {
			return at
		}
	}
	at := c.emit(Inst{Op: InstByte, Lo: lo, Hi: hi, Out: out})
	if c.err == nil {
		c.classInst = append(c.classInst, at)
	}
	return at
}

func (c *compiler) bytes(b []byte, next uint32) uint32 {
	at := next
	for i := len(b) - 1; i >= 0; i-- {
		at = c.emit(Inst{Op: InstByte, Lo: b[i], Hi: b[i], Out: at})
	}
	return at
}

// alts returns an entry that branches to every one of entries.
func (c *compiler) alts(entries []uint32) uint32 {
	if len(entries) == 0 {
		return c.emit(Inst{Op: InstFail})
	}
	at := entries[len(entries)-1]
	for i := len(entries) - 2; i >= 0; i-- {
		at = c.split(entries[i], at)
	}
	return at
}

// nullable marks the rules that match the empty string.
func (c *compiler) nullable() {
	p := c.prog
	seen := make([]uint32, len(p.Inst)) // generation stamps
	gen := uint32(0)
	var reach func(pc uint32) bool
	reach = func(pc uint32) bool {
		if seen[pc] == gen {
			return false
		}
		seen[pc] = gen
		in := p.Inst[pc]
		switch in.Op {
		case InstMatch:
			return true
		case InstSplit:
			return reach(in.Out) || reach(in.Arg)
		case InstCall:
			return p.Rules[in.Arg].Nullable && reach(in.Out)
		}
		return false
	}
	for changed := true; changed; {
		changed = false
		for i := range p.Rules {
			if p.Rules[i].Nullable {
				continue
			}
			gen++
			if reach(p.Rules[i].Start) {
				p.Rules[i].Nullable = true
				changed = true
			}
		}
	}
}

// unrolled estimates the instructions n compiles to, saturating above
// MaxInst, so that nested bounded repetitions are refused cheaply.
func unrolled(n *Node) int {
	subs := 0
	for _, s := range n.Subs {
		subs += unrolled(s)
	}
	return nodeSize(n, subs)
}

// expandedSize is unrolled(n) with the inlined rules n refers to in
// place (as compile emits them, before sharing), each counting one more
// for the reference.
func (c *compiler) expandedSize(n *Node) int {
	if n.Op == OpRef && n.hoisted == 0 {
		i := c.index[n.Name]
		if !c.inlined[i] {
			return 1
		}
		if c.expanded == nil {
			c.expanded = make([]int, len(c.g.Rules))
		}
		if c.expanded[i] == 0 {
			c.expanded[i] = c.expandedSize(c.g.Rules[i].Body) + 1
		}
		return c.expanded[i]
	}
	subs := 0
	for _, s := range n.Subs {
		subs += c.expandedSize(s)
	}
	return nodeSize(n, subs)
}

// nodeSize is unrolled(n) given the sum of unrolled over n's subtrees.
func nodeSize(n *Node, subs int) int {
	size := 1 + subs
	switch n.Op {
	case OpLit:
		size += 4*len(n.Runes) - 1
	case OpBytes:
		size += len(n.Bytes) - 1
	case OpClass:
		size += 2*len(n.Ranges) - 1
	}
	if n.Op == OpRepeat {
		copies := max(n.Min, n.Max, 1)
		if n.Max < 0 {
			copies = n.Min + 1
		}
		if copies > hoistCopies && size > hoistSize {
			return min(size+2*copies, MaxInst+1) // see hoisted
		}
		if size > MaxInst/max(copies, 1) {
			return MaxInst + 1
		}
		size *= copies
	}
	return min(size, MaxInst+1)
}
