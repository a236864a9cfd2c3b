// Package regex lowers a regular expression, parsed by Go's
// regexp/syntax (Perl flags), into a grammar.Grammar whose language is
// the strings the expression matches entirely, as ^(?:re)$ would.
//
// Anchors are allowed only where they are no-ops: ^ or \A at the start,
// $ or \z at the end. Word boundaries, and anchors anywhere else, are
// errors: they cannot be expressed by a grammar over the output alone.
package regex

import (
	"fmt"
	"regexp/syntax"
	"unicode"
	"unicode/utf8"

	"github.com/reins-go/reins/grammar"
)

// Parse parses re and returns the grammar of the strings it matches in
// full. The grammar's only rule is "root".
func Parse(re string) (*grammar.Grammar, error) {
	body, err := Lower(re, false)
	if err != nil {
		return nil, err
	}
	return &grammar.Grammar{Start: "root", Rules: []grammar.Rule{{Name: "root", Body: body}}}, nil
}

// Lower returns the grammar node of the strings re matches: in full, or,
// with search, the strings that contain a match (as JSON Schema's
// "pattern" and ECMAScript's RegExp.test judge them: only a ^ at the start
// or a $ at the end anchors the search).
func Lower(re string, search bool) (*grammar.Node, error) {
	tree, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("regex %q: %w", re, err)
	}
	tree = tree.Simplify()
	var body *grammar.Node
	if search {
		body, err = lowerSearch(tree, false, false, 0)
	} else {
		body, err = lower(stripAnchors(tree))
	}
	if err != nil {
		return nil, fmt.Errorf("regex %q: %w", re, err)
	}
	return body, nil
}

// maxDistribute bounds how many alternations lowerSearch distributes a
// concatenation over, so that a pattern cannot blow up.
const maxDistribute = 8

// lowerSearch lowers re for a search: the strings that contain a match,
// where begin and end say whether the match is already anchored at the
// start and at the end of the string. Anchors may stand at the start or
// end of each branch of an alternation: a concatenation is distributed
// over an alternation that holds anchors (^(a$|b) is ^a$|^b).
func lowerSearch(re *syntax.Regexp, begin, end bool, distributed int) (*grammar.Node, error) {
	isBegin := func(r *syntax.Regexp) bool { return r.Op == syntax.OpBeginText || r.Op == syntax.OpBeginLine }
	isEnd := func(r *syntax.Regexp) bool { return r.Op == syntax.OpEndText || r.Op == syntax.OpEndLine }
	switch re.Op {
	case syntax.OpCapture:
		return lowerSearch(re.Sub[0], begin, end, distributed)
	case syntax.OpAlternate:
		var alts []*grammar.Node
		for _, sub := range re.Sub {
			n, err := lowerSearch(sub, begin, end, distributed)
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
			return lowerSearch(subs[0], begin, end, distributed)
		}
		for i, sub := range subs {
			for sub.Op == syntax.OpCapture {
				sub = sub.Sub[0]
			}
			if sub.Op != syntax.OpAlternate || !hasAnchor(sub) {
				continue
			}
			if distributed == maxDistribute {
				return nil, fmt.Errorf("too many alternations with anchors")
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
				n, err := lowerSearch(c, begin, end, distributed+1)
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
	body, err := lower(re)
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

func lower(re *syntax.Regexp) (*grammar.Node, error) {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return &grammar.Node{Op: grammar.OpEmpty}, nil
	case syntax.OpNoMatch:
		return nil, fmt.Errorf("the expression matches nothing")
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase == 0 {
			return &grammar.Node{Op: grammar.OpLit, Runes: append([]rune(nil), re.Rune...)}, nil
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
			return nil, fmt.Errorf("character class %s matches nothing", re)
		}
		return grammar.Class(re.Rune...), nil
	case syntax.OpAnyChar:
		return grammar.Class(0, utf8.MaxRune), nil
	case syntax.OpAnyCharNotNL:
		return grammar.Class(0, '\n'-1, '\n'+1, utf8.MaxRune), nil
	case syntax.OpCapture:
		return lower(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		sub, err := lower(re.Sub[0])
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
			n, err := lower(s)
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
		return nil, fmt.Errorf("anchor %s is only supported at the start or end of the expression", re)
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return nil, fmt.Errorf("word boundary %s is not supported: a grammar cannot express it", re)
	}
	return nil, fmt.Errorf("unsupported regular expression construct %s", re)
}
