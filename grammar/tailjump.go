package grammar

// Rules that are only ever the last step of other rules compile as
// jumps: a rule written as an automaton's states (r1 ::= [a-z] r2 | "\"",
// r2 ::= [0-9] r1 | ...), as JSON Schema's patterns and key sets are,
// calls the next state at each character, and leaves a chain of callers
// one character long each, which every completion walks back and which
// makes each step a parser state of its own. Compiled as jumps inside
// the one rule that calls the first state, the automaton runs as a loop
// in one rule instance: the same few items at every step. The language
// is the same (a call as the last step is a jump: nothing follows it in
// the caller).
//
// The cost: a call's items are shared by every caller that predicted it
// in the same step, where a jump's belong to its owner's instance. Where
// the owner runs from many start positions at once (a highly ambiguous
// grammar, left-recursive with nullable rules, say) the parser keeps a
// copy of the jumped code's items for each of them, and an input can
// pass the parser's work budget that did not before (a review found one
// of 1,190 random grammars that does). Automata's states, the rules this
// is for, run from one start.
//
// Which rules: a rule that is not the start rule, all of whose
// references are tail references (the last step of a rule's body, as
// compile sees it: through sequences' last items, alternations and
// inlined rules, never repetitions), and that one called rule reaches
// through such references; that rule holds the only copy. Any other rule
// is called, as before.

// ruleRefs are the references of every rule's body, rule by rule (scan
// records them, and the call graph is built from them): rule i's are
// to[at[i]:at[i+1]], tail[k] telling whether reference k is its body's
// last step and level[k] its depth in the body's tree (the body is at
// 1; boundInlining reads it).
type ruleRefs struct {
	at    []int
	to    []int32 // rule indexes
	tail  []bool
	level []int32 // depths, at most MaxDepth
}

// jumpRules returns, for each rule, whether compile should make it a
// jump (see above).
func (c *compiler) jumpRules(start int) []bool {
	n := len(c.g.Rules)
	refs := &c.refs
	// An inlined rule's tail references are tail references of where it
	// is inlined, which may not be a last step: nonTail marks the
	// inlined rules placed, somewhere, where something follows.
	nonTail := make([]bool, n)
	var stack []int
	mark := func(i int) {
		if !nonTail[i] {
			nonTail[i] = true
			if c.inlined[i] {
				stack = append(stack, i)
			}
		}
	}
	mark(start)
	for k, t := range refs.to {
		if !refs.tail[k] {
			mark(int(t))
		}
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for k := refs.at[i]; k < refs.at[i+1]; k++ {
			if refs.tail[k] {
				mark(int(refs.to[k]))
			}
		}
	}
	jump := make([]bool, n)
	some := false
	for i := range n {
		jump[i] = !nonTail[i] && !c.inlined[i] && c.productive[i]
		some = some || jump[i]
	}
	if !some {
		return jump
	}
	// targets calls fn for the tail references of rule i that are not
	// inlined, looking through those that are.
	stamp := make([]int, n) // the call of targets that saw each rule last
	call := 0
	targets := func(i int, fn func(t int)) {
		call++
		stamp[i] = call
		stack := append(stack[:0], i)
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for k := refs.at[x]; k < refs.at[x+1]; k++ {
				t := int(refs.to[k])
				if !refs.tail[k] || stamp[t] == call {
					continue
				}
				stamp[t] = call
				if c.inlined[t] {
					stack = append(stack, t)
				} else {
					fn(t)
				}
			}
		}
	}
	// Each jump rule needs one owner: the called rule whose code holds
	// it. One that two called rules reach is called instead, which makes
	// it an owner in turn; this settles in a few rounds (after
	// maxJumpRounds, every rule is called, as without jumps).
	owner := make([]int, n)
	var work []int
	for round, changed := 0, true; changed; round++ {
		if round == maxJumpRounds {
			clear(jump)
			break
		}
		changed = false
		for i := range owner {
			owner[i] = -1
		}
		for i := range n {
			if c.inlined[i] || jump[i] {
				continue
			}
			// Rules reached from i through jump rules.
			work = append(work[:0], i)
			for len(work) > 0 {
				x := work[len(work)-1]
				work = work[:len(work)-1]
				targets(x, func(t int) {
					if !jump[t] {
						return
					}
					switch owner[t] {
					case -1:
						owner[t] = i
						work = append(work, t)
					case i:
					default:
						jump[t], changed = false, true
					}
				})
			}
		}
	}
	return jump
}

// maxJumpRounds bounds the rounds jumpRules takes to settle owners.
const maxJumpRounds = 16

// jumpTo returns the entry of rule j's copy in the rule being compiled,
// for a tail reference to j: a split whose two ways are the entry,
// patched once the copy is compiled (patchJump). For the rule's tail
// references of itself (r1 ::= [a-z] r1 | "\""), the copy is the body
// being compiled, and the jump is back to its start: a loop in the same
// rule instance instead of a new one per character.
func (c *compiler) jumpTo(j int) uint32 {
	if at, ok := c.jumpEntry[j]; ok {
		return at
	}
	at := c.emit(Inst{Op: InstSplit})
	if c.jumpEntry == nil {
		c.jumpEntry = map[int]uint32{}
	}
	c.jumpEntry[j] = at
	if j != c.rule {
		c.pending = append(c.pending, j)
	}
	return at
}

// patchJump points the jump to rule j's copy, if one was asked for, at
// the copy's entry.
func (c *compiler) patchJump(j int, entry uint32) {
	if at, ok := c.jumpEntry[j]; ok && c.err == nil {
		c.prog.Inst[at].Out, c.prog.Inst[at].Arg = entry, entry
	}
}

// compileJumps compiles the copies jumpTo asked for, each continuing at
// the rule's end, and the copies those ask for in turn: a list, not
// recursion, however long a chain of states.
func (c *compiler) compileJumps() error {
	for len(c.pending) > 0 {
		j := c.pending[len(c.pending)-1]
		c.pending = c.pending[:len(c.pending)-1]
		entry, err := c.compile(c.g.Rules[j].Body, c.match)
		if err != nil {
			return err
		}
		c.patchJump(j, entry)
	}
	return nil
}
