package jsonschema

import (
	"encoding/json"
	"slices"
	"strings"
)

// A oneOf is exact as an anyOf when no value satisfies two of its
// branches. disjoint decides that conservatively: by the instance types
// the branches allow, by their enum or const values, or by a property
// both require whose values they fix differently (a tagged union's tag).

// typeBits is a set of instance types; integers are a part of numbers.
type typeBits uint8

const (
	tNull typeBits = 1 << iota
	tBoolean
	tObject
	tArray
	tString
	tInteger
	tFraction // numbers that are not integers
	tAll      = tNull | tBoolean | tObject | tArray | tString | tInteger | tFraction
)

func typeBit(name string) typeBits {
	switch name {
	case "null":
		return tNull
	case "boolean":
		return tBoolean
	case "object":
		return tObject
	case "array":
		return tArray
	case "string":
		return tString
	case "integer":
		return tInteger
	case "number":
		return tInteger | tFraction
	}
	return tAll // unknown: assume anything
}

// maxResolve bounds how many references a disjointness check follows.
const maxResolve = 32

// deref follows $ref chains of s within the document; nil when it
// cannot (a remote reference, a loop, a bad pointer).
func (c *compiler) deref(s any) map[string]any {
	for range maxResolve {
		switch x := s.(type) {
		case bool:
			if x {
				return map[string]any{}
			}
			return map[string]any{"not": map[string]any{}}
		case map[string]any:
			ref, ok := x["$ref"].(string)
			if !ok {
				return x
			}
			if len(x) > 1 && !c.oldDraft {
				return x // siblings constrain too: judge the object as it is
			}
			_, t, err := c.refs.target(ref)
			if err != nil {
				return nil
			}
			s = t
		default:
			return nil
		}
	}
	return nil
}

// typesOf returns the instance types schema s can take (a superset).
func (c *compiler) typesOf(s any, depth int) typeBits {
	m := c.deref(s)
	if m == nil || depth > maxResolve {
		return tAll
	}
	if _, ok := m["not"]; ok && len(m) == 1 {
		if n, ok := m["not"].(map[string]any); ok && len(n) == 0 {
			return 0 // false
		}
	}
	bits := tAll
	switch t := m["type"].(type) {
	case string:
		bits = typeBit(t)
	case []any:
		bits = 0
		for _, x := range t {
			name, _ := x.(string)
			bits |= typeBit(name)
		}
	}
	if n, ok := m["nullable"].(bool); ok && n {
		bits |= tNull
	}
	if vals, ok := enumValues(m); ok {
		var vb typeBits
		for _, v := range vals {
			vb |= valueType(v)
		}
		bits &= vb
	}
	if all, ok := m["allOf"].([]any); ok {
		for _, b := range all {
			bits &= c.typesOf(b, depth+1)
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if list, ok := m[kw].([]any); ok {
			var u typeBits
			for _, b := range list {
				u |= c.typesOf(b, depth+1)
			}
			bits &= u
		}
	}
	return bits
}

// enumValues returns the values an enum or const allows.
func enumValues(m map[string]any) ([]any, bool) {
	if v, ok := m["const"]; ok {
		return []any{v}, true
	}
	if e, ok := m["enum"].([]any); ok {
		return e, true
	}
	return nil, false
}

// valueType is the type of a JSON value decoded with UseNumber.
func valueType(v any) typeBits {
	switch x := v.(type) {
	case nil:
		return tNull
	case bool:
		return tBoolean
	case map[string]any:
		return tObject
	case []any:
		return tArray
	case string:
		return tString
	case interface{ String() string }: // json.Number
		if s := x.String(); strings.ContainsAny(s, ".eE") {
			return tInteger | tFraction // 1.0 is an integer too
		}
		return tInteger
	}
	return tAll
}

// disjoint reports whether no value satisfies both a and b.
func (c *compiler) disjoint(a, b any) bool {
	if c.typesOf(a, 0)&c.typesOf(b, 0) == 0 {
		return true
	}
	ma, mb := c.deref(a), c.deref(b)
	if ma == nil || mb == nil {
		return false
	}
	if va, ok := scalarSet(ma); ok {
		if vb, ok := scalarSet(mb); ok && !intersects(va, vb) {
			return true
		}
	}
	// Objects only, and one requires a property the other forbids (no
	// additional properties, not listed, no patterns).
	if c.typesOf(a, 0)&c.typesOf(b, 0)&^tObject == 0 && (excludes(ma, mb) || excludes(mb, ma)) {
		return true
	}
	// A tag: a property both require, with scalar values that differ.
	propsA, _ := ma["properties"].(map[string]any)
	propsB, _ := mb["properties"].(map[string]any)
	for _, name := range requiredOf(ma) {
		if !slices.Contains(requiredOf(mb), name) {
			continue
		}
		sa, sb := c.deref(propsA[name]), c.deref(propsB[name])
		if sa == nil || sb == nil {
			continue
		}
		va, okA := scalarSet(sa)
		vb, okB := scalarSet(sb)
		if okA && okB && !intersects(va, vb) {
			return true
		}
	}
	return false
}

// excludes reports whether object schema a forbids a property b
// requires: a takes no additional properties, no pattern ones, and does
// not list it.
func excludes(a, b map[string]any) bool {
	if ap, ok := a["additionalProperties"].(bool); !ok || ap {
		return false
	}
	if _, ok := a["patternProperties"]; ok {
		return false
	}
	props, _ := a["properties"].(map[string]any)
	for _, name := range requiredOf(b) {
		if _, listed := props[name]; !listed {
			return true
		}
	}
	return false
}

func requiredOf(m map[string]any) []string {
	var out []string
	if r, ok := m["required"].([]any); ok {
		for _, x := range r {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// scalarSet returns the values of an enum or const made only of strings,
// booleans and null (numbers compare by value, objects regardless of
// order: left out), as canonical text.
func scalarSet(m map[string]any) ([]string, bool) {
	vals, ok := enumValues(m)
	if !ok {
		return nil, false
	}
	var out []string
	for _, v := range vals {
		if _, isNumber := v.(json.Number); isNumber {
			return nil, false
		}
		s, ok := canonical(v)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func intersects(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}
