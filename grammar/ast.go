package grammar

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Pos is a position in a grammar's source text.
type Pos struct {
	Line, Col int32 // 1-based; 0 when unknown (Col counts characters)
	Offset    int32 // the byte offset from the start of the source; meaningful when Line > 0
}

// String returns "line:col".
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Op is the kind of a Node.
type Op uint8

// Node kinds.
const (
	OpEmpty  Op = iota // matches the empty string
	OpLit              // the code points in Runes, in order
	OpClass            // one code point in the ranges of Runes (pairs lo, hi)
	OpSeq              // Subs in sequence
	OpAlt              // one of Subs
	OpRepeat           // Subs[0] repeated Min to Max times (Max -1: no bound)
	OpRef              // the rule named Name
	OpToken            // one whole token of the set Tokens
	OpBytes            // the raw bytes in Bytes (not necessarily UTF-8)
)

var opNames = [...]string{"empty", "lit", "class", "seq", "alt", "repeat", "ref", "token", "bytes"}

// String returns the op's name as the dump format writes it.
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// TokenRef names a token: by id, or by its text ("<|eot_id|>"), which a
// vocabulary resolves.
type TokenRef struct {
	ID   int    // ≥ 0 when given by id
	Text string // when given by text; ID is -1 then
}

// String writes the token as GBNF does: <[id]> or its text.
func (t TokenRef) String() string {
	if t.Text != "" {
		return t.Text
	}
	return "<[" + strconv.Itoa(t.ID) + "]>"
}

// Node is a node of a grammar's tree.
//
// It is 64 bytes, one cache line: the kind, the children, the bounds and
// the name, which the compiler's walks read at every node, and a
// pointer to the rest (Leaf), which only the leaves and nodes with a
// position have. A large grammar's tree does not fit in the cache, and
// those walks miss it at every node they reach first: at 128 bytes (two
// lines) MaskBench's largest schemas took 8 to 14% longer to compile, at
// 184 (three) 13 to 22%.
type Node struct {
	Op Op
	// hoisted is, on a call compile makes to a hoisted repetition body,
	// the program rule it calls, plus one.
	hoisted  int32
	Min, Max int32   // OpRepeat
	Subs     []*Node // OpSeq, OpAlt, OpRepeat
	Name     string  // OpRef
	Leaf     *Leaf   // OpLit, OpClass, OpBytes, OpToken; and the position of any node that has one
}

// Leaf is what a leaf node matches, and where a node came from.
type Leaf struct {
	// Runes are OpLit's code points, in order, and OpClass's ranges:
	// pairs lo, hi (inclusive), sorted, non-overlapping.
	Runes  []rune
	Bytes  []byte   // OpBytes
	Tokens TokenSet // OpToken
	Pos    Pos      // in the grammar's source; zero when unknown
}

// Runes returns n's code points (OpLit) or ranges (OpClass).
func (n *Node) Runes() []rune {
	if n.Leaf == nil {
		return nil
	}
	return n.Leaf.Runes
}

// Bytes returns n's bytes (OpBytes).
func (n *Node) Bytes() []byte {
	if n.Leaf == nil {
		return nil
	}
	return n.Leaf.Bytes
}

// Tokens returns n's token set (OpToken).
func (n *Node) Tokens() TokenSet {
	if n.Leaf == nil {
		return TokenSet{}
	}
	return n.Leaf.Tokens
}

// Pos returns n's position in the grammar's source, zero when unknown.
func (n *Node) Pos() Pos {
	if n.Leaf == nil {
		return Pos{}
	}
	return n.Leaf.Pos
}

// Rule is a named production.
type Rule struct {
	Name string
	Pos  Pos
	Body *Node
	// Called keeps Compile from inlining the rule, so that its code is
	// compiled once. Compile inlines every rule it can (see inline.go),
	// and a rule referenced from many places then has a copy of its code
	// at each; a front end sets Called where those copies would only make
	// the program larger, as JSON Schema's compiler does for an object's
	// members, referenced from every state of the automaton that takes
	// them in any order. A Called rule whose every reference is the
	// last step of one rule's body may still compile as a jump into that
	// rule (see tailjump.go): its code is compiled once all the same. The
	// language is the same either way.
	Called bool
}

// Grammar is a set of rules and the rule to start from.
type Grammar struct {
	Rules []Rule
	Start string // the start rule's name
	// File names the source the grammar was read from (a file name,
	// "regex"), for the errors and warnings of Compile; it may be empty.
	File string
	// Warnings are non-fatal findings of the front end, such as unused
	// rules, each with its position. Compile leaves them as they are and
	// returns its own on the Prog.
	Warnings []string
}

// Rule returns the rule named name, or nil.
func (g *Grammar) Rule(name string) *Rule {
	for i := range g.Rules {
		if g.Rules[i].Name == name {
			return &g.Rules[i]
		}
	}
	return nil
}

// String returns a compact, deterministic dump of the grammar, one rule
// per line: "name ::= dump". Tests compare it with golden files.
func (g *Grammar) String() string {
	var b strings.Builder
	for _, r := range g.Rules {
		fmt.Fprintf(&b, "%s ::= %s\n", r.Name, r.Body)
	}
	return b.String()
}

// String returns a compact dump of the node, in the style of
// regexp/syntax's tests: lit{abc}, class{a-z}, seq{...}, alt{...|...},
// rep{0,-1 ...}, ref{name}, token{<[5]>}, !token{...}.
func (n *Node) String() string {
	var b strings.Builder
	n.dump(&b)
	return b.String()
}

func (n *Node) dump(b *strings.Builder) {
	switch n.Op {
	case OpEmpty:
		b.WriteString("empty{}")
	case OpLit:
		b.WriteString("lit{")
		for _, r := range n.Runes() {
			writeRune(b, r)
		}
		b.WriteString("}")
	case OpBytes:
		fmt.Fprintf(b, "bytes{%q}", n.Bytes())
	case OpClass:
		b.WriteString("class{")
		ranges := n.Runes()
		for i := 0; i+1 < len(ranges); i += 2 {
			writeRune(b, ranges[i])
			if ranges[i+1] != ranges[i] {
				b.WriteString("-")
				writeRune(b, ranges[i+1])
			}
		}
		b.WriteString("}")
	case OpSeq, OpAlt:
		b.WriteString(n.Op.String())
		b.WriteString("{")
		for i, s := range n.Subs {
			if i > 0 {
				if n.Op == OpAlt {
					b.WriteString("|")
				} else {
					b.WriteString(" ")
				}
			}
			s.dump(b)
		}
		b.WriteString("}")
	case OpRepeat:
		fmt.Fprintf(b, "rep{%d,%d ", n.Min, n.Max)
		n.Subs[0].dump(b)
		b.WriteString("}")
	case OpRef:
		b.WriteString("ref{" + n.Name + "}")
	case OpToken:
		set := n.Tokens()
		if set.Negated {
			b.WriteString("!")
		}
		b.WriteString("token{")
		for i, t := range set.Tokens {
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString(t.String())
		}
		b.WriteString("}")
	default:
		fmt.Fprintf(b, "%s{?}", n.Op)
	}
}

func writeRune(b *strings.Builder, r rune) {
	switch {
	case r == '\\' || r == '{' || r == '}' || r == '-' || r == '|':
		b.WriteByte('\\')
		b.WriteRune(r)
	case r >= 0x20 && r < 0x7f:
		b.WriteRune(r)
	case r < utf8.RuneSelf || r > utf8.MaxRune:
		fmt.Fprintf(b, `\x%02x`, r)
	case r > 0xffff:
		fmt.Fprintf(b, `\U%08x`, r)
	default:
		fmt.Fprintf(b, `\u%04x`, r)
	}
}

// Constructors for front ends and tests.

// Lit returns a node matching s.
func Lit(s string) *Node { return &Node{Op: OpLit, Leaf: &Leaf{Runes: []rune(s)}} }

// Seq returns a node matching subs in sequence.
func Seq(subs ...*Node) *Node { return &Node{Op: OpSeq, Subs: subs} }

// Alt returns a node matching one of subs.
func Alt(subs ...*Node) *Node { return &Node{Op: OpAlt, Subs: subs} }

// Repeat returns a node matching sub min to max times (max -1: unbounded).
func Repeat(sub *Node, min, max int) *Node {
	return &Node{Op: OpRepeat, Subs: []*Node{sub}, Min: RepeatBound(min), Max: RepeatBound(max)}
}

// RepeatBound returns n as a Node's Min or Max: n itself when it fits
// in an int32, else the nearest int32 (math.MaxInt32, which Compile
// refuses as too large, as it would n; or math.MinInt32, a bad bound as
// n is). Front ends that build nodes themselves convert a count with it.
func RepeatBound(n int) int32 {
	return int32(min(max(n, math.MinInt32), math.MaxInt32))
}

// Ref returns a node matching the rule named name.
func Ref(name string) *Node { return &Node{Op: OpRef, Name: name} }

// Class returns a node matching one code point in the given inclusive
// ranges (pairs lo, hi), which it sorts and merges.
func Class(ranges ...rune) *Node {
	return &Node{Op: OpClass, Leaf: &Leaf{Runes: NormalizeRanges(ranges)}}
}

// NormalizeRanges sorts inclusive ranges (pairs lo, hi) and merges those
// that overlap or touch.
func NormalizeRanges(r []rune) []rune {
	type pair struct{ lo, hi rune }
	ps := make([]pair, 0, len(r)/2)
	for i := 0; i+1 < len(r); i += 2 {
		ps = append(ps, pair{r[i], r[i+1]})
	}
	for i := 1; i < len(ps); i++ { // insertion sort: classes are small
		for j := i; j > 0 && ps[j].lo < ps[j-1].lo; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
	out := make([]rune, 0, len(r))
	for _, p := range ps {
		if n := len(out); n > 0 && p.lo <= out[n-1]+1 {
			out[n-1] = max(out[n-1], p.hi)
			continue
		}
		out = append(out, p.lo, p.hi)
	}
	return out
}

// NegateRanges returns the complement of normalized ranges within the
// Unicode code points [0, 0x10FFFF].
func NegateRanges(r []rune) []rune {
	var out []rune
	next := rune(0)
	for i := 0; i+1 < len(r); i += 2 {
		if r[i] > next {
			out = append(out, next, r[i]-1)
		}
		next = r[i+1] + 1
	}
	if next <= utf8.MaxRune {
		out = append(out, next, utf8.MaxRune)
	}
	return out
}
