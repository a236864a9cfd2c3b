package jsonschema

import (
	"fmt"
	"strings"

	"github.com/reins-go/reins/grammar"
)

// maxIndentDepth is the deepest level Options.Indent indents: values
// nested deeper are written compact, so a recursive schema compiles to
// finitely many rules (one copy per level).
const maxIndentDepth = 16

// layout is the whitespace of one object or array, by its role.
type layout struct {
	open  *grammar.Node // after "{" or "[", before the first member or item
	comma *grammar.Node // between two members or items, with the comma
	colon *grammar.Node // between a key and its value, with the colon
	close *grammar.Node // after the last member or item
	empty *grammar.Node // between "{" and "}" (or "[" and "]") of an empty one
}

// layout returns the whitespace of an object or array at the current
// depth: flexible (bounded runs of JSON whitespace), compact, or
// indented as json.MarshalIndent writes it.
func (c *compiler) layout() layout {
	key := -1
	if c.opts.Indent != "" {
		key = min(c.depth, maxIndentDepth)
	}
	if l, ok := c.layouts[key]; ok {
		return l
	}
	l := c.buildLayout()
	if c.layouts == nil {
		c.layouts = map[int]layout{}
	}
	c.layouts[key] = l
	return l
}

func (c *compiler) buildLayout() layout {
	none := &grammar.Node{Op: grammar.OpEmpty}
	switch {
	case c.opts.Indent != "" && c.depth < maxIndentDepth:
		inner := c.nodes.bytes("\n" + strings.Repeat(c.opts.Indent, c.depth+1))
		return layout{open: inner, comma: c.nodes.seq(c.nodes.bytes(","), inner), colon: c.nodes.bytes(": "),
			close: c.nodes.bytes("\n" + strings.Repeat(c.opts.Indent, c.depth)), empty: none}
	case c.opts.Indent != "":
		return layout{open: none, comma: c.nodes.bytes(","), colon: c.nodes.bytes(":"), close: none, empty: none}
	}
	ws := c.ws()
	return layout{open: ws, comma: c.nodes.seq(ws, c.nodes.bytes(","), ws), colon: c.nodes.seq(ws, c.nodes.bytes(":"), ws), close: ws, empty: ws}
}

// wrap is an object or array in layout l: open and close around items
// (nil when there are none), which may be left out (an empty one) when
// optional.
func (c *compiler) wrap(l layout, open, close string, items *grammar.Node, optional bool) *grammar.Node {
	if items == nil {
		return c.nodes.seq(c.nodes.bytes(open), l.empty, c.nodes.bytes(close))
	}
	inside := c.nodes.seq(l.open, items, l.close)
	if optional {
		inside = c.nodes.alt(inside, l.empty)
	}
	return c.nodes.seq(c.nodes.bytes(open), inside, c.nodes.bytes(close))
}

// nested compiles f one level deeper: a member's value or an item.
func (c *compiler) nested(f func() (*grammar.Node, error)) (*grammar.Node, error) {
	c.depth++
	defer func() { c.depth-- }()
	return f()
}

// deeper is nested for a compilation that cannot fail.
func (c *compiler) deeper(f func() *grammar.Node) *grammar.Node {
	c.depth++
	defer func() { c.depth-- }()
	return f()
}

// level is the suffix of a rule compiled at the current depth: the same
// schema indents differently at each level.
func (c *compiler) level() string {
	if c.opts.Indent == "" {
		return ""
	}
	return fmt.Sprintf("@%d", min(c.depth, maxIndentDepth))
}
