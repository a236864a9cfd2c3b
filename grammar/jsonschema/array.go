package jsonschema

import (
	"math/bits"
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
	derivedMax := a.max < 0 // no maxItems: Bounded derives one from minItems
	if c.opts.Bounded && a.max < 0 {
		a.max = a.min + BoundedItems
	}
	if a.unique != nil && a.max >= 0 && a.max <= 1 {
		a.unique = nil // at most one item: unique already
	}
	if a.unique != nil && len(a.contains) > 0 {
		return nil, c.errorf(a.unique.Ptr, "uniqueItems", "uniqueItems beside contains is not supported")
	}
	if a.unique != nil {
		return c.uniqueArray(n, a)
	}
	if len(a.contains) > 0 {
		return c.containsArray(n, a)
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
		kw := "maxItems"
		if min > 1000 || derivedMax { // minItems, or the bound Bounded derived from it
			kw = "minItems"
		}
		return nil, c.errorf(ptr, kw, "item counts above 1000 are not supported")
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
			g := c.nodes.seq(sep, elems[i], after(i+1))
			if i >= min {
				return c.nodes.repeat(g, 0, 1)
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
		return c.nodes.repeat(c.nodes.seq(sep, restNode), lo, hi)
	}
	var body *grammar.Node
	switch {
	case len(elems) > 0:
		body = c.nodes.seq(elems[0], after(1))
	case restNode != nil:
		hi := -1
		if max >= 0 {
			hi = max - 1
		}
		body = c.nodes.seq(restNode, c.nodes.repeat(c.nodes.seq(sep, restNode), max0(min-1), hi))
	default:
		body = &grammar.Node{Op: grammar.OpEmpty}
	}
	if max == 0 || body.Op == grammar.OpEmpty {
		body = nil
	}
	return c.wrap(l, "[", "]", body, min == 0), nil
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

// maxUniqueValues bounds the values of the items of an array with
// uniqueItems: the grammar remembers which were written, a rule per set.
const maxUniqueValues = 8

// uniqueArray compiles an array with uniqueItems whose items take
// finitely many values (an enum, booleans, null): each value at most
// once, a rule per set of values written. Other items are refused: no
// grammar can tell two arbitrary strings apart.
func (c *compiler) uniqueArray(n *Node, a arrayShape) (*grammar.Node, error) {
	refuse := func(why string) error {
		return c.errorf(a.unique.Ptr, "uniqueItems", "uniqueItems true is supported only for items of at most %d values (an enum, booleans, null): %s", maxUniqueValues, why)
	}
	if len(a.prefix) > 0 {
		return nil, refuse("prefixItems beside it")
	}
	values, err := c.finiteValues(a.rest)
	if err != nil {
		return nil, err
	}
	if values == nil {
		return nil, refuse("the items take more values")
	}
	min, max := a.min, a.max
	if max < 0 || max > len(values) {
		max = len(values)
	}
	if min > max {
		return nil, c.emptyf(a.unique.Ptr, "uniqueItems", "fewer distinct values than minItems")
	}
	lits := make([]*grammar.Node, len(values))
	for i, v := range values {
		g, err := c.nested(func() (*grammar.Node, error) { return c.literal(v.v, v.at) })
		if err != nil {
			return nil, err
		}
		lits[i] = c.ruleAt(g, a.unique.Ptr)
	}
	l := c.layout()
	full := 1<<len(values) - 1
	after := make([]*grammar.Node, full+1)
	at := make([]int, full+1)
	pending := c.nodes.alt() // every rule's body until filled below
	for set := range full + 1 {
		at[set] = len(c.g.Rules)
		after[set] = c.ruleAt(pending, a.unique.Ptr)
	}
	next := func(set int) []*grammar.Node {
		var alts []*grammar.Node
		if bits.OnesCount(uint(set)) < max {
			for i := range values {
				if set&(1<<i) == 0 {
					alts = append(alts, c.nodes.seq(lits[i], after[set|1<<i]))
				}
			}
		}
		return alts
	}
	for set := range full + 1 {
		var alts []*grammar.Node
		if nx := next(set); len(nx) > 0 {
			alts = append(alts, c.nodes.seq(l.comma, c.nodes.alt(nx...)))
		}
		if bits.OnesCount(uint(set)) >= min {
			alts = append(alts, l.close)
		}
		c.g.Rules[at[set]].Body = c.nodes.alt(alts...)
	}
	var first []*grammar.Node
	if nx := next(0); len(nx) > 0 {
		first = append(first, c.nodes.seq(l.open, c.nodes.alt(nx...)))
	}
	if min == 0 {
		first = append(first, l.empty)
	}
	return c.nodes.seq(c.nodes.bytes("["), c.nodes.alt(first...), c.nodes.bytes("]")), nil
}

// finiteValue is one value an item may take, and where the schema
// writes it.
type finiteValue struct {
	v  any
	at string
}

// finiteValues returns the values a value satisfying all of xs may take,
// distinct, when they are at most maxUniqueValues: an enum's values (as
// the schema checks them), or those of the types null and boolean; nil
// otherwise.
func (c *compiler) finiteValues(xs []*Schema) ([]finiteValue, error) {
	if len(xs) == 0 {
		return nil, nil
	}
	n, err := c.z.normalize(xs)
	if err != nil {
		return nil, err
	}
	if n.Unsat != nil {
		return []finiteValue{}, nil
	}
	var out []finiteValue
	add := func(v any, at string) {
		for _, w := range out {
			if jsonEqual(v, w.v) {
				return
			}
		}
		out = append(out, finiteValue{v, at})
	}
	if n.HasEnum {
		for i, v := range n.Enum {
			ok, err := c.ev.validAll(n.Schemas, v)
			if err != nil {
				return nil, c.wrapf(n.EnumPtr, n.EnumKw, err)
			}
			if ok {
				add(v, n.EnumAt[i])
			}
		}
	} else {
		if n.Types&^(tNull|tBoolean) != 0 {
			return nil, nil
		}
		for _, v := range []any{nil, true, false} {
			ok, err := c.ev.validAll(n.Schemas, v)
			if err != nil {
				return nil, nil
			}
			if ok {
				add(v, n.Ptr)
			}
		}
	}
	if len(out) > maxUniqueValues {
		return nil, nil
	}
	return out, nil
}

// maxContainsStates bounds the states of an array with contains: the
// count of items that match, times the count of items.
const maxContainsStates = 512

// containsArray compiles an array with contains (and minContains,
// maxContains): each item either satisfies contains or its negation,
// and the grammar counts the first, as well as the items, up to what
// the bounds tell apart.
func (c *compiler) containsArray(n *Node, a arrayShape) (*grammar.Node, error) {
	s := a.contains[0]
	if len(a.contains) > 1 {
		return nil, c.errorf(a.contains[1].Ptr, "contains", "two contains on one array are not supported")
	}
	if len(a.prefix) > 0 {
		return nil, c.errorf(s.Ptr, "contains", "contains beside prefixItems is not supported")
	}
	minC, maxC := s.MinContains, s.MaxContains
	if maxC >= 0 && maxC < minC {
		return nil, c.emptyf(s.Ptr, "maxContains", "below minContains: no array fits")
	}
	notC, err := c.neg.negate(s.Contains)
	if err != nil {
		return nil, c.negationError(err, s.Ptr, "contains")
	}
	match, errM := c.items(append(slices.Clone(a.rest), s.Contains))
	other, errO := c.items(append(slices.Clone(a.rest), notC))
	for _, err := range []error{errM, errO} {
		if err != nil && !isEmpty(err) {
			return nil, err
		}
	}
	if errM != nil {
		match = nil
	}
	if errO != nil {
		other = nil
	}
	// Counters: matches up to topC (past which nothing changes), items
	// up to topN.
	topC := minC
	if maxC >= 0 {
		topC = maxC + 1
	}
	topN := a.min
	if a.max >= 0 {
		topN = a.max
	}
	if (topC+1)*(topN+1) > maxContainsStates {
		return nil, c.errorf(s.Ptr, "contains", "counting its items would take more than %d states", maxContainsStates)
	}
	if match != nil {
		match = c.ruleAt(match, s.Ptr)
	}
	if other != nil {
		other = c.ruleAt(other, s.Ptr)
	}
	l := c.layout()
	type key struct{ m, k int }
	rules := map[key]*grammar.Node{}
	var state func(m, k int) *grammar.Node
	accept := func(m, k int) bool {
		return m >= minC && (maxC < 0 || m <= maxC) && k >= a.min
	}
	// steps are the items that may come in state (m, k), each with the
	// state after it.
	steps := func(m, k int) []*grammar.Node {
		if a.max >= 0 && k >= a.max {
			return nil
		}
		nk := min(k+1, topN)
		if a.max < 0 {
			nk = min(k+1, a.min)
		}
		var alts []*grammar.Node
		if match != nil && (maxC < 0 || m+1 <= maxC) {
			alts = append(alts, c.nodes.seq(match, state(min(m+1, topC), nk)))
		}
		if other != nil {
			alts = append(alts, c.nodes.seq(other, state(m, nk)))
		}
		return alts
	}
	state = func(m, k int) *grammar.Node {
		if r, ok := rules[key{m, k}]; ok {
			return r
		}
		at := len(c.g.Rules)
		r := c.ruleAt(c.nodes.alt(), s.Ptr)
		rules[key{m, k}] = r
		var alts []*grammar.Node
		if st := steps(m, k); len(st) > 0 {
			alts = append(alts, c.nodes.seq(l.comma, c.nodes.alt(st...)))
		}
		if accept(m, k) {
			alts = append(alts, l.close)
		}
		c.g.Rules[at].Body = c.nodes.alt(alts...)
		return r
	}
	var first []*grammar.Node
	if st := steps(0, 0); len(st) > 0 {
		first = append(first, c.nodes.seq(l.open, c.nodes.alt(st...)))
	}
	if accept(0, 0) {
		first = append(first, l.empty)
	}
	if len(first) == 0 {
		return nil, c.emptyf(s.Ptr, "contains", "no array satisfies contains and the item bounds")
	}
	return c.nodes.seq(c.nodes.bytes("["), c.nodes.alt(first...), c.nodes.bytes("]")), nil
}
