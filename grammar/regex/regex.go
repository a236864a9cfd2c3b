// Package regex lowers a regular expression, parsed by Go's
// regexp/syntax (Perl flags), into a grammar.Grammar whose language is
// the strings the expression matches entirely, as ^(?:re)$ would.
//
// Anchors are allowed only where they are no-ops: ^ or \A at the start,
// $ or \z at the end. Word boundaries, and anchors anywhere else, are
// errors: they cannot be expressed by a grammar over the output alone.
//
// Errors are *grammar.Error with File "regex" and the position in the
// expression (line and column, counted in characters) of what is wrong.
// Go's regexp/syntax reports the offending text but not where it is, so
// the position is found by looking for that text (or, for parentheses,
// the unmatched one; for anchors and word boundaries, the first one out
// of place): a best effort, which for a fragment that occurs twice may
// name the first. Nesting is bounded by regexp/syntax (1000 levels) and
// so is the size of repetitions; a pattern beyond them is an error that
// wraps grammar.ErrTooDeep or grammar.ErrTooLarge.
package regex

import (
	"errors"
	"fmt"
	"math"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reins-go/reins/grammar"
)

// File is the source name of the errors and grammars of this package.
const File = "regex"

// Parse parses re and returns the grammar of the strings it matches in
// full. The grammar's only rule is "root". Errors are *grammar.Error.
func Parse(re string) (*grammar.Grammar, error) {
	body, err := Lower(re, false)
	if err != nil {
		return nil, err
	}
	return &grammar.Grammar{Start: "root", File: File, Rules: []grammar.Rule{{Name: "root", Body: body}}}, nil
}

// Lower returns the grammar node of the strings re matches: in full, or,
// with search, the strings that contain a match (as JSON Schema's
// "pattern" and ECMAScript's RegExp.test judge them: only a ^ at the start
// or a $ at the end anchors the search). Errors are *grammar.Error.
func Lower(re string, search bool) (n *grammar.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, err = nil, &grammar.Error{File: File, Msg: fmt.Sprintf("internal error lowering the expression: %v", r)}
		}
	}()
	tree, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return nil, syntaxError(re, err)
	}
	if size := SpelledOut(tree, grammar.MaxInst); size > grammar.MaxInst {
		return nil, &grammar.Error{File: File, Msg: fmt.Sprintf("grammar too large: the expression with its counted repetitions spelled out matches more than %d characters one by one: its program would pass grammar.MaxInst", grammar.MaxInst), Err: grammar.ErrTooLarge}
	}
	tree = tree.Simplify()
	l := &lowerer{memo: map[*syntax.Regexp]*grammar.Node{}}
	var body *grammar.Node
	if search {
		body, err = l.lowerSearch(tree, false, false, 0)
	} else {
		body, err = l.lower(stripAnchors(tree))
	}
	if err != nil {
		return nil, lowerError(re, err)
	}
	return body, nil
}

// syntaxError turns an error of regexp/syntax into a *grammar.Error at
// the offending text.
func syntaxError(re string, err error) error {
	var se *syntax.Error
	if !errors.As(err, &se) {
		return &grammar.Error{File: File, Msg: err.Error(), Err: err}
	}
	off := -1
	cause := error(se)
	switch se.Code {
	case syntax.ErrMissingParen, syntax.ErrUnexpectedParen, syntax.ErrNestingDepth:
		off = scan(re).paren(se.Code)
	default:
		off = locate(re, se)
	}
	switch se.Code {
	case syntax.ErrNestingDepth:
		cause = errors.Join(grammar.ErrTooDeep, se)
	case syntax.ErrLarge:
		cause = errors.Join(grammar.ErrTooLarge, se)
	}
	expr := se.Expr
	if len(expr) > 40 { // the whole pattern, for some codes
		k := 40
		for k > 0 && !utf8.RuneStart(expr[k]) {
			k--
		}
		expr = expr[:k] + "…"
	}
	if se.Code == syntax.ErrInvalidUTF8 && se.Expr != "" {
		return &grammar.Error{File: File, Pos: position(re, off), Msg: fmt.Sprintf("%s: byte \\x%02x", se.Code, se.Expr[0]), Err: cause}
	}
	msg := fmt.Sprintf("%s: `%s`", se.Code, expr)
	if se.Code == syntax.ErrInvalidRepeatSize {
		msg += " (counts are at most 1000, and nested counts multiply to at most 1000, as in Go's regexp)"
	}
	return &grammar.Error{File: File, Pos: position(re, off), Msg: msg, Err: cause}
}

// locate returns the offset of the text se is about: the first place
// where it occurs such that the pattern up to its end fails with the
// same error (the pattern before it parsed), or else the first place.
func locate(re string, se *syntax.Error) int {
	first := strings.Index(re, se.Expr)
	if first < 0 || se.Expr == "" {
		return first
	}
	for k, tries := first, 0; k >= 0 && tries < 8; tries++ {
		_, err := syntax.Parse(re[:k+len(se.Expr)], syntax.Perl)
		var e *syntax.Error
		if errors.As(err, &e) && e.Code == se.Code && e.Expr == se.Expr {
			return k
		}
		next := strings.Index(re[k+1:], se.Expr)
		if next < 0 {
			break
		}
		k += 1 + next
	}
	return first
}

// unsupported is an error of lowering: "what text why", where text is
// the construct re as the pattern spells it.
type unsupported struct {
	re        *syntax.Regexp
	what, why string
}

func (e *unsupported) Error() string { return e.what + " " + e.re.String() + " " + e.why }

// lowerError turns an error of lowering into a *grammar.Error at the
// construct it concerns, as far as it can be found.
func lowerError(re string, err error) error {
	var u *unsupported
	if !errors.As(err, &u) || u.re == nil {
		return &grammar.Error{File: File, Msg: err.Error()}
	}
	off := -1
	switch u.re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		off = scan(re).misplacedAnchor(re)
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		off = scan(re).firstOf(`\b`, `\B`)
	default:
		off = strings.Index(re, u.re.String())
	}
	text := u.re.String()
	if off >= 0 && u.re.Op != syntax.OpCharClass {
		text = token(re, off)
	}
	return &grammar.Error{File: File, Pos: position(re, off), Msg: u.what + " " + text + " " + u.why}
}

// position returns the line and column (in characters) of byte offset
// off of re; nothing when off < 0.
func position(re string, off int) grammar.Pos {
	if off < 0 || off > len(re) {
		return grammar.Pos{}
	}
	line, start := 1, 0
	for i := 0; i < off; i++ {
		if re[i] == '\n' {
			line, start = line+1, i+1
		}
	}
	col := utf8.RuneCountInString(re[start:off]) + 1
	return grammar.Pos{Line: int32(min(line, math.MaxInt32)), Col: int32(min(col, math.MaxInt32)), Offset: int32(min(off, math.MaxInt32))}
}

// token returns the special token at offset off of re: an anchor or a
// word boundary, with its backslash.
func token(re string, off int) string {
	if re[off] == '\\' && off+1 < len(re) {
		return re[off : off+2]
	}
	return re[off : off+1]
}

// specials are where the parentheses, anchors and word boundaries of a
// pattern are: outside character classes and escapes.
type specials struct {
	at   []int    // offsets
	text []string // "(", ")", "^", "$", `\A`, `\z`, `\b`, `\B`
	n    int      // the pattern's length
}

// scan finds re's specials, for error positions. It reads the syntax
// regexp/syntax accepts with Perl flags, loosely: it only has to skip
// what cannot hold one.
func scan(re string) *specials {
	s := &specials{n: len(re)}
	add := func(i int, t string) { s.at, s.text = append(s.at, i), append(s.text, t) }
	for i := 0; i < len(re); {
		switch c := re[i]; c {
		case '\\':
			if i+1 >= len(re) {
				return s
			}
			switch e := re[i+1]; {
			case e == 'A' || e == 'z' || e == 'b' || e == 'B':
				add(i, re[i:i+2])
				i += 2
			case e == 'Q':
				if end := strings.Index(re[i+2:], `\E`); end >= 0 {
					i += 2 + end + 2
				} else {
					return s
				}
			case (e == 'x' || e == 'p' || e == 'P') && i+2 < len(re) && re[i+2] == '{':
				if end := strings.IndexByte(re[i:], '}'); end >= 0 {
					i += end + 1
				} else {
					return s
				}
			default:
				_, size := utf8.DecodeRuneInString(re[i+1:])
				i += 1 + size
			}
		case '[':
			i = skipClass(re, i)
		case '(', ')', '^', '$':
			add(i, re[i:i+1])
			i++
		default:
			i++
		}
	}
	return s
}

// skipClass returns the offset after the class that starts at re[i].
func skipClass(re string, i int) int {
	j := i + 1
	if j < len(re) && re[j] == '^' {
		j++
	}
	if j < len(re) && re[j] == ']' { // a leading ] is literal
		j++
	}
	for j < len(re) {
		switch {
		case re[j] == '\\':
			j += 2
		case strings.HasPrefix(re[j:], "[:"):
			if end := strings.Index(re[j+2:], ":]"); end >= 0 {
				j += 2 + end + 2
			} else {
				j++
			}
		case re[j] == ']':
			return j + 1
		default:
			j++
		}
	}
	return len(re)
}

// paren returns the offset of the parenthesis a syntax error is about:
// the first ")" without a "(" , the last "(" left open, or the first
// "(" nested too deep; -1 if none is found.
func (s *specials) paren(code syntax.ErrorCode) int {
	var open []int
	for k, t := range s.text {
		switch t {
		case "(":
			open = append(open, s.at[k])
			if code == syntax.ErrNestingDepth && len(open) > 1000 {
				return s.at[k]
			}
		case ")":
			if len(open) == 0 {
				if code == syntax.ErrUnexpectedParen {
					return s.at[k]
				}
				continue
			}
			open = open[:len(open)-1]
		}
	}
	if code == syntax.ErrMissingParen && len(open) > 0 {
		return open[len(open)-1]
	}
	return -1
}

// misplacedAnchor returns the offset of the first anchor that is not at
// the very start or end of the pattern.
func (s *specials) misplacedAnchor(re string) int {
	for k, t := range s.text {
		switch t {
		case "^", `\A`:
			if s.at[k] != 0 {
				return s.at[k]
			}
		case "$", `\z`:
			if s.at[k]+len(t) != len(re) {
				return s.at[k]
			}
		}
	}
	return s.firstOf("^", "$", `\A`, `\z`)
}

// firstOf returns the offset of the first special among texts, or -1.
func (s *specials) firstOf(texts ...string) int {
	for k, t := range s.text {
		for _, want := range texts {
			if t == want {
				return s.at[k]
			}
		}
	}
	return -1
}

// maxDistribute bounds how many alternations lowerSearch distributes a
// concatenation over, so that a pattern cannot blow up.
const maxDistribute = 8

// lowerSearch lowers re for a search: the strings that contain a match,
// where begin and end say whether the match is already anchored at the
// start and at the end of the string. Anchors may stand at the start or
// end of each branch of an alternation: a concatenation is distributed
// over an alternation that holds anchors (^(a$|b) is ^a$|^b).
func (l *lowerer) lowerSearch(re *syntax.Regexp, begin, end bool, distributed int) (*grammar.Node, error) {
	isBegin := func(r *syntax.Regexp) bool { return r.Op == syntax.OpBeginText || r.Op == syntax.OpBeginLine }
	isEnd := func(r *syntax.Regexp) bool { return r.Op == syntax.OpEndText || r.Op == syntax.OpEndLine }
	switch re.Op {
	case syntax.OpCapture:
		return l.lowerSearch(re.Sub[0], begin, end, distributed)
	case syntax.OpAlternate:
		var alts []*grammar.Node
		for _, sub := range re.Sub {
			n, err := l.lowerSearch(sub, begin, end, distributed)
			if err != nil {
				return nil, err
			}
			alts = append(alts, n)
		}
		return grammar.Alt(alts...), nil
	case syntax.OpConcat:
		subs := re.Sub
		for len(subs) > 0 && isBegin(subs[0]) {
			subs, begin = subs[1:], true
		}
		for len(subs) > 0 && isEnd(subs[len(subs)-1]) {
			subs, end = subs[:len(subs)-1], true
		}
		if len(subs) == 1 {
			return l.lowerSearch(subs[0], begin, end, distributed)
		}
		for i, sub := range subs {
			for sub.Op == syntax.OpCapture {
				sub = sub.Sub[0]
			}
			if sub.Op != syntax.OpAlternate || !hasAnchor(sub) {
				continue
			}
			if distributed == maxDistribute {
				return nil, fmt.Errorf("more than %d alternations hold anchors", maxDistribute)
			}
			var alts []*grammar.Node
			for _, branch := range sub.Sub {
				c := &syntax.Regexp{Op: syntax.OpConcat}
				c.Sub = append([]*syntax.Regexp(nil), subs[:i]...)
				if branch.Op == syntax.OpConcat { // keep it flat, so its anchors stand at the ends
					c.Sub = append(c.Sub, branch.Sub...)
				} else {
					c.Sub = append(c.Sub, branch)
				}
				c.Sub = append(c.Sub, subs[i+1:]...)
				n, err := l.lowerSearch(c, begin, end, distributed+1)
				if err != nil {
					return nil, err
				}
				alts = append(alts, n)
			}
			return grammar.Alt(alts...), nil
		}
		c := *re
		c.Sub = subs
		re = &c
	case syntax.OpBeginText, syntax.OpBeginLine:
		begin, re = true, &syntax.Regexp{Op: syntax.OpEmptyMatch}
	case syntax.OpEndText, syntax.OpEndLine:
		end, re = true, &syntax.Regexp{Op: syntax.OpEmptyMatch}
	}
	body, err := l.lower(re)
	if err != nil {
		return nil, err
	}
	anything := grammar.Repeat(grammar.Class(0, utf8.MaxRune), 0, -1)
	subs := []*grammar.Node{body}
	if !begin {
		subs = append([]*grammar.Node{anything}, subs...)
	}
	if !end {
		subs = append(subs, anything)
	}
	if len(subs) == 1 {
		return body, nil
	}
	return grammar.Seq(subs...), nil
}

// hasAnchor reports whether re holds a ^, $, \A or \z anywhere.
func hasAnchor(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginText, syntax.OpBeginLine, syntax.OpEndText, syntax.OpEndLine:
		return true
	}
	for _, sub := range re.Sub {
		if hasAnchor(sub) {
			return true
		}
	}
	return false
}

// stripAnchors removes the anchors at the very start and end of the
// expression, which whole-string matching makes redundant.
func stripAnchors(re *syntax.Regexp) *syntax.Regexp {
	isBegin := func(r *syntax.Regexp) bool { return r.Op == syntax.OpBeginText || r.Op == syntax.OpBeginLine }
	isEnd := func(r *syntax.Regexp) bool { return r.Op == syntax.OpEndText || r.Op == syntax.OpEndLine }
	switch {
	case isBegin(re) || isEnd(re):
		return &syntax.Regexp{Op: syntax.OpEmptyMatch}
	case re.Op == syntax.OpConcat && len(re.Sub) > 0:
		subs := re.Sub
		for len(subs) > 0 && isBegin(subs[0]) {
			subs = subs[1:]
		}
		for len(subs) > 0 && isEnd(subs[len(subs)-1]) {
			subs = subs[:len(subs)-1]
		}
		c := *re
		c.Sub = subs
		return &c
	case re.Op == syntax.OpCapture:
		c := *re
		c.Sub = []*syntax.Regexp{stripAnchors(re.Sub[0])}
		return &c
	}
	return re
}

// SpelledOut returns how many characters re matches one by one (each a
// literal's rune or a class) with its counted repetitions spelled out,
// as Simplify spells them (x{3,5} is xxx(x(x)?)?, x{0} is empty),
// counting past limit no further. Each compiles to at least one
// instruction but where literal alternatives share a prefix or suffix
// (and literals take over a megabyte to reach grammar.MaxInst that way),
// so an expression of more than grammar.MaxInst would be refused by
// grammar.Compile anyway; refusing it before Simplify keeps a short
// pattern (\pL{1000} repeated) from lowering millions of copies first.
func SpelledOut(re *syntax.Regexp, limit int) int {
	if re.Op == syntax.OpRepeat && re.Max == 0 {
		return 0
	}
	n := 0
	switch re.Op {
	case syntax.OpLiteral:
		n = len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		n = 1
	}
	for _, sub := range re.Sub {
		if n += SpelledOut(sub, limit); n > limit {
			return n
		}
	}
	if re.Op == syntax.OpRepeat {
		copies := max(re.Min, re.Max, 1)
		if n > limit/copies {
			return limit + 1
		}
		n *= copies
	}
	return n
}

// lowerer lowers one expression. Simplify spells x{n} as n references to
// one x; memo lowers that x once, so that the grammar shares it where
// the expression does (a short pattern such as \pL{1000} repeated had
// made gigabytes of copies of its class before the grammar's size was
// checked).
type lowerer struct {
	memo map[*syntax.Regexp]*grammar.Node
}

// lower returns the grammar node of re (see lowerer).
func (l *lowerer) lower(re *syntax.Regexp) (*grammar.Node, error) {
	if n, ok := l.memo[re]; ok {
		return n, nil
	}
	n, err := l.lowerOp(re)
	if err != nil {
		return nil, err
	}
	l.memo[re] = n
	return n, nil
}

func (l *lowerer) lowerOp(re *syntax.Regexp) (*grammar.Node, error) {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return &grammar.Node{Op: grammar.OpEmpty}, nil
	case syntax.OpNoMatch:
		return nil, fmt.Errorf("the expression matches nothing")
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase == 0 {
			return &grammar.Node{Op: grammar.OpLit, Leaf: &grammar.Leaf{Runes: append([]rune(nil), re.Rune...)}}, nil
		}
		var subs []*grammar.Node
		for _, r := range re.Rune {
			ranges := []rune{r, r}
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				ranges = append(ranges, f, f)
			}
			subs = append(subs, grammar.Class(ranges...))
		}
		return grammar.Seq(subs...), nil
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return nil, &unsupported{re, "character class", "matches nothing"}
		}
		return grammar.Class(re.Rune...), nil
	case syntax.OpAnyChar:
		return grammar.Class(0, utf8.MaxRune), nil
	case syntax.OpAnyCharNotNL:
		return grammar.Class(0, '\n'-1, '\n'+1, utf8.MaxRune), nil
	case syntax.OpCapture:
		return l.lower(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		sub, err := l.lower(re.Sub[0])
		if err != nil {
			return nil, err
		}
		lo, hi := 0, -1
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
		}
		return grammar.Repeat(sub, lo, hi), nil
	case syntax.OpConcat, syntax.OpAlternate:
		var subs []*grammar.Node
		for _, s := range re.Sub {
			n, err := l.lower(s)
			if err != nil {
				return nil, err
			}
			subs = append(subs, n)
		}
		if re.Op == syntax.OpConcat {
			return grammar.Seq(subs...), nil
		}
		return grammar.Alt(subs...), nil
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return nil, &unsupported{re, "anchor", "is only supported at the start or end of the expression"}
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return nil, &unsupported{re, "word boundary", "is not supported: a grammar cannot express it"}
	}
	return nil, &unsupported{re, "construct", "is not supported"}
}
