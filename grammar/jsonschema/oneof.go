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

// valueType is the type of a JSON value decoded with UseNumber, as
// far as its text tells (1.0 may be an integer).
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
	case json.Number:
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
	n       *Node    // the branch normalized; nil if it cannot be
	types   typeBits // the types it may take (a superset)
	total   typeBits // the types all of whose values it takes
	scalars scalarSt // its enum or const as canonical texts; nil if none or not scalars
	// tags are the properties it lists whose values are sets of
	// scalars (the intersection over its schemas), by name.
	tags map[string]scalarSt
}

// scalarSt is a set of scalar values as canonical texts.
type scalarSt = map[string]bool

// maxProofSteps bounds the steps of the proofs of one oneOf: each branch
// pair compares tags and value sets, which the schema may make large.
const maxProofSteps = 1 << 20

// oneOfTypes proves the branches of s's oneOf exclusive, type by type,
// among the types rest (the Node around the oneOf) allows. It returns
// the types a value may have, having left out those where two branches
// take every value, and each branch's possible types. Where two
// branches may both hold for a value of a type that remains, overlaps
// lists them (each pair both ways): the branch is then taken without the
// others' values (see oneOf).
func (c *compiler) oneOfTypes(s *Schema, rest *Node) (typeBits, []typeBits, [][]int, error) {
	list := s.OneOf
	ptr := s.Ptr
	if len(list) > MaxOneOfBranches {
		return 0, nil, nil, c.limitf(ptr, "oneOf", limitOneOf, "%d branches, more than the limit of %d (MaxOneOfBranches)", len(list), MaxOneOfBranches)
	}
	info := make([]branchInfo, len(list))
	types := make([]typeBits, len(list))
	steps := 0
	for i, b := range list {
		types[i] = c.z.possibleTypes(b)
		info[i] = branchInfo{types: types[i]}
		n, err := c.z.normalize([]*Schema{b})
		if err != nil {
			continue
		}
		info[i].n = n
		if n.Unsat != nil {
			info[i].types, types[i] = 0, 0
			continue
		}
		info[i].types &= n.Types
		info[i].total = n.totalTypes()
		if n.HasEnum {
			if vals, ok := scalarSet(n.Enum); ok {
				info[i].scalars = setOf(vals)
				steps += len(vals)
			}
		}
		for _, part := range n.Obj {
			for _, p := range part.Props {
				steps++
				if _, done := info[i].tags[p.Name]; done {
					continue
				}
				if set, ok := c.propScalars(n, p.Name); ok {
					if info[i].tags == nil {
						info[i].tags = map[string]scalarSt{}
					}
					info[i].tags[p.Name] = set
					steps += len(set)
				}
			}
		}
	}
	allowed := rest.Types
	keep := typeBits(0)
	overlaps := make([][]int, len(list))
	for t := tNull; t <= tFraction; t <<= 1 {
		if allowed&t == 0 {
			continue
		}
		pairs := overlapsOn(info, t, &steps)
		if steps > maxProofSteps {
			return 0, nil, nil, c.limitf(ptr, "oneOf", limitWork, "proving the branches exclusive would take more than %d steps", maxProofSteps)
		}
		total := 0
		for _, b := range info {
			if b.total&t != 0 {
				total++
			}
		}
		if len(pairs) > 0 && total >= 2 {
			continue // every value of type t satisfies two branches: none is valid
		}
		keep |= t
		for _, p := range pairs {
			for _, x := range [][2]int{p, {p[1], p[0]}} {
				if !slices.Contains(overlaps[x[0]], x[1]) {
					overlaps[x[0]] = append(overlaps[x[0]], x[1])
				}
			}
		}
	}
	return keep, types, overlaps, nil
}

// overlapsOn returns the pairs of branches a value of type t may
// satisfy both of.
func overlapsOn(info []branchInfo, t typeBits, steps *int) [][2]int {
	var out [][2]int
	for i := range info {
		for j := i + 1; j < len(info); j++ {
			if !disjointOn(&info[i], &info[j], t, steps) {
				out = append(out, [2]int{i, j})
			}
		}
	}
	return out
}

// propScalars returns the values property name may take under the
// object schemas of n that list it, when they are sets of scalars (their
// intersection).
func (c *compiler) propScalars(n *Node, name string) (scalarSt, bool) {
	var out scalarSt
	for _, part := range n.Obj {
		ps := part.prop(name)
		if ps == nil {
			continue
		}
		pn, err := c.z.normalize([]*Schema{ps})
		if err != nil || pn.Unsat != nil || !pn.HasEnum {
			continue
		}
		vals, ok := scalarSet(pn.Enum)
		if !ok {
			continue
		}
		set := setOf(vals)
		if out == nil {
			out = set
			continue
		}
		for v := range out {
			if !set[v] {
				delete(out, v)
			}
		}
	}
	return out, out != nil
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
	if t != tObject || a.n == nil || b.n == nil {
		return false
	}
	// Objects only: one requires a property the other forbids, or gives
	// it values the other does not (a tag).
	if excludes(a.n, b.n) || excludes(b.n, a.n) {
		return true
	}
	for _, x := range [][2]*branchInfo{{a, b}, {b, a}} {
		for _, name := range x[0].n.required() {
			*steps++
			va, okA := x[0].tags[name]
			vb, okB := x[1].tags[name]
			if okA && okB && !overlaps(va, vb, steps) {
				return true
			}
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

// totalTypes returns the types all of whose values n takes: those its
// types allow that none of its other keywords constrain (a subset: a
// keyword is taken to constrain whatever its value).
func (n *Node) totalTypes() typeBits {
	if n.Unsat != nil || n.HasEnum || len(n.AnyOf)+len(n.OneOf)+len(n.Not)+len(n.If) > 0 {
		return 0
	}
	bits := n.Types
	if n.Num.Lo != nil || n.Num.Hi != nil || len(n.Num.MultipleOf) > 0 {
		bits &^= tInteger | tFraction
	}
	if n.Str.MinLen > 0 || n.Str.MaxLen >= 0 || len(n.Str.Patterns)+len(n.Str.Formats) > 0 {
		bits &^= tString
	}
	if len(n.Arr) > 0 {
		bits &^= tArray
	}
	if len(n.Obj) > 0 {
		bits &^= tObject
	}
	return bits
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

// required returns the names n's object schemas require.
func (n *Node) required() []string {
	var out []string
	for _, s := range n.Obj {
		for _, r := range s.Required {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// excludes reports whether a forbids a property b requires: one of a's
// object schemas takes no additional properties, no pattern ones, and
// does not list it.
func excludes(a, b *Node) bool {
	for _, s := range a.Obj {
		if s.AdditionalProps == nil || !s.AdditionalProps.False || len(s.PatternProps) > 0 {
			continue
		}
		for _, name := range b.required() {
			if s.prop(name) == nil {
				return true
			}
		}
	}
	return false
}

// scalarSet returns the values of an enum made only of strings, booleans
// and null (numbers compare by value, objects regardless of order: left
// out), as canonical text.
func scalarSet(vals []any) ([]string, bool) {
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
