package grammar

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// InstOp is the kind of a Prog instruction.
type InstOp uint8

// Instruction kinds.
const (
	InstFail  InstOp = iota // matches nothing (a pruned dead end)
	InstByte                // one byte in [Lo, Hi], then Out
	InstSplit               // Out or Arg, consuming nothing
	InstCall                // the rule Arg, then Out
	InstToken               // one whole token of token set Arg, then Out
	InstMatch               // the end of the current rule
)

var instNames = [...]string{"fail", "byte", "split", "call", "token", "match"}

// String returns the instruction kind's name.
func (o InstOp) String() string {
	if int(o) < len(instNames) {
		return instNames[o]
	}
	return fmt.Sprintf("inst(%d)", o)
}

// Inst is one instruction. Jumps are indices into Prog.Inst.
type Inst struct {
	Op     InstOp
	Lo, Hi byte
	Out    uint32
	Arg    uint32
}

// ProgRule is a rule of a Prog.
type ProgRule struct {
	Name     string
	Start    uint32 // first instruction
	Nullable bool   // matches the empty string
}

// RepeatCopies is a run of alike copies of a bounded repetition's body:
// copy k is Inst[Start+k*Len : Start+(k+1)*Len], the same instructions
// as copy 0 shifted by k*Len (jumps within the copies shifted too, the
// others the same), and from anywhere in copy k at least k+1 more
// repetitions of the body may follow. Two parser states that differ
// only in which copy they are in accept the same texts of up to n
// bytes once both copies allow n more repetitions: a state's tokens can
// be computed once for all the copies past that (see
// automaton.Automaton).
type RepeatCopies struct {
	Start, Len, Copies uint32
}

// TokenSet is the set of tokens an InstToken matches.
type TokenSet struct {
	Tokens  []TokenRef
	Negated bool // any token except Tokens (end-of-generation tokens excluded)
}

// Prog is a compiled grammar: a recursive transition network over bytes,
// one instruction graph per rule. A Prog is immutable and safe for
// concurrent use.
type Prog struct {
	Inst      []Inst
	Rules     []ProgRule
	Start     int // index of the start rule
	TokenSets []TokenSet
	// Repeats are the long bounded repetitions of the program, whose
	// optional copies were compiled alike (see RepeatCopies).
	Repeats []RepeatCopies
	// Warnings are the grammar's non-fatal findings: its front end's
	// (Grammar.Warnings), then the compiler's (rules that match no
	// string, pruned), each "file:line:col: message".
	Warnings []string
}

// String dumps the program, one instruction per line, for golden tests.
func (p *Prog) String() string {
	var b strings.Builder
	starts := map[uint32]string{}
	for _, r := range p.Rules {
		starts[r.Start] = r.Name
	}
	for pc, in := range p.Inst {
		if name, ok := starts[uint32(pc)]; ok {
			fmt.Fprintf(&b, "%s:\n", name)
		}
		fmt.Fprintf(&b, "%4d  ", pc)
		switch in.Op {
		case InstByte:
			if in.Lo == in.Hi {
				fmt.Fprintf(&b, "byte %s -> %d\n", quoteByte(in.Lo), in.Out)
			} else {
				fmt.Fprintf(&b, "byte %s-%s -> %d\n", quoteByte(in.Lo), quoteByte(in.Hi), in.Out)
			}
		case InstSplit:
			fmt.Fprintf(&b, "split -> %d, %d\n", in.Out, in.Arg)
		case InstCall:
			fmt.Fprintf(&b, "call %s -> %d\n", p.Rules[in.Arg].Name, in.Out)
		case InstToken:
			ts := p.TokenSets[in.Arg]
			neg := ""
			if ts.Negated {
				neg = "!"
			}
			fmt.Fprintf(&b, "token %s%v -> %d\n", neg, ts.Tokens, in.Out)
		default:
			fmt.Fprintf(&b, "%s\n", in.Op)
		}
	}
	return b.String()
}

// quoteByte writes b as a Go byte literal: an ASCII character as itself
// ('a', '\n', '\x00'), any other byte in hex ('\xc3'), never as the
// Latin-1 character of the same number.
func quoteByte(b byte) string {
	if b < utf8.RuneSelf {
		return strconv.QuoteRune(rune(b))
	}
	return fmt.Sprintf(`'\x%02x'`, b)
}
