package jsonschema

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// Keywords by the instance type they constrain; a keyword of a type the
// schema excludes constrains nothing. A key in none of these lists and
// not among the general assertion keywords belongs to no JSON Schema
// vocabulary ("_format", "x-kubernetes-...", "example") and has no
// validation semantics, so it is ignored exactly as validators ignore it.
var typeKeywords = map[string][]string{
	"string":  {"minLength", "maxLength", "pattern", "format"},
	"number":  {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
	"integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
	"object": {"properties", "required", "additionalProperties", "patternProperties", "propertyNames",
		"minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "dependencies", "unevaluatedProperties"},
	"array": {"items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems",
		"contains", "minContains", "maxContains", "unevaluatedItems"},
}

// generalKeywords assert whatever the instance type.
var generalKeywords = []string{"type", "enum", "const", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
	"$ref", "$dynamicRef", "$recursiveRef", "nullable", "discriminator"}

// isAssertion reports whether k is a keyword that can constrain instances.
func isAssertion(k string) bool {
	if slices.Contains(generalKeywords, k) {
		return true
	}
	for _, kws := range typeKeywords {
		if slices.Contains(kws, k) {
			return true
		}
	}
	return false
}

// mergeSchemas returns one schema object equivalent to both a and b
// holding (allOf), or an error naming the keyword where that cannot be
// done exactly.
func mergeSchemas(a, b map[string]any, ptr string) (map[string]any, error) {
	refuse := func(k, why string) error {
		return &Error{Pointer: ptr, Keyword: k, Msg: "cannot merge (allOf or siblings): " + why}
	}
	// additionalProperties judges the properties of its own schema only:
	// merging is exact only if the other side adds no property it lacks.
	for _, side := range [][2]map[string]any{{a, b}, {b, a}} {
		ap, has := side[0]["additionalProperties"]
		if !has || ap == true {
			continue
		}
		own, _ := side[0]["properties"].(map[string]any)
		other, _ := side[1]["properties"].(map[string]any)
		for name := range other {
			if _, ok := own[name]; !ok {
				return nil, refuse("additionalProperties", fmt.Sprintf("property %q of one schema is additional in the other", name))
			}
		}
		if _, ok := side[1]["patternProperties"]; ok {
			return nil, refuse("patternProperties", "beside additionalProperties")
		}
	}
	// Array keywords interact positionally: only one side may have them.
	arrayKW := []string{"items", "prefixItems", "additionalItems", "contains", "unevaluatedItems"}
	hasAny := func(m map[string]any) bool {
		for _, k := range arrayKW {
			if _, ok := m[k]; ok {
				return true
			}
		}
		return false
	}
	if hasAny(a) && hasAny(b) && !equalFor(a, b, arrayKW) {
		return nil, refuse("items", "array keywords on both sides")
	}
	out := maps.Clone(a)
	keys := slices.Sorted(maps.Keys(b))
	for _, k := range keys {
		vb := b[k]
		va, exists := out[k]
		if !exists {
			out[k] = vb
			continue
		}
		if reflect.DeepEqual(va, vb) {
			continue
		}
		switch {
		case !isAssertion(k):
			// an annotation: keep the first
		case k == "properties":
			pa, okA := va.(map[string]any)
			pb, okB := vb.(map[string]any)
			if !okA || !okB {
				return nil, refuse(k, "not objects")
			}
			merged := maps.Clone(pa)
			for name, s := range pb {
				if prev, ok := merged[name]; ok && !reflect.DeepEqual(prev, s) {
					pm, ok1 := prev.(map[string]any)
					sm, ok2 := s.(map[string]any)
					if !ok1 || !ok2 {
						return nil, refuse(k, fmt.Sprintf("property %q has two schemas", name))
					}
					m, err := mergeSchemas(pm, sm, ptr+"/properties/"+escapePointer(name))
					if err != nil {
						return nil, err
					}
					merged[name] = m
					continue
				}
				merged[name] = s
			}
			out[k] = merged
		case k == "required":
			ra, _ := va.([]any)
			rb, _ := vb.([]any)
			u := slices.Clone(ra)
			for _, x := range rb {
				if !slices.Contains(u, x) {
					u = append(u, x)
				}
			}
			out[k] = u
		case k == "type":
			ta, tb := typeSet(va), typeSet(vb)
			var both []any
			for _, t := range ta {
				switch {
				case slices.Contains(tb, t):
					both = append(both, t)
				case t == "integer" && slices.Contains(tb, "number"), t == "number" && slices.Contains(tb, "integer"):
					both = append(both, "integer")
				}
			}
			if len(both) == 0 {
				return nil, refuse(k, "no type satisfies both")
			}
			out[k] = both
		case k == "minimum" || k == "minLength" || k == "minItems" || k == "minProperties":
			out[k] = pick(va, vb, true)
		case k == "maximum" || k == "maxLength" || k == "maxItems" || k == "maxProperties":
			out[k] = pick(va, vb, false)
		default:
			return nil, refuse(k, "both schemas set it differently")
		}
	}
	return out, nil
}

func equalFor(a, b map[string]any, keys []string) bool {
	for _, k := range keys {
		if !reflect.DeepEqual(a[k], b[k]) {
			return false
		}
	}
	return true
}

func typeSet(v any) []any {
	switch t := v.(type) {
	case string:
		return []any{t}
	case []any:
		return t
	}
	return nil
}

// pick returns the larger (or smaller) of two JSON numbers.
func pick(a, b any, larger bool) any {
	na, okA := a.(json.Number)
	nb, okB := b.(json.Number)
	if !okA || !okB {
		return a
	}
	fa, _ := na.Float64()
	fb, _ := nb.Float64()
	if (fb > fa) == larger {
		return b
	}
	return a
}

// flatten resolves allOf (and draft 2019+ siblings of $ref) into one
// schema object by merging, recursively.
func (c *compiler) flatten(s map[string]any, ptr string) (map[string]any, error) {
	for depth := 0; ; depth++ {
		if depth > 16 {
			return nil, &Error{Pointer: ptr, Keyword: "$ref", Msg: "references nest too deeply to merge"}
		}
		ref, hasRef := s["$ref"].(string)
		constraining := false
		for k := range s {
			if k != "$ref" && isAssertion(k) {
				constraining = true
			}
		}
		if hasRef && constraining && !c.oldDraft {
			_, target, err := c.refs.target(ref)
			if err != nil {
				return nil, &Error{Pointer: ptr, Keyword: "$ref", Msg: err.Error()}
			}
			t, ok := target.(map[string]any)
			if !ok {
				return nil, &Error{Pointer: ptr, Keyword: "$ref", Msg: "target is not a schema object"}
			}
			rest := maps.Clone(s)
			delete(rest, "$ref")
			m, err := mergeSchemas(rest, t, ptr)
			if err != nil {
				return nil, err
			}
			s = m
			continue
		}
		all, hasAll := s["allOf"]
		if !hasAll {
			return s, nil
		}
		list, ok := all.([]any)
		if !ok || len(list) == 0 {
			return nil, &Error{Pointer: ptr, Keyword: "allOf", Msg: "must be a non-empty array"}
		}
		out := maps.Clone(s)
		delete(out, "allOf")
		// allOf of one schema and nothing else to merge: take it as it is,
		// so that a reference stays a rule (and recursion stays finite).
		if sub, ok := list[0].(map[string]any); ok && len(list) == 1 && !hasAssertion(out) {
			merged := maps.Clone(sub)
			for k, v := range out { // annotations
				if _, ok := merged[k]; !ok && k != "$ref" {
					merged[k] = v
				}
			}
			if _, isRef := sub["$ref"]; isRef {
				return sub, nil
			}
			s = merged
			continue
		}
		for i, sub := range list {
			sp := fmt.Sprintf("%s/allOf/%d", ptr, i)
			sm, err := c.asObject(sub, sp)
			if err != nil {
				return nil, err
			}
			if sm, err = c.flatten(sm, sp); err != nil {
				return nil, err
			}
			if sm, err = c.inlineRef(sm, sp); err != nil {
				return nil, err
			}
			if out, err = mergeSchemas(out, sm, ptr); err != nil {
				return nil, err
			}
		}
		s = out
	}
}

// inlineRef replaces a $ref at the top of s by its target, to merge
// s with other schemas: a merged $ref would take the others as its
// siblings, which older drafts ignore.
func (c *compiler) inlineRef(s map[string]any, ptr string) (map[string]any, error) {
	for range 16 {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s, nil
		}
		_, target, err := c.refs.target(ref)
		if err != nil {
			return nil, &Error{Pointer: ptr, Keyword: "$ref", Msg: err.Error()}
		}
		t, err := c.asObject(target, ptr)
		if err != nil {
			return nil, err
		}
		if t, err = c.flatten(t, ptr); err != nil {
			return nil, err
		}
		if c.oldDraft {
			s = t // the siblings of $ref do not count
			continue
		}
		rest := maps.Clone(s)
		delete(rest, "$ref")
		if s, err = mergeSchemas(rest, t, ptr); err != nil {
			return nil, err
		}
	}
	return nil, &Error{Pointer: ptr, Keyword: "$ref", Msg: "references nest too deeply to merge"}
}

func hasAssertion(m map[string]any) bool {
	for k := range m {
		if isAssertion(k) {
			return true
		}
	}
	return false
}

// asObject turns a subschema into an object: a $ref alone is resolved
// (one level; a recursive target stays a reference inside), true is {}.
func (c *compiler) asObject(sub any, ptr string) (map[string]any, error) {
	for range 16 {
		switch x := sub.(type) {
		case bool:
			if x {
				return map[string]any{}, nil
			}
			return nil, &Error{Pointer: ptr, Msg: "the schema false allows no value", Empty: true}
		case map[string]any:
			ref, ok := x["$ref"].(string)
			if !ok || len(x) > 1 {
				return x, nil
			}
			_, t, err := c.refs.target(ref)
			if err != nil {
				return nil, &Error{Pointer: ptr, Keyword: "$ref", Msg: err.Error()}
			}
			sub = t
		default:
			return nil, &Error{Pointer: ptr, Msg: "a schema must be an object or a boolean"}
		}
	}
	return nil, &Error{Pointer: ptr, Keyword: "$ref", Msg: "references nest too deeply"}
}
