package jsonschema

import (
	"slices"

	"github.com/reins-go/reins/grammar"
)

// arrayShape is the array keywords of a Node's schemas, intersected: the
// schemas each position's item must satisfy, and the count bounds.
type arrayShape struct {
	prefix   [][]*Schema // the item at index i satisfies all of prefix[i]
	rest     []*Schema   // the items after the prefix satisfy all of rest
	min, max int         // max -1: none
	unique   *Schema     // a schema that says uniqueItems, or nil
	contains []*Schema   // the schemas that say contains
}

// arrayOf intersects the array keywords of the schemas parts.
func arrayOf(parts []*Schema) arrayShape {
	a := arrayShape{max: -1}
	long := 0
	for _, s := range parts {
		long = max(long, len(s.Prefix))
	}
	a.prefix = make([][]*Schema, long)
	for _, s := range parts {
		for i := range long {
			switch {
			case i < len(s.Prefix):
				a.prefix[i] = append(a.prefix[i], s.Prefix[i])
			case s.Items != nil:
				a.prefix[i] = append(a.prefix[i], s.Items)
			}
		}
		if s.Items != nil {
			a.rest = append(a.rest, s.Items)
		}
		a.min = max(a.min, s.MinItems)
		if s.MaxItems >= 0 && (a.max < 0 || s.MaxItems < a.max) {
			a.max = s.MaxItems
		}
		if s.Unique && a.unique == nil {
			a.unique = s
		}
		if s.Contains != nil {
			a.contains = append(a.contains, s)
		}
	}
	return a
}

// array compiles the arrays of n.
func (c *compiler) array(n *Node) (*grammar.Node, error) {
	unevaluated, err := c.unevaluatedArrays(n)
	if err != nil {
		return nil, err
	}
	a := arrayOf(append(slices.Clone(n.Arr), unevaluated...))
	if len(a.contains) > 0 {
		return nil, c.errorf(a.contains[0].Ptr, "contains", "not supported")
	}
	if a.unique != nil {
		return nil, c.errorf(a.unique.Ptr, "uniqueItems", "uniqueItems true cannot be expressed by a grammar")
	}
	ptr := n.Ptr
	min, max := a.min, a.max
	if c.opts.Bounded && max < 0 {
		max = min + BoundedItems
	}
	if max >= 0 && max < min {
		return nil, c.emptyf(ptr, "maxItems", "below minItems: no array fits")
	}
	if min > 1000 || max > 1000 {
		return nil, c.errorf(ptr, "maxItems", "item counts above 1000 are not supported")
	}
	var elems []*grammar.Node
	for i, xs := range a.prefix {
		if i >= max && max >= 0 {
			break
		}
		g, err := c.items(xs)
		if isEmpty(err) { // no item fits here: the array ends before
			max = i
			break
		}
		if err != nil {
			return nil, err
		}
		elems = append(elems, g)
	}
	var restNode *grammar.Node
	if max < 0 || max > len(a.prefix) {
		g, err := c.items(a.rest)
		switch {
		case isEmpty(err):
			max = len(a.prefix)
		case err != nil:
			return nil, err
		default:
			restPtr := ptr
			if len(a.rest) > 0 {
				restPtr = a.rest[0].Ptr
			}
			restNode = c.shareable(g, restPtr) // used twice below
		}
	}
	if max >= 0 && max < min {
		return nil, c.emptyf(ptr, "minItems", "more items required than the schema allows")
	}
	l := c.layout()
	sep := l.comma
	// after(i): the items from index i on, each preceded by a separator.
	var after func(i int) *grammar.Node
	after = func(i int) *grammar.Node {
		if i < len(elems) {
			g := grammar.Seq(sep, elems[i], after(i+1))
			if i >= min {
				return grammar.Repeat(g, 0, 1)
			}
			return g
		}
		if restNode == nil {
			return &grammar.Node{Op: grammar.OpEmpty}
		}
		lo := max0(min - i)
		hi := -1
		if max >= 0 {
			hi = max - i
		}
		return grammar.Repeat(grammar.Seq(sep, restNode), lo, hi)
	}
	var body *grammar.Node
	switch {
	case len(elems) > 0:
		body = grammar.Seq(elems[0], after(1))
	case restNode != nil:
		hi := -1
		if max >= 0 {
			hi = max - 1
		}
		body = grammar.Seq(restNode, grammar.Repeat(grammar.Seq(sep, restNode), max0(min-1), hi))
	default:
		body = &grammar.Node{Op: grammar.OpEmpty}
	}
	if max == 0 || body.Op == grammar.OpEmpty {
		body = nil
	}
	return l.wrap("[", "]", body, min == 0), nil
}

// items compiles an item that satisfies all of xs (any value when xs is
// empty), one level deeper.
func (c *compiler) items(xs []*Schema) (*grammar.Node, error) {
	return c.nested(func() (*grammar.Node, error) {
		if len(xs) == 0 {
			return c.anyValue(), nil
		}
		return c.conj(xs...)
	})
}

func max0(x int) int { return max(x, 0) }
