package grammar

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxInst is the instruction budget of a compiled grammar. Bounded
// repetitions are unrolled ({m,n} costs about n copies of its body), so
// a grammar that exceeds it is refused with an error rather than
// compiled into something that exhausts memory.
const MaxInst = 1 << 20

// MaxDepth bounds how deeply a grammar's tree may nest (a node inside a
// node, counted from a rule's body), and how deeply compiling may nest
// rules it inlines. The compiler and the parser follow the tree by
// recursion, so a bound keeps their stack small (a few megabytes at
// worst) instead of letting a hostile tree exhaust it. Grammars written
// by hand nest a few levels deep, and those lowered from JSON Schema
// about six per level of the schema; a deeper rule to inline is called
// instead, so only a single rule's tree can exceed it.
const MaxDepth = 10000

// Causes an Error may wrap, for errors.Is.
var (
	// ErrTooLarge: the compiled grammar would exceed MaxInst
	// instructions, or a front end's size limit.
	ErrTooLarge = errors.New("grammar too large")
	// ErrTooDeep: the grammar nests deeper than MaxDepth, or than a
	// front end's nesting limit.
	ErrTooDeep = errors.New("grammar nested too deeply")
)

// Error is a grammar error at a position in the grammar's source. The
// front ends (grammar/gbnf, grammar/regex) and Compile return their
// errors as *Error, so that a caller can find the position with
// errors.As.
type Error struct {
	File string // the source's name (a file name, "regex"); may be empty
	Pos  Pos    // where in the source; Line is 0 when not known
	Msg  string
	Err  error // the cause, if any (ErrTooLarge, ErrTooDeep, a parser's error)
}

// Error returns "file:line:col: message", leaving out what is not known.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Pos.Line > 0 {
		fmt.Fprintf(&b, "%d:%d:", e.Pos.Line, e.Pos.Col)
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Compile checks g and lowers it to a Prog. Undefined rules, a missing
// start rule and a start rule that matches no string are errors. Rules
// that match no string (every alternative recurses forever) are pruned,
// with a warning, so that every state the parser can reach can still be
// completed to a string of the language. Errors are *Error, naming
// g.File.
//
// Compile leaves g as it is: the warnings go on the Prog. It only reads
// g, so one grammar may be compiled by many goroutines at once. Its
// work and memory grow with the size of g's tree, counting a node once
// however many parents share it, and with the size of the Prog.
func Compile(g *Grammar) (*Prog, error) {
	p, _, err := compileProg(g, true)
	return p, err
}

// compileProg is Compile; with copying false, every copy of an inlined
// rule's body is compiled rather than copied (see copyInlined), and
// copied counts the instructions copied.
func compileProg(g *Grammar, copying bool) (p *Prog, copied int, err error) {
	return compileProgSharing(g, copying, true)
}

// compileProgSharing is compileProg; with share false, a node is
// compiled anew at each place even where it goes on as before (see
// compiledNodes).
func compileProgSharing(g *Grammar, copying, share bool) (p *Prog, copied int, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, &Error{File: g.File, Msg: fmt.Sprintf("internal error compiling the grammar: %v", r)}
		}
	}()
	c := &compiler{g: g, index: newRuleIndex(len(g.Rules)), prog: &Prog{}, noCopies: !copying}
	if !share {
		c.nodeCode.off = 1
	}
	for i, r := range g.Rules {
		if !c.index.add(r.Name, i) {
			return nil, 0, c.errorf(r.Pos, nil, "rule %s is defined twice", r.Name)
		}
	}
	start, ok := c.index.find(g.Start)
	if !ok {
		return nil, 0, c.errorf(Pos{}, nil, "no start rule %q", g.Start)
	}
	// One walk over each rule checks it, measures it, counts the calls
	// it makes and judges whether it is productive so far.
	sizes := make([]int, len(g.Rules))
	c.productive = make([]bool, len(g.Rules))
	c.heights = make([]int, len(g.Rules))
	c.repeats = make([]bool, len(g.Rules))
	c.refs.at = make([]int, len(g.Rules)+1)
	// About nine references a rule in MaskBench's median grammars: sized
	// for ten rather than grown by append from nothing, up to 65,536 (a
	// grammar of many empty rules would otherwise reserve ten entries for
	// each); larger ones grow.
	refCap := min(10*len(g.Rules), 1<<16)
	c.refs.to = make([]int32, 0, refCap)
	c.refs.tail = make([]bool, 0, refCap)
	c.refs.level = make([]int32, 0, refCap)
	for i := range g.Rules {
		c.refs.at[i] = len(c.refs.to)
		size, productive, err := c.scan(i)
		if err != nil {
			return nil, 0, err
		}
		sizes[i], c.productive[i] = size, productive
	}
	c.refs.at[len(g.Rules)] = len(c.refs.to)
	c.productivity()
	c.allProductive = !c.emptyAlt && !slices.Contains(c.productive, false)
	if !c.productive[start] {
		return nil, 0, c.errorf(g.Rules[start].Pos, nil, "start rule %s matches no string: each of its alternatives recurses without end", g.Start)
	}
	p = c.prog
	p.Warnings = append(p.Warnings, g.Warnings...)
	for i, r := range g.Rules {
		if !c.productive[i] {
			p.Warnings = append(p.Warnings, (&Error{File: g.File, Pos: r.Pos, Msg: fmt.Sprintf("rule %s matches no string and is never used", r.Name)}).Error())
		}
	}
	// Refuse before unrolling what would exceed the budget.
	if err := c.checkSize(sizes); err != nil {
		return nil, 0, err
	}
	// Compile the grammar with its non-recursive rules inlined: the
	// program's rules are the others, in order.
	var emitted int
	calls := func() *callGraph { return newCallGraph(len(g.Rules), &c.refs) } // when inline needs it
	c.inlined, emitted = inline(g.Rules, sizes, calls, g.Start, c.repeats)
	c.boundInlining()
	c.progRule = make([]uint32, len(g.Rules))
	called := 0
	for _, in := range c.inlined {
		if !in {
			called++
		}
	}
	p.Rules = make([]ProgRule, 0, called)
	for i, r := range g.Rules {
		if !c.inlined[i] {
			c.progRule[i] = uint32(len(p.Rules))
			p.Rules = append(p.Rules, ProgRule{Name: r.Name})
		}
	}
	p.Start = int(c.progRule[start])
	total := 0
	for _, s := range sizes {
		total += s
	}
	c.jump = c.jumpRules(start)
	// Programs come to 0.2 to 0.6 of the estimate with inlining (the
	// copies it counts are shared where they go on at the same place),
	// and to 0.7 to 2.4 of the grammar's unrolled size; the few that
	// pass the larger of 0.6 of the one and the other grow by append.
	p.Inst = make([]Inst, 0, min(max(total, emitted/5*3)+len(p.Rules), MaxInst))
	for i, r := range g.Rules {
		if c.inlined[i] {
			continue
		}
		c.rule = i
		pr := c.progRule[i]
		match := c.emit(Inst{Op: InstMatch, Arg: pr})
		if !c.productive[i] || c.jump[i] { // a jump rule's code is in its caller's
			p.Rules[pr].Start = c.emit(Inst{Op: InstFail})
			continue
		}
		c.match = match
		clear(c.jumpEntry)
		entry, err := c.compile(r.Body, match)
		if err == nil {
			err = c.compileJumps()
		}
		if err != nil {
			return nil, 0, err
		}
		c.patchJump(i, entry) // the rule's tail references of itself
		p.Rules[pr].Start = entry
	}
	if c.err != nil {
		return nil, 0, c.err
	}
	c.nullable()
	if waste := cap(p.Inst) - len(p.Inst); waste > len(p.Inst)/2 && waste > 1<<16 {
		p.Inst = slices.Clone(p.Inst) // a large program much below its estimate keeps only what it uses
	}
	return p, c.copied, nil
}

// errorf returns an *Error of g's source at pos, wrapping cause.
func (c *compiler) errorf(pos Pos, cause error, format string, args ...any) error {
	return &Error{File: c.g.File, Pos: pos, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// nodeErrorf is errorf at node n of rule i: where n's position is not
// known (a grammar built in Go), the message names the rule instead.
func (c *compiler) nodeErrorf(i int, n *Node, cause error, format string, args ...any) error {
	if n.Pos().Line > 0 {
		return c.errorf(n.Pos(), cause, format, args...)
	}
	r := &c.g.Rules[i]
	return c.errorf(r.Pos, cause, "rule %s: %s", r.Name, fmt.Sprintf(format, args...))
}

type compiler struct {
	g          *Grammar
	index      *ruleIndex
	prog       *Prog
	productive []bool
	// allProductive is set, once productivity has run, when every rule
	// is productive and no alternation is empty: then every node is.
	allProductive bool
	err           error
	rule          int // the rule being compiled, for errors
	// match is the rule's last instruction.
	match uint32
	// refs is what scan finds, for the call graph and jumpRules; jump
	// marks the rules compiled as jumps; jumpEntry holds the entries of
	// the copies in the rule being compiled that its tail references
	// jump to (its own body's too), and pending those still to compile
	// (see jumpTo).
	refs      ruleRefs
	jump      []bool
	jumpEntry map[int]uint32
	pending   []int
	// litPlans are the literal tries of alternations (see literalPlan),
	// and litEntry and litDone literals' scratch.
	litPlans  map[*Node]*litPlan
	litEntry  []uint32
	litDone   []bool
	classInst []uint32 // the byte instructions of the class being compiled, for classByte
	classAlts []uint32 // the entries of the class being compiled
	altStack  []uint32 // the entries of the alternations being compiled, innermost last
	litBuf    []byte   // a literal's UTF-8, being compiled
	seqs      map[[2]rune][][]byteRange
	// inlined marks the grammar's rules that are compiled in place at
	// each reference (see inline); progRule is the program rule of each
	// of the others.
	inlined  []bool
	progRule []uint32
	// expanded is the unrolled size of each inlined rule's body, with its
	// inlined references in place, plus one for the reference; 0 until
	// measured. expandedNode remembers it for the bodies of repetitions.
	expanded     []int
	expandedNode map[*Node]int
	// hoistedRules finds the rule a repeated body was hoisted into, by
	// the body's node: bodies an inlined rule shares are hoisted once.
	hoistedRules map[*Node]*Node
	done         map[compiled]uint32
	doneLog      []doneEntry  // done's additions in order, for copies
	copies       []inlineCopy // by rule: the inlined body's code to copy (see copyInlined)
	noCopies     bool         // compile every copy (for tests)
	copied       int          // instructions copied
	callTo       []uint32     // by instruction: the last call going on at it, plus one (see call)
	nodeCode     compiledNodes

	// What scan learns besides refs: visits counts the nodes it walked;
	// heights[i] is the height of rule i's tree.
	visits  int
	heights []int
	// judged counts the rules productivity's worklist judged (for tests).
	judged int
	// emptyAlt is set when an alternation has no branches (it matches
	// nothing).
	emptyAlt bool
	// repeats marks the rules whose body is a bounded repetition that
	// hoists its body: inline leaves them called (see inline).
	repeats []bool
	// big is the first node found whose unrolled size alone exceeds
	// MaxInst, and its rule, for the error that names it.
	big      *Node
	bigRule  int
	bigSize  int
	bigInner int // the unrolled size of big's body, when a repetition
}

// maxVisits bounds the nodes scan walks, a subtree shared by several
// parents counting at each. Every node but an empty literal counts at
// least one instruction in the unrolled size, so a grammar that needs
// more visits is far too large anyway; the bound keeps scan linear when
// a tree shares subtrees exponentially often.
const maxVisits = 8 * MaxInst

// scan checks rule i's tree, adds the references it makes to refs (by
// rule index, and whether each is the body's last step: the call graph
// and jumpRules are built from them), marks the rule in repeats when its
// body is a bounded repetition that hoists its body, and returns its
// unrolled size (see nodeSize), in one walk. It recurses at most
// MaxDepth deep, so the compile passes after it, which recurse as deep
// as the tree, are safe.
//
// The same walk reports whether the body derives a string through the
// rules already found productive (those scanned before it, whose bodies
// did). Front ends write the rules many others use, such as whitespace
// and JSON values, first, so a rule whose calls go to those is settled
// here; productivity walks only the others (a rule whose callee comes
// after it, or calls itself).
func (c *compiler) scan(i int) (size int, productive bool, err error) {
	body := c.g.Rules[i].Body
	if body == nil {
		return 0, false, c.errorf(c.g.Rules[i].Pos, nil, "rule %s has no body", c.g.Rules[i].Name)
	}
	return c.scanNode(i, body, 1, true)
}

// scanNode is scan of node n at depth, n being the body's last step
// when tail is set: the last item of a sequence, a branch of an
// alternation, never inside a repetition (see jumpRules).
func (c *compiler) scanNode(i int, n *Node, depth int, tail bool) (size int, productive bool, err error) {
	if n == nil {
		return 0, false, c.nodeErrorf(i, &Node{}, nil, "nil node in the grammar's tree")
	}
	if depth > MaxDepth {
		return 0, false, c.nodeErrorf(i, n, ErrTooDeep, "the grammar nests more than %d deep (MaxDepth), or its tree contains itself", MaxDepth)
	}
	if c.visits++; c.visits > maxVisits {
		r := &c.g.Rules[i]
		return 0, false, c.errorf(r.Pos, ErrTooLarge, "grammar too large: its tree, a shared subtree counted at each use, has more than %d nodes (at rule %s)", maxVisits, r.Name)
	}
	// productive as nodeProductive judges it, with the rules settled so
	// far: a sequence needs every item, an alternation one branch.
	productive = n.Op != OpAlt
	switch n.Op {
	case OpEmpty, OpLit, OpBytes, OpSeq:
	case OpAlt:
		c.emptyAlt = c.emptyAlt || len(n.Subs) == 0
	case OpRef:
		t, ok := c.index.find(n.Name)
		if !ok {
			return 0, false, c.nodeErrorf(i, n, nil, "undefined rule %s", n.Name)
		}
		c.refs.to = append(c.refs.to, int32(t))
		c.refs.tail = append(c.refs.tail, tail)
		c.refs.level = append(c.refs.level, int32(depth))
		productive = c.productive[t]
	default:
		if err := c.check(i, n); err != nil {
			return 0, false, err
		}
	}
	if len(n.Subs) == 0 {
		c.heights[i] = max(c.heights[i], depth)
	}
	subs := 0
	for k, s := range n.Subs {
		last := (n.Op == OpSeq && tail && k == len(n.Subs)-1) || (n.Op == OpAlt && tail)
		size, sub, err := c.scanNode(i, s, depth+1, last)
		if err != nil {
			return 0, false, err
		}
		subs = satAdd(subs, size)
		switch n.Op {
		case OpSeq:
			productive = productive && sub
		case OpAlt:
			productive = productive || sub
		case OpRepeat:
			productive = n.Min == 0 || sub
		}
	}
	size = nodeSize(n, subs)
	if depth == 1 && hoists(n, subs) && n.Max >= 0 {
		c.repeats[i] = true
	}
	if size > MaxInst && c.big == nil {
		c.big, c.bigRule, c.bigSize, c.bigInner = n, i, size, subs
	}
	return size, productive, nil
}

// check checks node n of rule i on its own.
func (c *compiler) check(i int, n *Node) error {
	switch n.Op {
	case OpClass:
		if len(n.Runes()) == 0 {
			return c.nodeErrorf(i, n, nil, "empty character class matches nothing")
		}
		if len(n.Runes())%2 != 0 {
			return c.nodeErrorf(i, n, nil, "character class with an odd number of range bounds")
		}
	case OpRepeat:
		if len(n.Subs) != 1 {
			return c.nodeErrorf(i, n, nil, "repetition with %d bodies, want 1", len(n.Subs))
		}
		if n.Min < 0 || (n.Max >= 0 && n.Max < n.Min) || n.Max < -1 {
			return c.nodeErrorf(i, n, nil, "bad repetition {%d,%d}", n.Min, n.Max)
		}
	case OpToken:
		if len(n.Tokens().Tokens) == 0 {
			return c.nodeErrorf(i, n, nil, "empty token set")
		}
	case OpEmpty, OpLit, OpBytes, OpSeq, OpAlt, OpRef: // checked in scanNode, if at all
	default:
		return c.nodeErrorf(i, n, nil, "unknown node kind %s", n.Op)
	}
	return nil
}

// checkSize refuses a grammar whose unrolled size exceeds MaxInst,
// saying what in it is too large.
func (c *compiler) checkSize(sizes []int) error {
	total, largest := 0, 0
	for i, s := range sizes {
		total = satAdd(total, s)
		if s > sizes[largest] {
			largest = i
		}
	}
	if total <= MaxInst {
		return nil
	}
	if n := c.big; n != nil {
		return c.nodeErrorf(c.bigRule, n, ErrTooLarge, "grammar too large: %s would take about %d instructions to compile, more than the limit of %d", c.describe(n), c.bigSize, MaxInst)
	}
	r := &c.g.Rules[largest]
	return c.errorf(r.Pos, ErrTooLarge, "grammar too large: its %d rules would take about %d instructions to compile, more than the limit of %d (the largest, rule %s, about %d)", len(sizes), total, MaxInst, r.Name, sizes[largest])
}

// describe says what n is, for checkSize.
func (c *compiler) describe(n *Node) string {
	switch n.Op {
	case OpLit:
		return fmt.Sprintf("a literal of %d characters", len(n.Runes()))
	case OpBytes:
		return fmt.Sprintf("a literal of %d bytes", len(n.Bytes()))
	case OpClass:
		return fmt.Sprintf("a character class of %d ranges", len(n.Runes())/2)
	case OpSeq:
		return fmt.Sprintf("a sequence of %d items", len(n.Subs))
	case OpAlt:
		return fmt.Sprintf("an alternation of %d branches", len(n.Subs))
	case OpRepeat:
		bounds := fmt.Sprintf("{%d,%d}", n.Min, n.Max)
		if n.Max < 0 {
			bounds = fmt.Sprintf("{%d,}", n.Min)
		}
		return fmt.Sprintf("a repetition %s of a body of about %d instructions", bounds, c.bigInner)
	}
	return "a " + n.Op.String() + " node"
}

// boundInlining keeps compiling within MaxDepth: a rule inlined at a
// reference nests its tree there, and a chain of inlined rules nests
// them all. Where that would exceed MaxDepth, the rule is called
// instead of inlined (the language is the same). It works on the rules
// callees first, without recursion. A chain holds a rule at most once,
// so when the rules' heights sum to MaxDepth or less, or nothing is
// inlined, there is nothing to do.
func (c *compiler) boundInlining() {
	n, sum := len(c.g.Rules), 0
	for _, h := range c.heights {
		sum += h
	}
	if sum <= MaxDepth || !slices.Contains(c.inlined, true) {
		return
	}
	refs := &c.refs
	depth := make([]int, n) // with inlined rules in place; 0 until known
	type frame struct{ rule, next int }
	var stack []frame
	for r := range n {
		if depth[r] != 0 {
			continue
		}
		stack = append(stack[:0], frame{r, 0})
		depth[r] = -1 // on the stack
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if k := refs.at[f.rule] + f.next; k < refs.at[f.rule+1] {
				t := int(refs.to[k])
				f.next++
				if c.inlined[t] && depth[t] == 0 {
					depth[t] = -1
					stack = append(stack, frame{t, 0})
				}
				continue
			}
			d := c.heights[f.rule]
			for k := refs.at[f.rule]; k < refs.at[f.rule+1]; k++ {
				t := int(refs.to[k])
				if !c.inlined[t] || depth[t] < 0 {
					continue // called, or (only if inlining ever makes a cycle) called anyway
				}
				if e := int(refs.level[k]) - 1 + depth[t]; e > MaxDepth {
					c.inlined[t] = false
				} else {
					d = max(d, e)
				}
			}
			depth[f.rule] = d
			stack = stack[:len(stack)-1]
		}
	}
}

// productivity finds the rules that derive at least one string, from
// those scan found productive. A few passes over the others settle most
// grammars (last rule first: apart from the rules they share, front
// ends write callers before callees); a long chain of rules, which would
// take a pass per rule, goes on with a worklist, in which a rule is
// judged again only when a rule it calls becomes productive.
func (c *compiler) productivity() {
	n := len(c.g.Rules)
	for range 3 {
		changed := false
		for i := n - 1; i >= 0; i-- {
			if !c.productive[i] && c.nodeProductive(c.g.Rules[i].Body) {
				c.productive[i], changed = true, true
			}
		}
		if !changed {
			return
		}
	}
	callers := c.refs.callers(n)
	var queue []int
	for i := range n {
		if c.productive[i] {
			queue = append(queue, i)
		}
	}
	judge := func(i int) {
		c.judged++
		if c.nodeProductive(c.g.Rules[i].Body) {
			c.productive[i] = true
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		x := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		prev := int32(-1)
		for _, a := range callers.of(x) {
			if a != prev && !c.productive[a] { // a caller of k references is listed k times, in a row
				judge(int(a))
			}
			prev = a
		}
	}
}

func (c *compiler) nodeProductive(n *Node) bool {
	if c.allProductive {
		return true
	}
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
		return n.hoisted > 0 || c.productive[c.index.of(n.Name)] // hoisted rules are productive
	case OpClass:
		return len(n.Runes()) > 0
	}
	return true
}

func (c *compiler) emit(in Inst) uint32 {
	if len(c.prog.Inst) >= MaxInst && c.err == nil {
		r := &c.g.Rules[c.rule]
		c.err = c.errorf(r.Pos, ErrTooLarge, "grammar too large: compiling rule %s, with the rules inlined into it, takes more than the limit of %d instructions", r.Name, MaxInst)
	}
	if c.err != nil {
		return 0
	}
	c.prog.Inst = append(c.prog.Inst, in)
	return uint32(len(c.prog.Inst) - 1)
}

// call returns an instruction calling program rule rule and going on
// at next: the one emitted last for next when it calls the same rule,
// so that the code before it compiled for each reference is shared too
// (the escapes and multi-byte characters of each character of a key
// trie, say, which all continue at one call of the rest of the key).
func (c *compiler) call(rule, next uint32) uint32 {
	if int(next) < len(c.callTo) {
		if at := c.callTo[next]; at > 0 {
			if in := c.prog.Inst[at-1]; in.Op == InstCall && in.Arg == rule && in.Out == next {
				return at - 1
			}
		}
	}
	at := c.emit(Inst{Op: InstCall, Arg: rule, Out: next})
	if c.err == nil {
		c.noteCall(next, at)
	}
	return at
}

// noteCall records the call at at, going on at next, as the last one.
func (c *compiler) noteCall(next, at uint32) {
	if int(next) >= len(c.callTo) { // grow ahead: calls come all along the program
		grown := make([]uint32, max(cap(c.prog.Inst), 2*len(c.callTo), int(next)+1))
		copy(grown, c.callTo)
		c.callTo = grown
	}
	c.callTo[next] = at + 1
}

func (c *compiler) split(a, b uint32) uint32 { return c.emit(Inst{Op: InstSplit, Out: a, Arg: b}) }

// compile emits n so that it continues at next, and returns its entry.
// n is productive.
func (c *compiler) compile(n *Node, next uint32) (uint32, error) {
	if c.err != nil {
		return 0, c.err
	}
	if len(n.Subs) < 2 || c.nodeCode.off > 0 {
		return c.compileNode(n, next)
	}
	// A sequence or alternation met again to go on at the same place is
	// the same code (see compiledNodes).
	slot := c.nodeCode.slot(n, next)
	if slot.node == n && slot.next == next {
		return slot.at, nil
	}
	at, err := c.compileNode(n, next)
	if err == nil {
		*slot = compiledNode{n, next, at}
	}
	return at, err
}

// compileInlined emits the body of inlined rule i, continuing at next.
// Its code depends only on i and next, and instructions do not change
// once compile returns, so it is emitted once per next: one copy, and
// one parser state, where each reference would make its own. At another
// next, the code is copied rather than compiled again where that makes
// the same instructions (see copyInlined).
func (c *compiler) compileInlined(i int, next uint32) (uint32, error) {
	key := compiled{i, next}
	if at, ok := c.done[key]; ok {
		return at, nil
	}
	if at, ok := c.copyInlined(i, next); ok {
		c.remember(key, at)
		return at, nil
	}
	m := c.mark()
	c.nodeCode.off++
	at, err := c.compile(c.g.Rules[i].Body, next)
	c.nodeCode.off--
	if err == nil {
		c.keepCopy(i, next, at, m)
		c.remember(key, at)
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
		b := c.litBuf[:0]
		for _, r := range n.Runes() {
			if r < 0 || r > utf8.MaxRune || (r >= 0xD800 && r <= 0xDFFF) {
				return 0, c.nodeErrorf(c.rule, n, nil, "code point U+%04X cannot be encoded in UTF-8", r)
			}
			b = utf8.AppendRune(b, r)
		}
		c.litBuf = b
		return c.bytes(b, next), nil
	case OpBytes:
		return c.bytes(n.Bytes(), next), nil
	case OpClass:
		// The sequences share their equal suffixes (the continuation
		// bytes of multi-byte characters): a smaller program, and one
		// parser state where there would be a copy per lead byte.
		alts := c.classAlts[:0] // a class compiles nothing else meanwhile
		c.classInst = c.classInst[:0]
		ranges := n.Runes()
		for i := 0; i+1 < len(ranges); i += 2 {
			if lo, hi := ranges[i], ranges[i+1]; lo >= 0 && hi < utf8.RuneSelf && lo <= hi {
				alts = append(alts, c.emit(Inst{Op: InstByte, Lo: byte(lo), Hi: byte(hi), Out: next})) // one byte
				continue
			}
			for _, seq := range c.sequences(ranges[i], ranges[i+1]) {
				at := next
				for j := len(seq) - 1; j >= 0; j-- {
					at = c.classByte(seq[j].lo, seq[j].hi, at)
				}
				alts = append(alts, at)
			}
		}
		c.classAlts = alts
		if len(alts) == 0 {
			return 0, c.nodeErrorf(c.rule, n, nil, "character class %s has no encodable code point", n)
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
		// The branches' entries go on altStack, above those of the
		// alternations this one is inside.
		base := len(c.altStack)
		plan, err := c.literalPlan(n)
		if err != nil {
			return 0, err
		}
		if plan != nil {
			at := c.literals(plan, next) // before the append reads altStack
			c.altStack = append(c.altStack, at)
		}
		for _, s := range n.Subs {
			if !c.nodeProductive(s) || (plan != nil && isLiteral(s)) {
				continue
			}
			e, err := c.compile(s, next)
			if err != nil {
				return 0, err // the compile stops: the stack is not used again
			}
			c.altStack = append(c.altStack, e)
		}
		at := c.alts(c.altStack[base:])
		c.altStack = c.altStack[:base]
		return at, nil
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
			var starts []uint32 // where each copy begins, for recordRepeat
			if n.Max-n.Min > minRepeat {
				starts = make([]uint32, 0, n.Max-n.Min)
			}
			for range n.Max - n.Min {
				if starts != nil {
					starts = append(starts, uint32(len(c.prog.Inst)))
				}
				body, err := c.compile(sub, at)
				if err != nil {
					return 0, err
				}
				at = c.split(body, next)
			}
			c.recordRepeat(starts)
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
			return c.call(uint32(n.hoisted-1), next), nil
		}
		i := c.index.of(n.Name)
		if c.inlined[i] {
			return c.compileInlined(i, next)
		}
		if c.jump[i] && next != c.match {
			return 0, c.nodeErrorf(c.rule, n, nil, "internal error: rule %s, compiled as a jump, referred to where something follows (a bug in reins)", n.Name)
		}
		if (c.jump[i] || i == c.rule) && next == c.match {
			return c.jumpTo(i), nil
		}
		return c.call(c.progRule[i], next), nil
	case OpToken:
		c.prog.TokenSets = append(c.prog.TokenSets, n.Tokens())
		return c.emit(Inst{Op: InstToken, Arg: uint32(len(c.prog.TokenSets) - 1), Out: next}), nil
	}
	return 0, c.nodeErrorf(c.rule, n, nil, "cannot compile %s node", n.Op)
}

// minRepeat is the fewest alike copies worth recording as RepeatCopies.
const minRepeat = 32

// recordRepeat records the copies of a bounded repetition's body that
// compiled alike, from the second on (the first may have compiled code
// the others share), as RepeatCopies; starts[i] is where copy i begins, and
// copy i allows i more repetitions after its own. Copies that differ
// (a body whose compiling depends on what was emitted before) are not
// recorded.
func (c *compiler) recordRepeat(starts []uint32) {
	if len(starts) < minRepeat+1 || c.err != nil {
		return
	}
	inst := c.prog.Inst
	end := uint32(len(inst))
	l := starts[2] - starts[1]
	if l == 0 || starts[len(starts)-1]+l != end {
		return
	}
	for k := 2; k < len(starts); k++ {
		if starts[k]-starts[k-1] != l {
			return
		}
	}
	lo := starts[1]
	// Every instruction of copy k is that of copy k-1 shifted by l: its
	// jumps into the copies (or the first) shifted too, its others the
	// same.
	moved := func(x, y uint32) bool {
		if x >= lo-l && x < end-l {
			return y == x+l
		}
		return x == y
	}
	for pc := lo + l; pc < end; pc++ {
		a, b := inst[pc-l], inst[pc]
		if a.Op != b.Op || a.Lo != b.Lo || a.Hi != b.Hi {
			return
		}
		if !moved(a.Out, b.Out) {
			return
		}
		switch a.Op {
		case InstSplit:
			if !moved(a.Arg, b.Arg) {
				return
			}
		case InstToken:
			if !tokenSetsEqual(c.prog.TokenSets[a.Arg], c.prog.TokenSets[b.Arg]) {
				return
			}
		default:
			if a.Arg != b.Arg {
				return
			}
		}
	}
	c.prog.Repeats = append(c.prog.Repeats, RepeatCopies{Start: lo, Len: l, Copies: uint32(len(starts) - 1)})
}

// tokenSetsEqual reports whether two token sets are written alike.
func tokenSetsEqual(a, b TokenSet) bool {
	return a.Negated == b.Negated && slices.Equal(a.Tokens, b.Tokens)
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
	if body.Op == OpRef && body.hoisted == 0 && c.inlined[c.index.of(body.Name)] {
		body = c.g.Rules[c.index.of(body.Name)].Body
	}
	if call, ok := c.hoistedRules[body]; ok { // the same body, hoisted before
		return c.compile(&Node{Op: OpRepeat, Leaf: n.Leaf, Subs: []*Node{call}, Min: n.Min, Max: n.Max}, next)
	}
	rule := uint32(len(c.prog.Rules))
	c.prog.Rules = append(c.prog.Rules, ProgRule{Name: fmt.Sprintf("_rep%d", rule)})
	match := c.emit(Inst{Op: InstMatch, Arg: rule})
	entry, err := c.compile(n.Subs[0], match)
	if err != nil {
		return 0, err
	}
	c.prog.Rules[rule].Start = entry
	call := &Node{Op: OpRef, Name: c.prog.Rules[rule].Name, hoisted: int32(rule) + 1}
	if c.hoistedRules == nil {
		c.hoistedRules = map[*Node]*Node{}
	}
	c.hoistedRules[body] = call
	return c.compile(&Node{Op: OpRepeat, Leaf: n.Leaf, Subs: []*Node{call}, Min: n.Min, Max: n.Max}, next)
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

// nullable marks the rules that match the empty string. It follows
// the empty paths of each rule with a stack of its own: a long sequence
// of optional items is a long chain of splits.
func (c *compiler) nullable() {
	p := c.prog
	// Generation stamps, in the memory of the calls' table when it is
	// large enough: the program is compiled, and the table not needed.
	seen := c.callTo[:0]
	c.callTo = nil
	if cap(seen) < len(p.Inst) {
		seen = make([]uint32, len(p.Inst))
	} else {
		seen = seen[:len(p.Inst)]
		clear(seen)
	}
	gen := uint32(0)
	var stack []uint32
	reach := func(pc uint32) bool {
		stack = append(stack[:0], pc)
		for len(stack) > 0 {
			pc := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[pc] == gen {
				continue
			}
			seen[pc] = gen
			in := p.Inst[pc]
			switch in.Op {
			case InstMatch:
				return true
			case InstSplit:
				stack = append(stack, in.Arg, in.Out)
			case InstCall:
				if p.Rules[in.Arg].Nullable {
					stack = append(stack, in.Out)
				}
			}
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

// sizeCap is where size estimates saturate: far above MaxInst, so that
// an error can say how large a grammar would be, and far below
// overflow.
const sizeCap = 1 << 40

func satAdd(a, b int) int { return min(a+b, sizeCap) }

func satMul(a, b int) int {
	if a != 0 && b > sizeCap/a {
		return sizeCap
	}
	return min(a*b, sizeCap)
}

// expandedSize is n's unrolled size (see nodeSize) with the inlined
// rules n refers to in place (as compile emits them, before sharing),
// each counting one more for the reference.
func (c *compiler) expandedSize(n *Node) int {
	if n.Op == OpRef && n.hoisted == 0 {
		i := c.index.of(n.Name)
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
	if size, ok := c.expandedNode[n]; ok {
		return size
	}
	subs := 0
	for _, s := range n.Subs {
		subs = satAdd(subs, c.expandedSize(s))
	}
	size := nodeSize(n, subs)
	if c.expandedNode == nil {
		c.expandedNode = map[*Node]int{}
	}
	c.expandedNode[n] = size
	return size
}

// nodeSize estimates the instructions n compiles to (its unrolled size:
// bounded repetitions count a copy of their body per repetition), given
// the sum of its subtrees' estimates, saturating at sizeCap, so that
// nested bounded repetitions are refused cheaply.
func nodeSize(n *Node, subs int) int {
	size := satAdd(1, subs)
	switch n.Op {
	case OpLit:
		size = satAdd(size, 4*len(n.Runes())-1)
	case OpBytes:
		size = satAdd(size, len(n.Bytes())-1)
	case OpClass:
		size = satAdd(size, 2*len(n.Runes())-1)
	}
	if n.Op == OpRepeat {
		copies := repeatCopies(n)
		if hoists(n, subs) {
			return satAdd(size, 2*copies) // see hoisted
		}
		return satMul(size, copies)
	}
	return size
}

// repeatCopies is how many copies of its body repetition n unrolls to.
func repeatCopies(n *Node) int {
	if n.Max < 0 {
		return min(int(n.Min), sizeCap) + 1
	}
	return min(max(int(n.Min), int(n.Max), 1), sizeCap)
}

// hoists reports whether repetition n, its body's unrolled size being
// subs, is estimated to compile its body as a rule of its own (see
// hoisted): the size estimates use it. compile decides on max(Min, Max)
// copies, where an unbounded repetition counts one more here, and on the
// body's size with its inlined rules in place, so the two can differ;
// the estimates, and what stays inlined, are then off, never the
// language.
func hoists(n *Node, subs int) bool {
	return n.Op == OpRepeat && repeatCopies(n) > hoistCopies && satAdd(1, subs) > hoistSize
}
