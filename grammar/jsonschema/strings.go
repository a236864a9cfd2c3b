package jsonschema

import (
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/regex"
)

// maxStringBound is the largest minLength or maxLength reins takes.
const maxStringBound = 1 << 24

// str compiles the strings of n: length bounds, a pattern or a format.
func (c *compiler) str(n *Node) (*grammar.Node, error) {
	min, max := n.Str.MinLen, n.Str.MaxLen
	if max > maxStringBound || min > maxStringBound {
		return nil, c.errorf(n.Ptr, "maxLength", "length bounds above %d are not supported", maxStringBound)
	}
	if len(n.Str.Patterns) > 1 {
		return nil, c.errorf(n.Str.PatternPtrs[1], "pattern", "two patterns on one string are not supported")
	}
	if len(n.Str.Formats) > 1 {
		return nil, c.errorf(n.Str.FormatPtrs[1], "format", "two formats on one string are not supported")
	}
	if len(n.Str.Patterns) == 1 && len(n.Str.Formats) == 1 {
		return nil, c.errorf(n.Str.FormatPtrs[0], "format", "a format beside a pattern is not supported")
	}
	if len(n.Str.Patterns) == 1 {
		ptr := n.Str.PatternPtrs[0]
		g, err := patternNode(n.Str.Patterns[0])
		if err != nil {
			return nil, c.errorf(ptr, "pattern", "%v", err)
		}
		if !lengthsWithin(g, min, max) {
			clamped, ok := clampLengths(g, min, max)
			switch {
			case !ok:
				return nil, c.errorf(ptr, "pattern", "pattern together with length bounds is supported only where the pattern's strings all have lengths within them, or are fixed parts around one repeated character")
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
	if len(n.Str.Formats) == 1 {
		name, ptr := n.Str.Formats[0], n.Str.FormatPtrs[0]
		re, supported := formats[name]
		if !supported {
			return nil, c.errorf(ptr, "format", "format %q is not supported", name)
		}
		g, err := regex.Lower(re, false)
		if err != nil {
			return nil, c.errorf(ptr, "format", "internal: format %q: %v", name, err)
		}
		if !lengthsWithin(g, min, max) {
			return nil, c.errorf(ptr, "format", "format %q together with length bounds is supported only where its strings all have lengths within them", name)
		}
		g, err = jsonEncode(g)
		if err != nil {
			return nil, c.errorf(ptr, "format", "internal: format %q: %v", name, err)
		}
		return grammar.Seq(lit(`"`), g, lit(`"`)), nil
	}
	return c.stringNode(min, max), nil
}
