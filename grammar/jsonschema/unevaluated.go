package jsonschema

import (
	"fmt"
	"slices"
)

// unevaluatedProperties and unevaluatedItems judge what the schema's
// evaluation left unjudged: the keys (items) no properties,
// patternProperties or additionalProperties (prefixItems, items) of the
// schemas applied in place took. In a Node whose combinators have been
// distributed, the schemas applied in place from a schema are known: its
// allOf branches, its $ref's target, and the branches of its anyOf,
// oneOf and if that were taken. So unevaluatedProperties becomes one more
// object schema intersected: the names and patterns of those schemas,
// each taking any value, and unevaluatedProperties as its
// additionalProperties (unevaluatedItems: a prefix as long, then the
// items). Where evaluation depends on the value (contains,
// dependentSchemas) it is refused. An anyOf branch not taken may also
// hold and evaluate more: taking only the branch taken judges more keys
// than the validator does, which is narrower, never wider.

// inPlace returns the schemas of n that apply in place from s: s, its
// allOf branches and $ref's target, and the branches of its combinators
// that n holds (the ones taken), and so on from those.
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
		for _, list := range [][]*Schema{x.AnyOf, x.OneOf, {x.If, x.Then, x.Else}} {
			for _, b := range list {
				if b != nil && in[b] {
					next = append(next, b)
				}
			}
		}
		for _, d := range x.DepSchemas {
			if in[d.Schema] {
				next = append(next, d.Schema)
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
					y.Props = append(y.Props, Prop{p.Name, newSchema(y.Ptr + "/" + escapePointer(p.Name))})
				}
			}
			for _, pp := range x.PatternProps {
				dup := false
				for _, q := range y.PatternProps {
					dup = dup || q.Pattern == pp.Pattern
				}
				if !dup {
					y.PatternProps = append(y.PatternProps, PatternProp{pp.Pattern, newSchema(y.Ptr + "/" + escapePointer(pp.Pattern))})
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
// far less (3 branches of 40 properties: 3.5 ms against 0.6 s to pass
// maxLowered), but nothing bounds how they multiply the combinators the
// branches apply in place, which negating them, when it can, does.
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

// maxHoldingSchemas bounds the schemas the sets of an anyOf's branches
// hold in all, without negations: each branch counts in each set it is
// in, half of them.
const maxHoldingSchemas = 4096

// holdingSetsFit reports whether an anyOf's sets of branches can be
// taken without the negations of the other branches: when no branch
// applies in place a combinator (anyOf, oneOf, if, dependentSchemas), or
// judges evaluation itself (unevaluatedProperties, unevaluatedItems,
// contains), and the sets hold at most maxHoldingSchemas schemas.
func holdingSetsFit(branches []*Schema) bool {
	budget := maxHoldingSchemas >> (len(branches) - 1)
	seen := map[*Schema]bool{}
	for _, b := range branches {
		if !appliesNoCombinator(b) {
			return false
		}
		if budget = countSchemas(b, seen, budget); budget < 0 {
			return false
		}
	}
	return true
}

// appliesNoCombinator reports whether s and the schemas it applies in
// place (allOf, $ref) have none of the keywords holdingSetsFit names.
func appliesNoCombinator(s *Schema) bool {
	seen := map[*Schema]bool{}
	var flat func(x *Schema) bool
	flat = func(x *Schema) bool {
		if x == nil || seen[x] {
			return true
		}
		seen[x] = true
		if len(x.AnyOf) > 0 || len(x.OneOf) > 0 || x.If != nil || len(x.DepSchemas) > 0 ||
			x.UnevaluatedProps != nil || x.UnevaluatedItems != nil || x.Contains != nil {
			return false
		}
		return !slices.ContainsFunc(x.AllOf, func(y *Schema) bool { return !flat(y) }) && flat(x.Target)
	}
	return flat(s)
}

// countSchemas takes from budget the schemas under s not in seen, and
// returns what is left: below zero once it is spent, without counting
// on.
func countSchemas(s *Schema, seen map[*Schema]bool, budget int) int {
	if s == nil || seen[s] || budget < 0 {
		return budget
	}
	seen[s] = true
	budget--
	for _, list := range [][]*Schema{{s.Target, s.Not, s.If, s.Then, s.Else, s.Items, s.Contains, s.UnevaluatedItems,
		s.AdditionalProps, s.PropertyNames, s.UnevaluatedProps}, s.AllOf, s.AnyOf, s.OneOf, s.Prefix} {
		for _, x := range list {
			budget = countSchemas(x, seen, budget)
		}
	}
	for _, p := range s.Props {
		budget = countSchemas(p.Schema, seen, budget)
	}
	for _, p := range s.PatternProps {
		budget = countSchemas(p.Schema, seen, budget)
	}
	for _, d := range s.DepSchemas {
		budget = countSchemas(d.Schema, seen, budget)
	}
	return budget
}
