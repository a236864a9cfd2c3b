package jsonschema

import (
	"encoding/json"
	"errors"
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

// Merging (allOf, and the siblings of $ref) expands references in
// place, so its work is bounded apart from the schema's size: a chain of
// definitions each an allOf of two references to the next doubles it at
// each level, and one that refers to itself never ends.
const (
	// maxMergeWork bounds the steps of all merges of one compilation:
	// each key merged, each value compared, each schema flattened.
	maxMergeWork = 1 << 20
	// maxMergeDepth bounds how deeply flatten nests (an allOf whose
	// branch is an allOf, through references).
	maxMergeDepth = 64
)

// workError is the error past maxMergeWork.
func (c *compiler) workError(ptr string) error {
	return c.limitf(ptr, "allOf", limitWork, "merging allOf branches and the siblings of $ref would take more than %d steps (a $ref merged into itself, or doubling at each level?)", maxMergeWork)
}

// overWork adds n steps of merging and reports whether the budget is
// spent.
func (c *compiler) overWork(n int) bool {
	c.mergeWork += n
	return c.mergeWork > maxMergeWork
}

// equal is reflect.DeepEqual on decoded JSON, a step per value, that
// gives up (false) once the merge budget is spent.
func (c *compiler) equal(a, b any) bool {
	if c.overWork(1) {
		return false
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !c.equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !c.equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number, string, bool, nil:
		return a == b
	}
	return reflect.DeepEqual(a, b)
}

// mergeSchemas returns one schema object equivalent to both a and b
// holding (allOf), or an error naming the keyword where that cannot be
// done exactly.
func (c *compiler) mergeSchemas(a, b map[string]any, ptr string) (out map[string]any, err error) {
	if c.overWork(len(a) + len(b)) {
		return nil, c.workError(ptr)
	}
	defer func() {
		if err == nil && c.mergeWork > maxMergeWork {
			out, err = nil, c.workError(ptr)
		}
	}()
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
	if hasAny(a) && hasAny(b) && !c.equalFor(a, b, arrayKW) {
		return nil, refuse("items", "array keywords on both sides")
	}
	out = maps.Clone(a)
	// Numeric bounds merge as pairs (a bound and whether it is
	// excluded), compared exactly: draft 4's exclusiveMinimum true
	// belongs to its own minimum, not to the merged one.
	for _, isMin := range []bool{true, false} {
		base, ex := boundKeywords(isMin)
		ba, errA := readBound(a, isMin)
		bb, errB := readBound(b, isMin)
		for _, err := range []*boundError{errA, errB} {
			if err != nil {
				return nil, &Error{Pointer: ptr, Keyword: err.kw, Msg: "cannot merge (allOf or siblings): " + err.Error(), Limit: limitOf(err)}
			}
		}
		delete(out, base)
		delete(out, ex)
		switch t := tighter(ba, bb, isMin); {
		case t == nil:
		case !t.strict:
			out[base] = t.text
		case t.flag: // draft 4
			out[base], out[ex] = t.text, true
		default:
			out[ex] = t.text
		}
	}
	keys := slices.Sorted(maps.Keys(b))
	for _, k := range keys {
		if k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum" {
			continue // merged above
		}
		vb := b[k]
		va, exists := out[k]
		if !exists {
			out[k] = vb
			continue
		}
		if c.equal(va, vb) {
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
				if prev, ok := merged[name]; ok && !c.equal(prev, s) {
					pm, ok1 := prev.(map[string]any)
					sm, ok2 := s.(map[string]any)
					if !ok1 || !ok2 {
						return nil, refuse(k, fmt.Sprintf("property %q has two schemas", name))
					}
					m, err := c.mergeSchemas(pm, sm, ptr+"/properties/"+escapePointer(name))
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
		case k == "minLength" || k == "minItems" || k == "minProperties" || k == "minContains":
			if out[k], err = pick(va, vb, true); err != nil {
				return nil, refuse(k, err.Error())
			}
		case k == "maxLength" || k == "maxItems" || k == "maxProperties" || k == "maxContains":
			if out[k], err = pick(va, vb, false); err != nil {
				return nil, refuse(k, err.Error())
			}
		default:
			return nil, refuse(k, "both schemas set it differently")
		}
	}
	return out, nil
}

func (c *compiler) equalFor(a, b map[string]any, keys []string) bool {
	for _, k := range keys {
		if !c.equal(a[k], b[k]) {
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

// pick returns the larger (or smaller) of two JSON numbers, compared
// exactly.
func pick(a, b any, larger bool) (any, error) {
	na, okA := a.(json.Number)
	nb, okB := b.(json.Number)
	if !okA || !okB {
		return nil, fmt.Errorf("must be a number")
	}
	ra, err := parseNumber(na)
	if err != nil {
		return nil, err
	}
	rb, err := parseNumber(nb)
	if err != nil {
		return nil, err
	}
	if (rb.Cmp(ra) > 0) == larger {
		return b, nil
	}
	return a, nil
}

// limitOf is the limit err exceeds, or "".
func limitOf(err error) string {
	var l *limitError
	if errors.As(err, &l) {
		return l.limit
	}
	return ""
}

// flatten resolves allOf (and draft 2019+ siblings of $ref) into one
// schema object by merging, recursively.
func (c *compiler) flatten(s map[string]any, ptr string) (map[string]any, error) {
	if c.mergeDepth++; c.mergeDepth > maxMergeDepth {
		return nil, c.limitf(ptr, "allOf", limitWork, "allOf branches and references nest more than %d deep when merged (a $ref merged into itself?)", maxMergeDepth)
	}
	defer func() { c.mergeDepth-- }()
	if c.overWork(1) {
		return nil, c.workError(ptr)
	}
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
				return nil, wrapError(ptr, "$ref", err)
			}
			t, ok := target.(map[string]any)
			if !ok {
				return nil, &Error{Pointer: ptr, Keyword: "$ref", Msg: "target is not a schema object"}
			}
			rest := maps.Clone(s)
			delete(rest, "$ref")
			m, err := c.mergeSchemas(rest, t, ptr)
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
			sm, at, err := c.asObject(sub, sp)
			if err != nil {
				return nil, err
			}
			if sm, err = c.flatten(sm, at); err != nil {
				return nil, err
			}
			if sm, err = c.inlineRef(sm, sp); err != nil {
				return nil, err
			}
			if out, err = c.mergeSchemas(out, sm, ptr); err != nil {
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
		loc, target, err := c.refs.target(ref)
		if err != nil {
			return nil, wrapError(ptr, "$ref", err)
		}
		t, at, err := c.asObject(target, loc)
		if err != nil {
			return nil, err
		}
		if t, err = c.flatten(t, at); err != nil {
			return nil, err
		}
		if c.oldDraft {
			s = t // the siblings of $ref do not count
			continue
		}
		rest := maps.Clone(s)
		delete(rest, "$ref")
		if s, err = c.mergeSchemas(rest, t, ptr); err != nil {
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

// asObject turns a subschema at ptr into an object: a $ref alone is
// resolved (one level; a recursive target stays a reference inside),
// true is {}. It returns the object's location: ptr, or the $ref's
// target.
func (c *compiler) asObject(sub any, ptr string) (map[string]any, string, error) {
	for range 16 {
		switch x := sub.(type) {
		case bool:
			if x {
				return map[string]any{}, ptr, nil
			}
			return nil, "", &Error{Pointer: ptr, Msg: "the schema false allows no value", Empty: true}
		case map[string]any:
			ref, ok := x["$ref"].(string)
			if !ok || len(x) > 1 {
				return x, ptr, nil
			}
			loc, t, err := c.refs.target(ref)
			if err != nil {
				return nil, "", wrapError(ptr, "$ref", err)
			}
			sub, ptr = t, loc
		default:
			return nil, "", &Error{Pointer: ptr, Msg: "a schema must be an object or a boolean"}
		}
	}
	return nil, "", &Error{Pointer: ptr, Keyword: "$ref", Msg: "references nest too deeply"}
}
