package grammar

import "slices"

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
// next: the block [start, end), entered at entry; the additions the
// compile made to done are doneLog[log:logEnd]. Whether the block can
// be copied is found on its first use (checked, ok), so that compiling
// inlined rules nested deep does not look over each block at every
// level. firstCall is one plus the program rule of the block's first
// call going on at next (0: none).
type inlineCopy struct {
	start, end, entry, next uint32
	log, logEnd             int
	checked, ok             bool
	firstCall               uint32
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
// next and entered at entry, as the copy of i's body, when it compiled
// nothing besides instructions: no hoisted rule, recorded repetition,
// token set or jump. A body compiled to go on at the rule's end may have
// compiled tail references as jumps; it is not kept. (c.err is checked
// because emit records passing MaxInst there, not in compile's result.)
func (c *compiler) keepCopy(i int, next, entry uint32, m compileMark) {
	if c.noCopies || c.err != nil || next == c.match {
		return
	}
	now := c.mark()
	if now.rules != m.rules || now.repeats != m.repeats || now.tokens != m.tokens || now.pending != m.pending || now.jumps != m.jumps {
		return
	}
	if c.copies == nil {
		c.copies = make([]inlineCopy, len(c.g.Rules))
	}
	c.copies[i] = inlineCopy{start: uint32(m.inst), end: uint32(now.inst), entry: entry, next: next, log: m.log, logEnd: now.log}
}

// copyOK tells whether t's code depends on nothing but the body and
// t.next: every jump in it, its entry, and every inlined rule it
// compiled, land in the block or at t.next. It also finds t.firstCall.
func (c *compiler) copyOK(t *inlineCopy) bool {
	if !t.checked {
		t.checked, t.ok = true, c.copyable(t)
	}
	return t.ok
}

func (c *compiler) copyable(t *inlineCopy) bool {
	in := func(x uint32) bool { return x == t.next || x >= t.start && x < t.end }
	if !in(t.entry) {
		return false
	}
	for _, d := range c.doneLog[t.log:t.logEnd] {
		if !in(d.key.next) || !in(d.at) {
			return false
		}
	}
	for pc := t.start; pc < t.end; pc++ {
		inst := &c.prog.Inst[pc]
		switch inst.Op {
		case InstByte, InstSplit, InstCall, InstFail:
		default:
			return false // a token set or a rule's end: not in a block kept
		}
		out, arg := jumps(inst)
		if out != nil && !in(*out) || arg != nil && !in(*arg) {
			return false
		}
		if inst.Op == InstCall && inst.Out == t.next && t.firstCall == 0 {
			t.firstCall = inst.Arg + 1
		}
	}
	return true
}

// jumps returns in's fields that hold jumps (nil where there are none):
// Out of a byte, call or token, and Out and Arg of a split.
func jumps(in *Inst) (out, arg *uint32) {
	switch in.Op {
	case InstByte, InstCall, InstToken:
		return &in.Out, nil
	case InstSplit:
		return &in.Out, &in.Arg
	}
	return nil, nil
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
	t := &c.copies[i]
	if t.end == 0 || !c.copyOK(t) {
		return 0, false
	}
	size := int(t.end - t.start)
	if len(c.prog.Inst)+size > MaxInst {
		return 0, false
	}
	for _, d := range c.doneLog[t.log:t.logEnd] {
		if d.key.next != t.next {
			continue
		}
		if _, shared := c.done[compiled{d.key.rule, next}]; shared {
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
	c.copied += size
	delta := uint32(len(c.prog.Inst)) - t.start // modulo 2³², as the moves are
	move := func(x uint32) uint32 {
		if x == t.next {
			return next
		}
		return x + delta
	}
	c.prog.Inst = slices.Grow(c.prog.Inst, size)
	for pc := t.start; pc < t.end; pc++ {
		inst := c.prog.Inst[pc]
		out, arg := jumps(&inst)
		if out != nil {
			*out = move(*out)
		}
		if arg != nil {
			*arg = move(*arg)
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
