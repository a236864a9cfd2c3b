package jsonschema

import (
	"errors"
	"fmt"

	"github.com/reins-go/reins/grammar"
)

// maxStringBound is the largest minLength or maxLength reins takes.
const maxStringBound = 1 << 24

// str compiles the strings of n: length bounds, a pattern or a format.
func (c *compiler) str(n *Node) (*grammar.Node, error) {
	min, max := n.Str.MinLen, n.Str.MaxLen
	if max > maxStringBound || min > maxStringBound {
		kw := "maxLength"
		if min > maxStringBound {
			kw = "minLength"
		}
		return nil, c.errorf(n.Ptr, kw, "length bounds above %d are not supported", maxStringBound)
	}
	for i, name := range n.Str.Formats {
		if _, ok := formats[name]; !ok {
			return nil, c.errorf(n.Str.FormatPtrs[i], "format", "format %q is not supported", name)
		}
	}
	if len(n.Str.NotFormats) > 0 {
		return nil, c.errorf(n.Ptr, "format", "a string that must not be of a format is not supported (the format's grammar is narrower than the format)")
	}
	if len(n.Str.Patterns)+len(n.Str.Formats) > 1 || len(n.Str.NotPatterns) > 0 || len(excludedStrings(n.NotEnum)) > 0 {
		return c.strDFA(n)
	}
	if len(n.Str.Patterns)+len(n.Str.Formats) == 1 {
		return c.oneStr(n)
	}
	return c.stringNode(min, max), nil
}

// oneStrKey is what oneStr's strings depend on: one pattern, or one
// format, and the length bounds.
type oneStrKey struct {
	src      string
	format   bool
	min, max int
}

// oneStr compiles the strings of n, of one pattern or one format, once
// per compile for each pattern or format and bounds: a large schema
// repeats its formats and patterns, and lowering a regular expression is
// the most of a string's work.
func (c *compiler) oneStr(n *Node) (*grammar.Node, error) {
	key := oneStrKey{min: n.Str.MinLen, max: n.Str.MaxLen}
	if len(n.Str.Patterns) == 1 {
		key.src = n.Str.Patterns[0]
	} else {
		key.src, key.format = n.Str.Formats[0], true
	}
	return memoErr(&c.oneStrs, key, func() (*grammar.Node, error) { return c.buildOneStr(n) })
}

// buildOneStr is oneStr's work. str has checked that the format, if
// that is what n has, is supported.
func (c *compiler) buildOneStr(n *Node) (*grammar.Node, error) {
	min, max := n.Str.MinLen, n.Str.MaxLen
	if len(n.Str.Patterns) == 1 {
		ptr := n.Str.PatternPtrs[0]
		g, err := patternNode(n.Str.Patterns[0])
		if errors.Is(err, grammar.ErrTooLarge) {
			return nil, c.limitf(ptr, "pattern", limitGrammar, "a pattern of %d bytes: %v", len(n.Str.Patterns[0]), err)
		}
		if err != nil {
			return nil, c.errorf(ptr, "pattern", "%v", err)
		}
		if !lengthsWithin(g, min, max) {
			clamped, ok := clampLengths(g, min, max)
			switch {
			case !ok:
				return c.strDFA(n)
			case clamped == nil:
				return nil, c.emptyf(ptr, "pattern", "no string of the pattern has a length within minLength and maxLength")
			}
			g = clamped
		}
		g, err = jsonEncode(g)
		if err != nil {
			return nil, c.errorf(ptr, "pattern", "%v", err)
		}
		return grammar.Seq(lit(`"`), g, lit(`"`)), nil
	}
	name, ptr := n.Str.Formats[0], n.Str.FormatPtrs[0]
	f, err := builtFormats[name].grammar()
	if err != nil {
		return nil, c.errorf(ptr, "format", "internal: format %q: %v", name, err)
	}
	if !lengthsWithin(f.plain, min, max) {
		return c.strDFA(n)
	}
	// A rule per format, shared by every string of that format, and one
	// copy of the format's grammar for it.
	return c.shared("_format_"+name, func() *grammar.Node {
		return grammar.Seq(lit(`"`), c.nodes.copyTree(f.encoded, map[*grammar.Node]*grammar.Node{}), lit(`"`))
	}), nil
}

// strDFA compiles the strings of n by automaton: the product of each
// pattern's (found anywhere), each format's (the whole string) and the
// length bounds', written as rules. Patterns are read as patternNode
// reads them (ecmaToGo: within both ECMAScript's and Go's meaning).
func (c *compiler) strDFA(n *Node) (*grammar.Node, error) {
	key := fmt.Sprintf("%q %q %d %d %q %q", n.Str.Patterns, n.Str.Formats, n.Str.MinLen, n.Str.MaxLen, n.Str.NotPatterns, excludedStrings(n.NotEnum))
	return memoErr(&c.strDFAs, key, func() (*grammar.Node, error) { return c.buildStrDFA(n) })
}

func (c *compiler) buildStrDFA(n *Node) (*grammar.Node, error) {
	comps, want, kw, ptr, err := c.stringComponents(n)
	if err != nil {
		return nil, err
	}
	d, err := product(comps, func(t []int32) int32 {
		for i, x := range t {
			if (comps[i].label[x] != 0) != want[i] {
				return 0
			}
		}
		return 1
	})
	if err != nil {
		what := "with length bounds, other patterns or a format"
		if kw == "not" {
			what = "the strings it excludes, with the string's other keywords"
		}
		return nil, c.errorf(ptr, kw, "%s, by automaton: %v", what, err)
	}
	d = d.minimize()
	if d.label[0] == 0 && len(d.edges[0]) == 0 {
		return nil, c.emptyf(ptr, kw, "no string satisfies the pattern, the format and the length bounds together")
	}
	g, err := c.dfaGrammar(d, ptr, func(int32) *grammar.Node { return lit(`"`) })
	if err != nil {
		return nil, c.errorf(ptr, kw, "%v", err)
	}
	return grammar.Seq(lit(`"`), g), nil
}

// stringComponents returns the automata whose product is the strings of
// n (its string keywords only), each with whether it must accept (or
// must not: a complement), and the keyword and pointer to name in an
// error: each pattern's (found anywhere), each format's (the whole
// string), the length bounds', and the negated patterns' and excluded
// strings'. With no string keyword, one automaton of every string.
func (c *compiler) stringComponents(n *Node) (comps []*dfa, want []bool, kw, ptr string, err error) {
	kw, ptr = "", n.Ptr
	for i, pat := range n.Str.Patterns {
		kw, ptr = "pattern", n.Str.PatternPtrs[i]
		goPat, err := ecmaToGo(pat)
		if err != nil {
			return nil, nil, "", "", c.errorf(ptr, "pattern", "%v", err)
		}
		d, err := c.regexDFA(goPat, true)
		if err != nil {
			return nil, nil, "", "", c.errorf(ptr, "pattern", "with length bounds, other patterns or a format, by automaton: %v", err)
		}
		comps, want = append(comps, d), append(want, true)
	}
	for i, name := range n.Str.Formats {
		built, ok := builtFormats[name]
		if !ok {
			return nil, nil, "", "", c.errorf(n.Str.FormatPtrs[i], "format", "format %q is not supported", name)
		}
		d, err := built.dfa()
		if err != nil {
			return nil, nil, "", "", c.errorf(n.Str.FormatPtrs[i], "format", "format %q with length bounds or a pattern, by automaton: %v", name, err)
		}
		comps, want = append(comps, d), append(want, true)
		if len(n.Str.Patterns) == 0 {
			kw, ptr = "format", n.Str.FormatPtrs[i]
		}
	}
	if len(n.Str.NotFormats) > 0 {
		return nil, nil, "", "", c.errorf(n.Ptr, "format", "a string that must not be of a format is not supported (the format's grammar is narrower than the format)")
	}
	if n.Str.MinLen > 0 || n.Str.MaxLen >= 0 || len(comps) == 0 {
		comps, want = append(comps, lengthDFA(n.Str.MinLen, n.Str.MaxLen)), append(want, true)
	}
	for _, pat := range n.Str.NotPatterns {
		goPat, err := ecmaToGoWide(pat)
		if err != nil {
			return nil, nil, "", "", c.errorf(ptr, "not", "pattern %q: %v", pat, err)
		}
		d, err := c.regexDFA(goPat, true)
		if err != nil {
			return nil, nil, "", "", c.errorf(ptr, "not", "pattern %q, negated, by automaton: %v", pat, err)
		}
		comps, want = append(comps, d.complete()), append(want, false)
	}
	ex := excludedStrings(n.NotEnum)
	if len(ex) > 0 {
		comps, want = append(comps, namesDFA(ex).complete()), append(want, false)
	}
	if kw == "" { // no pattern or format: name what else the automaton is of
		switch {
		case len(n.Str.NotPatterns) > 0 || len(ex) > 0:
			kw = "not"
		case n.Str.MinLen > 0:
			kw = "minLength"
		default:
			kw = "maxLength"
		}
	}
	return comps, want, kw, ptr, nil
}

// regexDFA is regexDFA, kept per compilation: schemas repeat patterns.
func (c *compiler) regexDFA(pat string, search bool) (*dfa, error) {
	key := pat
	if search {
		key = "\x00" + pat
	}
	if d, ok := c.regexDFAs[key]; ok {
		return d, nil
	}
	d, err := regexDFA(pat, search)
	if err != nil {
		return nil, err
	}
	if c.regexDFAs == nil {
		c.regexDFAs = map[string]*dfa{}
	}
	c.regexDFAs[key] = d
	return d, nil
}

// excludedStrings returns the strings among vals.
func excludedStrings(vals []any) []string {
	var out []string
	for _, v := range vals {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
