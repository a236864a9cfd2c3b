package jsonschema

import (
	"fmt"

	"github.com/reins-go/reins/internal/jsonptr"
)

// unevaluatedProperties and unevaluatedItems judge what the schema's
// evaluation left unjudged: the keys (items) no properties,
// patternProperties or additionalProperties (prefixItems, items) of the
// schemas applied in place took. In a Node whose combinators have been
// distributed, the schemas applied in place from a schema are known: its
// allOf branches, its $ref's target, the branches of its anyOf and
// oneOf that hold, and the then or else its if took (an anyOf is split
// into the sets of its branches that hold, see branchSets, so that what
// they evaluate together is known). So unevaluatedProperties becomes
// one more object schema intersected: the names and patterns of those
// schemas, each taking any value, and unevaluatedProperties as its
// additionalProperties (unevaluatedItems: a prefix as long, then the
// items). Where evaluation depends on the value (contains,
// dependentSchemas) it is refused. Where an anyOf cannot be split (over
// maxSubsetBranches branches, or a branch that cannot be negated), a
// branch not taken may also hold and evaluate more: taking only the
// branch taken judges more keys than the validator does, which is
// narrower, never wider.

// inPlace returns the schemas of n that apply in place from s: s, its
// allOf branches and $ref's target, the branches of its anyOf and oneOf
// that n holds, the then or else its if took, and so on from those.
// dependentSchemas are left out: they never apply to arrays, and
// unevaluatedProperties beside them is refused.
func inPlace(n *Node, s *Schema) []*Schema {
	in := make(map[*Schema]bool, len(n.Schemas))
	for _, x := range n.Schemas {
		in[x] = true
	}
	seen := map[*Schema]bool{s: true}
	out := []*Schema{s}
	for i := 0; i < len(out); i++ {
		x := out[i]
		next := append([]*Schema{}, x.AllOf...)
		if x.Target != nil {
			next = append(next, x.Target)
		}
		// Then applies from x where its if holds, else where it does not:
		// x's conditional was split in n (If in one branch, its negation
		// in the other), so in[x.If] says which; then or else may also be
		// in n by another way ($ref) without applying from x.
		var cond []*Schema
		if x.If != nil {
			cond = []*Schema{x.If, x.Else}
			if in[x.If] {
				cond[1] = x.Then
			}
		}
		for _, list := range [][]*Schema{x.AnyOf, x.OneOf, cond} {
			for _, b := range list {
				if b != nil && in[b] {
					next = append(next, b)
				}
			}
		}
		for _, y := range next {
			if !seen[y] {
				seen[y] = true
				out = append(out, y)
			}
		}
	}
	return out
}

// unevaluatedObjects returns, for each schema of n with
// unevaluatedProperties that still judges some keys, the object schema
// it amounts to.
func (c *compiler) unevaluatedObjects(n *Node) ([]*Schema, error) {
	var out []*Schema
	for _, s := range n.Obj {
		if s.UnevaluatedProps == nil {
			continue
		}
		y := newSchema(s.Ptr + "/unevaluatedProperties()")
		y.Has = 1<<kwProperties | 1<<kwPatternProperties | 1<<kwAdditionalProperties
		y.AdditionalProps = s.UnevaluatedProps
		all := false
		for _, x := range inPlace(n, s) {
			if x.AdditionalProps != nil || (x != s && x.UnevaluatedProps != nil) {
				all = true // every key is evaluated
				break
			}
			if len(x.DepSchemas) > 0 {
				return nil, c.errorf(s.Ptr, "unevaluatedProperties", "beside dependentSchemas (at %s), whose evaluation depends on the value: not supported", x.Ptr)
			}
			for _, p := range x.Props {
				if y.prop(p.Name) == nil {
					y.Props = append(y.Props, Prop{p.Name, newSchema(y.Ptr + "/" + jsonptr.Escape(p.Name))})
				}
			}
			for _, pp := range x.PatternProps {
				dup := false
				for _, q := range y.PatternProps {
					dup = dup || q.Pattern == pp.Pattern
				}
				if !dup {
					y.PatternProps = append(y.PatternProps, PatternProp{pp.Pattern, newSchema(y.Ptr + "/" + jsonptr.Escape(pp.Pattern))})
				}
			}
		}
		if !all {
			out = append(out, y)
		}
	}
	return out, nil
}

// unevaluatedArrays returns, for each schema of n with unevaluatedItems
// that still judges some items, the array schema it amounts to.
func (c *compiler) unevaluatedArrays(n *Node) ([]*Schema, error) {
	var out []*Schema
	for _, s := range n.Arr {
		if s.UnevaluatedItems == nil {
			continue
		}
		all, prefix := false, 0
		for _, x := range inPlace(n, s) {
			if x.Items != nil || (x != s && x.UnevaluatedItems != nil) {
				all = true
				break
			}
			if x.Contains != nil {
				return nil, c.errorf(s.Ptr, "unevaluatedItems", "beside contains (at %s), whose evaluation depends on the value: not supported", x.Ptr)
			}
			prefix = max(prefix, len(x.Prefix))
		}
		if all {
			continue
		}
		y := newSchema(s.Ptr + "/unevaluatedItems()")
		y.Has = 1<<kwPrefixItems | 1<<kwItems
		for i := range prefix {
			y.Prefix = append(y.Prefix, newSchema(y.Ptr+"/"+string(rune('0'+i%10))))
		}
		y.Items = s.UnevaluatedItems
		out = append(out, y)
	}
	return out, nil
}

// branchSets returns, for each non-empty set of the branches of s's
// anyOf, the schema that holds where all of them hold and, with negs
// (the branches' negations), where the others do not. Either way their
// union is the anyOf's language with what each set evaluates judged
// exactly: the keys (items) that the branches of a set evaluate are
// evaluated wherever they hold, whatever else holds, and more branches
// holding only evaluate more. So a value valid where exactly the set S
// holds is valid in S's alternative, and one valid in S's alternative is
// valid where a larger set holds. Without the negations the sets cost
// far less (3 branches of 40 properties: 3.5 ms, against 0.6 s to be
// refused past maxLowered), but intersecting the branches costs the
// product of their sizes where they recurse, and multiplies the
// combinators they apply in place; holdingSetsFit says where it does
// not.
func branchSets(s *Schema, branches, negs []*Schema) []*Schema {
	var out []*Schema
	for set := 1; set < 1<<len(branches); set++ {
		x := newSchema(fmt.Sprintf("%s/anyOf/{%b}", s.Ptr, set))
		x.Has = 1 << kwAllOf
		for i, b := range branches {
			switch {
			case set&(1<<i) != 0:
				x.AllOf = append(x.AllOf, b)
			case negs != nil:
				x.AllOf = append(x.AllOf, negs[i])
			}
		}
		out = append(out, x)
	}
	return out
}

// negations returns the negations of branches.
func (c *compiler) negations(branches []*Schema) ([]*Schema, error) {
	negs := make([]*Schema, len(branches))
	for i, b := range branches {
		nb, err := c.neg.negate(b)
		if err != nil {
			return nil, err
		}
		negs[i] = nb
	}
	return negs, nil
}

// maxHoldingSchemas bounds the distinct schemas under an anyOf's
// branches, each branch counted once for each of the sets it is in (half
// of them), for their sets to be taken without negations.
const maxHoldingSchemas = 4096

// holdingSetsFit reports whether the sets of the anyOf branches of n
// may be taken without the negations of the other branches (see
// branchSets): when the schemas under the branches are plain, at most
// maxHoldingSchemas, and none under itself ($ref); $refs are resolved to
// be followed. Plain is what keeps the sets, which overlap, small and
// exact: no anyOf, oneOf, if or not (whose branches would multiply in
// every set, or whose negations cost); no dependentSchemas, unevaluated*
// or contains (evaluation that depends on the value); no minProperties
// above 1 or dependentRequired, there or in n, and no oneOf of required
// lists in n (they refuse or miscount keys the set does not list, which
// negations list); and key automata (patternProperties, propertyNames)
// under one branch at most (the sets would intersect them).
func (c *compiler) holdingSetsFit(n *Node, branches []*Schema) bool {
	if n.presence != nil {
		return false
	}
	for _, s := range n.Obj {
		if s.MinProps > 1 || len(s.DepRequired) > 0 {
			return false
		}
	}
	w := schemaCount{c: c, budget: maxHoldingSchemas >> (len(branches) - 1), done: map[*Schema]bool{}, open: map[*Schema]bool{}}
	automata := 0
	for _, b := range branches {
		plain, automaton := w.count(b)
		if !plain {
			return false
		}
		if automaton {
			if automata++; automata > 1 {
				return false
			}
		}
	}
	return true
}

// schemaCount walks the schemas under some branches, each once, against
// a budget, and stops at one that is not plain (see holdingSetsFit) or
// is under itself.
type schemaCount struct {
	c      *compiler
	budget int
	done   map[*Schema]bool // walked with all below: whether a key automaton is there
	open   map[*Schema]bool // on the path being walked
}

// count walks the schemas under s, and reports whether they are plain,
// within the budget and none under itself, and whether one has
// patternProperties or propertyNames.
func (w *schemaCount) count(s *Schema) (plain, keyAutomaton bool) {
	if s == nil {
		return true, false
	}
	if automaton, ok := w.done[s]; ok {
		return true, automaton
	}
	if w.open[s] {
		return false, false
	}
	if w.budget--; w.budget < 0 {
		return false, false
	}
	if len(s.AnyOf) > 0 || len(s.OneOf) > 0 || s.If != nil || s.Not != nil || len(s.DepSchemas) > 0 ||
		s.UnevaluatedProps != nil || s.UnevaluatedItems != nil || s.Contains != nil || s.MinProps > 1 || len(s.DepRequired) > 0 {
		return false, false
	}
	keyAutomaton = len(s.PatternProps) > 0 || (s.PropertyNames != nil && !s.PropertyNames.isTrue())
	w.open[s] = true
	subs := append([]*Schema{s.Items, s.AdditionalProps, s.PropertyNames}, s.AllOf...)
	subs = append(subs, s.Prefix...)
	for _, p := range s.Props {
		subs = append(subs, p.Schema)
	}
	for _, p := range s.PatternProps {
		subs = append(subs, p.Schema)
	}
	if s.Ref != "" {
		t, err := w.c.p.target(s)
		if err != nil {
			return false, false
		}
		subs = append(subs, t)
	}
	for _, x := range subs {
		ok, automaton := w.count(x)
		if !ok {
			return false, false
		}
		keyAutomaton = keyAutomaton || automaton
	}
	delete(w.open, s)
	w.done[s] = keyAutomaton
	return true, keyAutomaton
}
