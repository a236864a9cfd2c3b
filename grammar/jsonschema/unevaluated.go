package jsonschema

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
