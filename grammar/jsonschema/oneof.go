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

// maxTypeSteps bounds the schemas one typesOf visits: a chain of
// anyOfs whose branches refer to one schema would double the visits at
// each level. Past it, typesOf answers every type, as it does for what
// it cannot follow.
const maxTypeSteps = 4096

// typesOf returns the instance types schema s can take (a superset).
func (c *compiler) typesOf(s any, depth int) typeBits {
	if depth == 0 {
		c.typeSteps = 0
	}
	if c.typeSteps++; c.typeSteps > maxTypeSteps {
		return tAll
	}
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

// A proof that two branches exclude each other may hold for one type
// of values only: a tag (a property both require, fixed to different
// values) or a property one requires and the other forbids says nothing
// of a string, which satisfies both branches when neither has a type. So
// exclusivity is proved type by type (oneOfTypes), and a type no proof
// covers is either left out of the compiled oneOf, when two branches
// take every value of that type (then no such value is valid), or the
// oneOf is refused.

// branchInfo is what the proofs need of one oneOf branch, found once.
type branchInfo struct {
	m       map[string]any      // the branch with its $refs followed; nil if unknown
	types   typeBits            // the types it may take (a superset)
	total   typeBits            // the types all of whose values it takes
	scalars map[string]bool     // its enum or const as canonical texts; nil if none or not scalars
	tags    map[string]scalarSt // required properties whose values are scalar sets
}

// scalarSt is a set of scalar values as canonical texts.
type scalarSt = map[string]bool

// maxProofSteps bounds the steps of the proofs of one oneOf: each branch
// pair compares tags and value sets, which the schema may make large.
const maxProofSteps = 1 << 20

// oneOfTypes proves the branches of a oneOf exclusive, type by type,
// among the types sibling (the schema around the oneOf) allows. It
// returns the types a value may have (those where every pair of branches
// is exclusive), having left out those where two branches take every
// value; where neither holds it refuses, naming two branches.
func (c *compiler) oneOfTypes(list []any, siblings map[string]any, ptr string) (typeBits, error) {
	if len(list) > MaxOneOfBranches {
		return 0, c.limitf(ptr, "oneOf", limitOneOf, "%d branches, more than the limit of %d (MaxOneOfBranches)", len(list), MaxOneOfBranches)
	}
	info := make([]branchInfo, len(list))
	steps := 0
	for i, b := range list {
		m := c.deref(b)
		info[i] = branchInfo{m: m, types: c.typesOf(b, 0), total: totalTypes(m)}
		if m == nil {
			continue
		}
		if vals, ok := scalarSet(m); ok {
			info[i].scalars = setOf(vals)
			steps += len(vals)
		}
		props, _ := m["properties"].(map[string]any)
		for _, name := range requiredOf(m) {
			steps++
			sm := c.deref(props[name])
			if sm == nil {
				continue
			}
			if vals, ok := scalarSet(sm); ok {
				if info[i].tags == nil {
					info[i].tags = map[string]scalarSt{}
				}
				info[i].tags[name] = setOf(vals)
				steps += len(vals)
			}
		}
	}
	allowed := c.typesOf(siblings, 0)
	keep := typeBits(0)
	for t := tNull; t <= tFraction; t <<= 1 {
		if allowed&t == 0 {
			continue
		}
		i, j, ok := c.exclusiveOn(info, t, &steps)
		if steps > maxProofSteps {
			return 0, c.limitf(ptr, "oneOf", limitWork, "proving the branches exclusive would take more than %d steps", maxProofSteps)
		}
		if ok {
			keep |= t
			continue
		}
		total := 0
		for _, b := range info {
			if b.total&t != 0 {
				total++
			}
		}
		if total < 2 {
			return 0, c.errorf(ptr, "oneOf", "branches %d and %d may both hold for one value (%s): not supported", i, j, t)
		}
		// Every value of type t satisfies two branches: none is valid.
	}
	return keep, nil
}

// exclusiveOn reports whether no value of type t satisfies two of the
// branches, or names two that a value may satisfy both.
func (c *compiler) exclusiveOn(info []branchInfo, t typeBits, steps *int) (int, int, bool) {
	for i := range info {
		for j := i + 1; j < len(info); j++ {
			if !disjointOn(&info[i], &info[j], t, steps) {
				return i, j, false
			}
		}
	}
	return 0, 0, true
}

// disjointOn reports whether no value of type t satisfies both a and b.
func disjointOn(a, b *branchInfo, t typeBits, steps *int) bool {
	*steps++
	if a.types&b.types&t == 0 {
		return true
	}
	if a.scalars != nil && b.scalars != nil && !overlaps(a.scalars, b.scalars, steps) {
		return true // whatever the type
	}
	if t != tObject || a.m == nil || b.m == nil {
		return false
	}
	// Objects only: one requires a property the other forbids, or a tag.
	if excludes(a.m, b.m) || excludes(b.m, a.m) {
		return true
	}
	for name, va := range a.tags {
		*steps++
		if vb, ok := b.tags[name]; ok && !overlaps(va, vb, steps) {
			return true
		}
	}
	return false
}

func setOf(vals []string) scalarSt {
	out := make(scalarSt, len(vals))
	for _, v := range vals {
		out[v] = true
	}
	return out
}

// overlaps reports whether two sets share a value.
func overlaps(a, b scalarSt, steps *int) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	*steps += len(a)
	for v := range a {
		if b[v] {
			return true
		}
	}
	return false
}

// totalTypes returns the types all of whose values m takes: those its
// type (and nullable) allow that none of its other assertions
// constrain. It is a subset (a keyword is taken to constrain whatever
// its value); nil takes nothing for sure.
func totalTypes(m map[string]any) typeBits {
	if m == nil {
		return 0
	}
	bits := tAll
	if t, ok := m["type"]; ok {
		bits = 0
		for _, name := range typeSet(t) {
			s, _ := name.(string)
			if b := typeBit(s); b != tAll { // an unknown name: nothing for sure
				bits |= b
			}
		}
		if n, ok := m["nullable"].(bool); ok && n {
			bits |= tNull
		}
	}
	for k := range m {
		switch {
		case k == "type" || k == "nullable" || !isAssertion(k):
		case slices.Contains(generalKeywords, k):
			return 0
		default:
			for name, kws := range typeKeywords {
				if slices.Contains(kws, k) {
					bits &^= typeBit(name)
				}
			}
		}
	}
	return bits
}

// restrictTypes returns siblings with a type that keeps only the types
// in keep (for a oneOf none of whose values of the others is valid), or
// an error when keep cannot be written as a type.
func (c *compiler) restrictTypes(siblings map[string]any, keep typeBits, ptr string) (map[string]any, error) {
	var names []any
	for _, name := range []string{"null", "boolean", "object", "array", "string"} {
		if keep&typeBit(name) != 0 {
			names = append(names, name)
		}
	}
	switch keep & (tInteger | tFraction) {
	case tInteger | tFraction:
		names = append(names, "number")
	case tInteger:
		names = append(names, "integer")
	case tFraction:
		return nil, c.errorf(ptr, "oneOf", "only numbers that are not integers satisfy exactly one branch: not supported")
	}
	if len(names) == 0 {
		return nil, c.emptyf(ptr, "oneOf", "no value satisfies exactly one branch")
	}
	return c.mergeSchemas(siblings, map[string]any{"type": names}, ptr)
}

func (t typeBits) String() string {
	var names []string
	for _, n := range []struct {
		bit  typeBits
		name string
	}{{tNull, "null"}, {tBoolean, "a boolean"}, {tObject, "an object"}, {tArray, "an array"}, {tString, "a string"}, {tInteger, "an integer"}, {tFraction, "a number not an integer"}} {
		if t&n.bit != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, " or ")
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
