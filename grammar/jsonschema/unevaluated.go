package jsonschema

import "fmt"

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
		// Of then and else, the one the if taken says: the other may be
		// in n by another way ($ref), without applying from x.
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

// holdingSetsFit reports whether an anyOf's sets of branches may be
// taken without the negations of the other branches: when every branch
// is plain (see plainInPlace), at most one splits keys by automaton
// (patternProperties, propertyNames: the sets would intersect their
// automata), no schema under them refers back to itself ($ref), and
// they hold at most maxHoldingSchemas schemas. $refs are followed, and
// resolved if they were not yet.
func (c *compiler) holdingSetsFit(branches []*Schema) bool {
	w := schemaCount{c: c, budget: maxHoldingSchemas >> (len(branches) - 1), done: map[*Schema]bool{}, open: map[*Schema]bool{}}
	automata := 0
	for _, b := range branches {
		plain, keyAutomaton := c.plainInPlace(b)
		if keyAutomaton {
			automata++
		}
		if !plain || automata > 1 || !w.count(b) {
			return false
		}
	}
	return true
}

// plainInPlace reports whether s and the schemas it applies in place
// (allOf, $ref) apply nothing that depends on the value (anyOf, oneOf,
// if, not, dependentSchemas) and judge no evaluation (unevaluated*,
// whose own sets would multiply in every set; contains, whose
// evaluation depends on the items); and whether they split keys by
// automaton (patternProperties, propertyNames).
func (c *compiler) plainInPlace(s *Schema) (plain, keyAutomaton bool) {
	seen := map[*Schema]bool{}
	var walk func(x *Schema) bool
	walk = func(x *Schema) bool {
		if seen[x] {
			return true
		}
		seen[x] = true
		if len(x.AnyOf) > 0 || len(x.OneOf) > 0 || x.If != nil || x.Not != nil || len(x.DepSchemas) > 0 ||
			x.UnevaluatedProps != nil || x.UnevaluatedItems != nil || x.Contains != nil {
			return false
		}
		keyAutomaton = keyAutomaton || len(x.PatternProps) > 0 || (x.PropertyNames != nil && !x.PropertyNames.isTrue())
		for _, y := range x.AllOf {
			if !walk(y) {
				return false
			}
		}
		if x.Ref == "" {
			return true
		}
		t, err := c.p.target(x)
		return err == nil && walk(t)
	}
	return walk(s), keyAutomaton
}

// schemaCount counts the schemas under some, each once, against a
// budget, and finds a schema under itself.
type schemaCount struct {
	c      *compiler
	budget int
	done   map[*Schema]bool // counted with all below
	open   map[*Schema]bool // on the path being counted
}

// count counts the schemas under s, and reports whether the budget
// holds them and none is under itself.
func (w *schemaCount) count(s *Schema) bool {
	if s == nil || w.done[s] {
		return true
	}
	if w.open[s] {
		return false
	}
	if w.budget--; w.budget < 0 {
		return false
	}
	w.open[s] = true
	subs := []*Schema{s.Not, s.If, s.Then, s.Else, s.Items, s.Contains, s.UnevaluatedItems,
		s.AdditionalProps, s.PropertyNames, s.UnevaluatedProps}
	subs = append(subs, s.AllOf...)
	subs = append(subs, s.AnyOf...)
	subs = append(subs, s.OneOf...)
	subs = append(subs, s.Prefix...)
	for _, p := range s.Props {
		subs = append(subs, p.Schema)
	}
	for _, p := range s.PatternProps {
		subs = append(subs, p.Schema)
	}
	for _, d := range s.DepSchemas {
		subs = append(subs, d.Schema)
	}
	if s.Ref != "" {
		t, err := w.c.p.target(s)
		if err != nil {
			return false
		}
		subs = append(subs, t)
	}
	for _, x := range subs {
		if !w.count(x) {
			return false
		}
	}
	delete(w.open, s)
	w.done[s] = true
	return true
}
