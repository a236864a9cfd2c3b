package earley

import (
	"sync/atomic"

	"github.com/reins-go/reins/grammar"
)

// Predictions holds, per rule of a program, the items that predicting
// the rule adds to a set: its first instructions (following splits),
// the first instructions of the rules those call, and so on, with each
// call of a rule that can be empty stepped over, as the parsers' closure
// does, all with the set itself as origin. They depend on the rule
// alone, so a parser or a LocalDFA adds them from a list instead of
// following the program each time. They are computed on first use; a
// Predictions is safe for concurrent use, and parsers and LocalDFAs of
// one program may share one.
type Predictions struct {
	prog  *grammar.Prog
	rules []atomic.Pointer[[]closureItem]
}

// NewPredictions returns the (not yet computed) predictions of p.
func NewPredictions(p *grammar.Prog) *Predictions {
	return &Predictions{prog: p, rules: make([]atomic.Pointer[[]closureItem], len(p.Rules))}
}

// closureItem is an item of a rule's prediction closure: its
// instruction, op and argument.
type closureItem struct {
	pc, arg uint32
	op      grammar.InstOp
}

// closureMax bounds the size of a rule's prediction closure that is
// kept: a grammar's closures could otherwise take memory quadratic in its
// size. A larger one is remembered as such, and predicted item by item.
const closureMax = 256

// closure returns rule r's prediction closure, and false when it has
// more than closureMax items.
func (pr *Predictions) closure(r uint32) ([]closureItem, bool) {
	c := pr.rules[r].Load()
	if c == nil {
		c = pr.compute(r)
		pr.rules[r].Store(c) // another goroutine may store the same
	}
	return *c, len(*c) == 0 || (*c)[0].op != grammar.InstFail
}

func (pr *Predictions) compute(r uint32) *[]closureItem {
	prog := pr.prog
	out := []closureItem{}
	seen := map[uint32]bool{}
	var visit func(pc uint32)
	visit = func(pc uint32) {
		for !seen[pc] {
			seen[pc] = true
			in := &prog.Inst[pc]
			switch in.Op {
			case grammar.InstFail:
				return
			case grammar.InstSplit:
				visit(in.Out)
				pc = in.Arg
				continue
			}
			out = append(out, closureItem{pc, in.Arg, in.Op})
			return
		}
	}
	visit(prog.Rules[r].Start)
	for k := 0; k < len(out) && len(out) <= closureMax; k++ {
		if c := out[k]; c.op == grammar.InstCall {
			visit(prog.Rules[c.arg].Start)
			if prog.Rules[c.arg].Nullable {
				visit(prog.Inst[c.pc].Out)
			}
		}
	}
	if len(out) > closureMax {
		out = []closureItem{{op: grammar.InstFail}}
	}
	return &out
}
