package grammar

// An inlined rule referenced at several places compiles to one copy of
// its body per continuation (see compileInlined): the states of a JSON
// object's members in any order each inline the same "any other key"
// member, say, and half the instructions of a typical JSON Schema's
// program are such copies. Compiling a copy walks the body's tree again
// and makes the same decisions; copyInlined instead copies the
// instructions of the last copy compiled, moving its jumps. The program
// is the one compiling would make, instruction for instruction: a copy
// is only taken from code that depends on nothing but the body and its
// continuation, and only where compiling it again would find the same
// shared code (calls and inlined rules going on at the continuation) as
// the first time.

// inlineCopy is the code of an inlined rule's body compiled to go on at
// next: the block [start, end), entered at entry, whose jumps all land
// in the block or at next. firstCall is one plus the program rule of the
// block's first call going on at next (0: none). The additions the
// compile made to done are doneLog[log:logEnd].
type inlineCopy struct {
	start, end, entry, next uint32
	firstCall               uint32
	log, logEnd             int
}

// compileMark is what compileInlined notes before compiling a body, to
// tell afterwards whether the code can be copied.
type compileMark struct {
	inst, rules, repeats, tokens, pending, jumps, log int
}

func (c *compiler) mark() compileMark {
	p := c.prog
	return compileMark{len(p.Inst), len(p.Rules), len(p.Repeats), len(p.TokenSets), len(c.pending), len(c.jumpEntry), len(c.doneLog)}
}

// remember records that inlined rule key.rule, compiled to go on at
// key.next, is entered at at.
func (c *compiler) remember(key compiled, at uint32) {
	if c.done == nil {
		c.done = map[compiled]uint32{}
	}
	c.done[key] = at
	c.doneLog = append(c.doneLog, doneEntry{key, at})
}

// doneEntry is one addition to done, in order.
type doneEntry struct {
	key compiled
	at  uint32
}

// keepCopy keeps the code just compiled for inlined rule i, going on at
// next and entered at entry, as the copy of i's body, when nothing in it
// depends on more than the body and next: it compiled nothing besides
// instructions (no hoisted rule, recorded repetition, token set or
// jump), and every jump in it, and every inlined rule it compiled, lands
// in the block or at next. A body compiled to go on at the rule's end
// may have compiled tail references as jumps; it is not kept.
func (c *compiler) keepCopy(i int, next, entry uint32, m compileMark) {
	if c.noCopies || c.err != nil || next == c.match {
		return
	}
	now := c.mark()
	if now.rules != m.rules || now.repeats != m.repeats || now.tokens != m.tokens || now.pending != m.pending || now.jumps != m.jumps {
		return
	}
	start, end := uint32(m.inst), uint32(now.inst)
	in := func(x uint32) bool { return x == next || x >= start && x < end }
	if !in(entry) {
		return
	}
	for _, d := range c.doneLog[m.log:] {
		if !in(d.key.next) || !in(d.at) {
			return
		}
	}
	firstCall := uint32(0)
	for _, inst := range c.prog.Inst[start:end] {
		switch inst.Op {
		case InstByte:
			if !in(inst.Out) {
				return
			}
		case InstSplit:
			if !in(inst.Out) || !in(inst.Arg) {
				return
			}
		case InstCall:
			if !in(inst.Out) {
				return
			}
			if inst.Out == next && firstCall == 0 {
				firstCall = inst.Arg + 1
			}
		case InstFail:
		default:
			return
		}
	}
	if c.copies == nil {
		c.copies = make([]inlineCopy, len(c.g.Rules))
	}
	c.copies[i] = inlineCopy{start: start, end: end, entry: entry, next: next, firstCall: firstCall, log: m.log, logEnd: len(c.doneLog)}
}

// copyInlined emits inlined rule i's body going on at next by copying
// the code kept for it, and returns its entry; ok is false where there
// is none, or where compiling would not make the same code: at the
// rule's end (where tail references may be jumps), where a call or an
// inlined rule going on at next exists that compiling would share, or
// where the copy would pass MaxInst (compiling reports that).
func (c *compiler) copyInlined(i int, next uint32) (at uint32, ok bool) {
	if c.copies == nil || c.err != nil || next == c.match {
		return 0, false
	}
	t := c.copies[i]
	if t.end == 0 {
		return 0, false
	}
	if len(c.prog.Inst)+int(t.end-t.start) > MaxInst {
		return 0, false
	}
	for _, d := range c.doneLog[t.log:t.logEnd] {
		if _, shared := c.done[compiled{d.key.rule, next}]; shared && d.key.next == t.next {
			return 0, false
		}
	}
	if t.firstCall > 0 && int(next) < len(c.callTo) {
		if at := c.callTo[next]; at > 0 {
			if in := c.prog.Inst[at-1]; in.Op == InstCall && in.Arg == t.firstCall-1 && in.Out == next {
				return 0, false
			}
		}
	}
	c.copied += int(t.end - t.start)
	delta := uint32(len(c.prog.Inst)) - t.start // modulo 2³², as the moves are
	move := func(x uint32) uint32 {
		if x == t.next {
			return next
		}
		return x + delta
	}
	for pc := t.start; pc < t.end; pc++ {
		inst := c.prog.Inst[pc]
		switch inst.Op {
		case InstByte:
			inst.Out = move(inst.Out)
		case InstSplit:
			inst.Out, inst.Arg = move(inst.Out), move(inst.Arg)
		case InstCall:
			inst.Out = move(inst.Out)
		}
		c.prog.Inst = append(c.prog.Inst, inst)
		if inst.Op == InstCall {
			c.noteCall(inst.Out, uint32(len(c.prog.Inst)-1))
		}
	}
	for k := t.log; k < t.logEnd; k++ {
		d := c.doneLog[k]
		c.remember(compiled{d.key.rule, move(d.key.next)}, move(d.at))
	}
	return move(t.entry), true
}
