// Package gbnf parses llama.cpp's grammar format (GBNF) into a
// grammar.Grammar.
//
// The syntax: rules "name ::= body", "root" is the start; quoted
// literals, character classes "[a-z]" and negated ones "[^...]" with the
// escapes \x## \u#### \U######## \t \r \n \\ \" \[ \] (and \- and \^ in
// classes); "." for any character; grouping "( )"; alternation "|";
// repetition "*", "+", "?", "{m}", "{m,}", "{m,n}"; "#" comments; token
// terminals "<[123]>" by id, "<|eot_id|>" by text, and "!" before either
// for any token but that one. A rule may span lines.
package gbnf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"

	"github.com/reins-go/reins/grammar"
)

// The tree participle builds. Lowering to grammar.Node is a separate pass.

type file struct {
	Rules []*rule `parser:"@@*"`
}

type rule struct {
	Pos  lexer.Position
	Head string `parser:"@RuleStart"` // "name ::=", one token: a rule ends where the next begins
	Body *alt   `parser:"@@"`
}

// alt is a rule body or group: items and "|" separators, in order. (The
// alternatives are split while lowering: each level of struct nesting
// costs participle a branch per token.)
type alt struct {
	Pos   lexer.Position
	Items []*item `parser:"@@*"`
}

// item is one atom and its repetitions, or an alternation bar.
type item struct {
	Pos   lexer.Position
	Bar   bool    `parser:"(  @'|'"`
	Str   *string `parser:" | @String"`
	Ref   *string `parser:" | @Ident"`
	Class *string `parser:" | @Class"`
	Token *string `parser:" | @Token"`
	Any   bool    `parser:" | @'.'"`
	Group *alt    `parser:" | '(' @@ ')' )"`
	Reps  []*rep  `parser:"@@*"`
}

type rep struct {
	Pos   lexer.Position
	Op    string  `parser:"  @('*' | '+' | '?')"`
	Min   *string `parser:"| '{' @Int"`
	Comma bool    `parser:"  ( @','"`
	Max   *string `parser:"    @Int? )? '}'"`
}

var parser = participle.MustBuild[file](
	participle.Lexer(gbnfLexer),
	participle.UseLookahead(2),
)

// MaxRepeat bounds the counts of "{m,n}" (as llama.cpp does, with the
// same number), since repetitions are unrolled.
const MaxRepeat = 2000

// MaxNesting bounds how deeply groups "( )" nest, and groups and
// repetitions together ("((a)*)+" nests four deep). The parser follows
// groups by recursion, so a bound keeps a hostile file from exhausting
// its stack; grammars written by hand nest a few levels deep.
const MaxNesting = 1000

// MaxSourceBytes bounds the source Parse takes, checked before it
// parses: the parse tree takes a few hundred bytes of memory per byte
// of source (a 16 MB file took 2 GB). llama.cpp's example grammars are
// a few KB.
const MaxSourceBytes = 1 << 20

// Parse parses GBNF source. name is used in error messages (a file
// name, say) and becomes the grammar's File. The start rule is "root".
// Every error is a *grammar.Error, reading "name:line:col: message";
// Warnings of the result list unused rules. Parse is safe for concurrent
// use.
func Parse(name, src string) (g *grammar.Grammar, err error) {
	defer func() {
		if r := recover(); r != nil {
			g, err = nil, &grammar.Error{File: name, Msg: fmt.Sprintf("internal error parsing the grammar: %v", r)}
		}
	}()
	if len(src) > MaxSourceBytes {
		return nil, &grammar.Error{File: name, Msg: fmt.Sprintf("grammar too large: %d bytes of source, more than the limit of %d (MaxSourceBytes)", len(src), MaxSourceBytes)}
	}
	sc := &gbnfScanner{src: src, pos: lexer.Position{Filename: name, Line: 1, Column: 1}}
	f, err := parse(sc)
	if err != nil {
		var pe participle.Error
		if errors.As(err, &pe) {
			var cause error
			if sc.tooDeep {
				cause = grammar.ErrTooDeep
			}
			return nil, &grammar.Error{File: name, Pos: pos(pe.Position()), Msg: pe.Message(), Err: cause}
		}
		return nil, &grammar.Error{File: name, Msg: err.Error(), Err: err}
	}
	l := &lowerer{name: name}
	g = &grammar.Grammar{Start: "root", File: name}
	for _, r := range f.Rules {
		body, err := l.alt(r.Body)
		if err != nil {
			return nil, err
		}
		name := strings.TrimRight(strings.TrimSuffix(r.Head, "::="), " \t")
		g.Rules = append(g.Rules, grammar.Rule{Name: name, Pos: pos(r.Pos), Body: body})
	}
	if len(g.Rules) == 0 {
		return nil, &grammar.Error{File: name, Msg: "the grammar has no rules"}
	}
	if err := check(name, g); err != nil {
		return nil, err
	}
	return g, nil
}

// parse runs participle on the tokens of sc, all lexed first.
func parse(sc *gbnfScanner) (*file, error) {
	toks, err := lexer.Upgrade(sc)
	if err != nil {
		return nil, err
	}
	return parser.ParseFromLexer(toks)
}

func pos(p lexer.Position) grammar.Pos {
	// A source is at most MaxSourceBytes: its lines, columns and offsets
	// fit.
	return grammar.Pos{Line: int32(p.Line), Col: int32(p.Column), Offset: int32(p.Offset)}
}

// advance returns the position after text, which begins at p.
func advance(p lexer.Position, text string) lexer.Position {
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '\n':
			p.Line++
			p.Column = 1
		case c < 0x80 || c >= 0xC0: // count characters, not continuation bytes
			p.Column++
		}
	}
	p.Offset += len(text)
	return p
}

type lowerer struct {
	name  string
	depth int // of groups, for MaxNesting
}

func (l *lowerer) errorf(p lexer.Position, format string, args ...any) error {
	return &grammar.Error{File: l.name, Pos: pos(p), Msg: fmt.Sprintf(format, args...)}
}

func (l *lowerer) alt(a *alt) (*grammar.Node, error) {
	l.depth++
	defer func() { l.depth-- }()
	var subs []*grammar.Node
	var seq []*grammar.Node
	seqPos := a.Pos
	flush := func() {
		switch len(seq) {
		case 0:
			subs = append(subs, &grammar.Node{Op: grammar.OpEmpty, Leaf: &grammar.Leaf{Pos: pos(seqPos)}})
		case 1:
			subs = append(subs, seq[0])
		default:
			subs = append(subs, &grammar.Node{Op: grammar.OpSeq, Leaf: &grammar.Leaf{Pos: pos(seqPos)}, Subs: seq})
		}
		seq = nil
	}
	for _, it := range a.Items {
		if it.Bar {
			if len(it.Reps) > 0 {
				return nil, l.errorf(it.Reps[0].Pos, "repetition after |: nothing to repeat")
			}
			flush()
			seqPos = it.Pos
			continue
		}
		if len(seq) == 0 {
			seqPos = it.Pos
		}
		n, err := l.item(it)
		if err != nil {
			return nil, err
		}
		seq = append(seq, n)
	}
	flush()
	if len(subs) == 1 {
		return subs[0], nil
	}
	return &grammar.Node{Op: grammar.OpAlt, Leaf: &grammar.Leaf{Pos: pos(a.Pos)}, Subs: subs}, nil
}

func (l *lowerer) item(it *item) (*grammar.Node, error) {
	n, err := l.atom(it)
	if err != nil {
		return nil, err
	}
	for k, r := range it.Reps {
		if l.depth+k >= MaxNesting {
			return nil, &grammar.Error{File: l.name, Pos: pos(r.Pos), Msg: fmt.Sprintf("groups and repetitions nest more than %d deep (MaxNesting)", MaxNesting), Err: grammar.ErrTooDeep}
		}
		lo, hi := 0, -1
		switch {
		case r.Op == "*":
		case r.Op == "+":
			lo = 1
		case r.Op == "?":
			hi = 1
		default:
			// The counts are read here, not by the parser, so that a
			// count too large for an int is the limit's error too.
			count := func(s string) (int, bool) {
				n, err := strconv.Atoi(s)
				return n, err == nil && n <= MaxRepeat
			}
			text := "{" + *r.Min
			if r.Comma {
				text += ","
				if r.Max != nil {
					text += *r.Max
				}
			}
			text += "}"
			var ok bool
			if lo, ok = count(*r.Min); ok {
				switch {
				case !r.Comma:
					hi = lo
				case r.Max != nil:
					hi, ok = count(*r.Max)
				}
			}
			if !ok {
				return nil, l.errorf(r.Pos, "repetition %s exceeds the limit of %d (MaxRepeat)", text, MaxRepeat)
			}
			if hi >= 0 && hi < lo {
				return nil, l.errorf(r.Pos, "repetition {%d,%d}: the maximum is below the minimum", lo, hi)
			}
		}
		n = &grammar.Node{Op: grammar.OpRepeat, Leaf: &grammar.Leaf{Pos: pos(r.Pos)}, Subs: []*grammar.Node{n}, Min: int32(lo), Max: int32(hi)}
	}
	return n, nil
}

func (l *lowerer) atom(a *item) (*grammar.Node, error) {
	p := pos(a.Pos)
	switch {
	case a.Ref != nil:
		return &grammar.Node{Op: grammar.OpRef, Leaf: &grammar.Leaf{Pos: p}, Name: *a.Ref}, nil
	case a.Str != nil:
		runes, err := l.unescape(a.Pos, (*a.Str)[1:len(*a.Str)-1], false)
		if err != nil {
			return nil, err
		}
		if len(runes) == 0 {
			return &grammar.Node{Op: grammar.OpEmpty, Leaf: &grammar.Leaf{Pos: p}}, nil
		}
		return &grammar.Node{Op: grammar.OpLit, Leaf: &grammar.Leaf{Pos: p, Runes: runes}}, nil
	case a.Class != nil:
		return l.class(a.Pos, *a.Class)
	case a.Token != nil:
		return l.token(a.Pos, *a.Token)
	case a.Any:
		return &grammar.Node{Op: grammar.OpClass, Leaf: &grammar.Leaf{Pos: p, Runes: []rune{0, utf8.MaxRune}}}, nil
	case a.Group != nil:
		return l.alt(a.Group)
	}
	return nil, l.errorf(a.Pos, "empty atom")
}

// unescape decodes the characters of a literal's body s; at is the
// position of the quote before it.
func (l *lowerer) unescape(at lexer.Position, s string, inClass bool) ([]rune, error) {
	var out []rune
	at = advance(at, `"`)
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return nil, l.errorf(advance(at, s[:i]), "invalid UTF-8 byte \\x%02x", s[i])
			}
			out = append(out, r)
			i += size
			continue
		}
		r, size, err := unescapeOne(s[i:], inClass)
		if err != nil {
			return nil, l.errorf(advance(at, s[:i]), "%v", err)
		}
		out = append(out, r)
		i += size
	}
	return out, nil
}

// unescapeOne decodes the escape at the start of s (s[0] is '\\').
func unescapeOne(s string, inClass bool) (rune, int, error) {
	if len(s) < 2 {
		return 0, 0, errors.New(`"\" at the end`)
	}
	hex := 0
	switch s[1] {
	case 'x':
		hex = 2
	case 'u':
		hex = 4
	case 'U':
		hex = 8
	case 't':
		return '\t', 2, nil
	case 'r':
		return '\r', 2, nil
	case 'n':
		return '\n', 2, nil
	case '\\', '"', '[', ']':
		return rune(s[1]), 2, nil
	case '-', '^':
		if inClass {
			return rune(s[1]), 2, nil
		}
		fallthrough
	default:
		return 0, 0, fmt.Errorf("unknown escape %q", s[:2])
	}
	if len(s) < 2+hex {
		return 0, 0, fmt.Errorf("escape %q needs %d hex digits", s, hex)
	}
	v, err := strconv.ParseUint(s[2:2+hex], 16, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("escape %q needs %d hex digits", s[:2+hex], hex)
	}
	if v > utf8.MaxRune || (v >= 0xD800 && v <= 0xDFFF) {
		return 0, 0, fmt.Errorf("escape %q is not a Unicode scalar value", s[:2+hex])
	}
	return rune(v), 2 + hex, nil
}

func (l *lowerer) class(at lexer.Position, src string) (*grammar.Node, error) {
	body := src[1 : len(src)-1]
	negated := strings.HasPrefix(body, "^")
	bodyAt := advance(at, "[")
	if negated {
		body = body[1:]
		bodyAt = advance(bodyAt, "^")
	}
	// Decode with positions kept, so that "-" can be told from "\-".
	type ch struct {
		r       rune
		escaped bool
		at      int // in body
	}
	var chars []ch
	for i := 0; i < len(body); {
		if body[i] == '\\' {
			r, size, err := unescapeOne(body[i:], true)
			if err != nil {
				return nil, l.errorf(advance(bodyAt, body[:i]), "%v", err)
			}
			chars = append(chars, ch{r, true, i})
			i += size
			continue
		}
		r, size := utf8.DecodeRuneInString(body[i:])
		if r == utf8.RuneError && size == 1 {
			return nil, l.errorf(advance(bodyAt, body[:i]), "invalid UTF-8 byte \\x%02x", body[i])
		}
		chars = append(chars, ch{r, false, i})
		i += size
	}
	var ranges []rune
	for i := 0; i < len(chars); i++ {
		lo, hi := chars[i].r, chars[i].r
		if i+2 < len(chars) && chars[i+1].r == '-' && !chars[i+1].escaped {
			hi = chars[i+2].r
			if hi < lo {
				return nil, l.errorf(advance(bodyAt, body[:chars[i].at]), "character class %s: range %q-%q is reversed", src, lo, hi)
			}
			i += 2
		}
		ranges = append(ranges, lo, hi)
	}
	if len(ranges) == 0 && !negated {
		return nil, l.errorf(at, "empty character class %s matches nothing", src)
	}
	ranges = grammar.NormalizeRanges(ranges)
	if negated {
		ranges = grammar.NegateRanges(ranges)
		if len(ranges) == 0 {
			return nil, l.errorf(at, "character class %s excludes every character", src)
		}
	}
	return &grammar.Node{Op: grammar.OpClass, Leaf: &grammar.Leaf{Pos: pos(at), Runes: ranges}}, nil
}

func (l *lowerer) token(at lexer.Position, src string) (*grammar.Node, error) {
	n := &grammar.Node{Op: grammar.OpToken, Leaf: &grammar.Leaf{Pos: pos(at)}}
	if strings.HasPrefix(src, "!") {
		n.Leaf.Tokens.Negated = true
		src = src[1:]
	}
	if strings.HasPrefix(src, "<[") {
		if len(src) < 4 || !strings.HasSuffix(src, "]>") {
			return nil, l.errorf(at, "malformed token terminal %s: want <[123]> or <name>", src)
		}
		id, err := strconv.Atoi(src[2 : len(src)-2])
		if err != nil || id < 0 {
			return nil, l.errorf(at, "token id in %s: want a number ≥ 0", src)
		}
		n.Leaf.Tokens.Tokens = []grammar.TokenRef{{ID: id}}
		return n, nil
	}
	n.Leaf.Tokens.Tokens = []grammar.TokenRef{{ID: -1, Text: src}}
	return n, nil
}

// check reports undefined rules and the missing start rule as errors,
// and unused rules as warnings. It walks the rules the start rule uses,
// and then the others, with a stack of its own: a long chain of rules
// must not exhaust the Go stack.
func check(name string, g *grammar.Grammar) error {
	errorf := func(p grammar.Pos, format string, args ...any) error {
		return &grammar.Error{File: name, Pos: p, Msg: fmt.Sprintf(format, args...)}
	}
	defined := map[string]int{}
	for i, r := range g.Rules {
		if j, dup := defined[r.Name]; dup {
			return errorf(r.Pos, "rule %s is defined twice (first at %s)", r.Name, g.Rules[j].Pos)
		}
		defined[r.Name] = i
	}
	if _, ok := defined[g.Start]; !ok {
		return errorf(grammar.Pos{}, "no %q rule: the grammar starts there", g.Start)
	}
	used := map[string]bool{g.Start: true}
	var stack []*grammar.Node
	walk := func(n *grammar.Node) error {
		stack = append(stack[:0], n)
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if n.Op == grammar.OpRef {
				i, ok := defined[n.Name]
				if !ok {
					return errorf(n.Pos(), "undefined rule %s", n.Name)
				}
				if !used[n.Name] {
					used[n.Name] = true
					stack = append(stack, g.Rules[i].Body)
				}
			}
			for k := len(n.Subs) - 1; k >= 0; k-- { // the first sub is walked first
				stack = append(stack, n.Subs[k])
			}
		}
		return nil
	}
	if err := walk(g.Rules[defined[g.Start]].Body); err != nil {
		return err
	}
	for _, r := range g.Rules {
		if !used[r.Name] {
			if err := walk(r.Body); err != nil { // undefined references in unused rules are errors too
				return err
			}
			g.Warnings = append(g.Warnings, (&grammar.Error{File: name, Pos: r.Pos, Msg: fmt.Sprintf("rule %s is never used", r.Name)}).Error())
		}
	}
	return nil
}
