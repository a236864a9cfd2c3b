package jsonschema

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// The intersection stage: a conjunction of schemas (a schema with its
// allOf branches, the target of its $ref, and, when a combinator is
// distributed, the branch taken) becomes one Node: the instance types
// that remain, the enum values all of them allow, the numeric and string
// bounds folded exactly, and the schemas whose array and object
// keywords and combinators still apply. A conjunction no value satisfies
// is a Node whose Unsat says why, at the pointer of the keyword that
// empties it, rather than an error: an optional property or an anyOf
// branch that is Unsat is dropped.

// Unsat says why no value satisfies a Node.
type Unsat struct {
	Ptr, Keyword, Reason string
}

func (u *Unsat) String() string {
	if u.Keyword != "" {
		return u.Ptr + "/" + u.Keyword + ": " + u.Reason
	}
	return u.Ptr + ": " + u.Reason
}

// Node is a conjunction of schemas in normal form.
type Node struct {
	Ptr     string    // the first schema's location: errors and rules name it
	Schemas []*Schema // the schemas intersected, allOf and $refs followed, each once
	Unsat   *Unsat    // non-nil: no value satisfies them
	ViaRef  bool      // a $ref was followed: lowered as a rule, so that recursion stays finite

	Types   typeBits
	HasEnum bool
	Enum    []any    // with HasEnum: the values every enum and const allows, as the first writes them
	EnumAt  []string // the location of each value of Enum
	EnumPtr string   // the schema whose enum Enum is
	EnumKw  string   // its keyword: "enum" or "const"
	NotEnum []any    // values the value must not be (from negation)

	Num numFacet
	Str strFacet
	// typeWhy says why a type was left out by the bounds (for the error
	// when no type remains).
	typeWhy map[typeBits]*Unsat

	// The schemas whose keywords of each kind apply.
	Arr, Obj              []*Schema
	AnyOf, OneOf, Not, If []*Schema
	done                  []*Schema // schemas a combinator of which was distributed
	// presence is a oneOf of required lists the object must meet (see
	// presenceOneOf).
	presence [][]string
	// depsDone are the schemas whose dependentSchemas were distributed.
	depsDone []*Schema
}

// numFacet is the numeric keywords folded: the tightest bounds.
type numFacet struct {
	Lo, Hi     *numBound
	MultipleOf []*big.Rat
	Ptr        string // where a multipleOf was written
}

// strFacet is the string keywords folded.
type strFacet struct {
	MinLen, MaxLen int      // MaxLen -1: none
	Patterns       []string // distinct
	PatternPtrs    []string
	Formats        []string // distinct
	FormatPtrs     []string
	// NotPatterns and NotFormats are what the string must not match.
	NotPatterns, NotFormats []string
}

// String is a compact, deterministic dump of the Node, for golden files.
func (n *Node) String() string {
	var b strings.Builder
	b.WriteString("node " + n.Ptr)
	if n.Unsat != nil {
		b.WriteString(" unsat(" + n.Unsat.String() + ")")
		return b.String()
	}
	ptrs := make([]string, len(n.Schemas))
	for i, s := range n.Schemas {
		ptrs[i] = s.Ptr
	}
	b.WriteString(" of[" + strings.Join(ptrs, " ") + "]")
	if n.ViaRef {
		b.WriteString(" ref")
	}
	b.WriteString(" type:" + n.Types.names())
	if n.HasEnum {
		b.WriteString(" enum:" + valuesText(n.Enum))
	}
	if n.Types&(tInteger|tFraction) != 0 {
		if n.Num.Lo != nil {
			b.WriteString(" " + (&schemaBound{v: n.Num.Lo.v, strict: n.Num.Lo.strict}).dump(true))
		}
		if n.Num.Hi != nil {
			b.WriteString(" " + (&schemaBound{v: n.Num.Hi.v, strict: n.Num.Hi.strict}).dump(false))
		}
		for _, m := range n.Num.MultipleOf {
			b.WriteString(" multipleOf:" + m.RatString())
		}
	}
	if n.Types&tString != 0 {
		if n.Str.MinLen > 0 || n.Str.MaxLen >= 0 {
			b.WriteString(" length:" + rangeText(n.Str.MinLen, n.Str.MaxLen))
		}
		for _, p := range n.Str.Patterns {
			b.WriteString(" pattern:" + strconv.Quote(p))
		}
		for _, f := range n.Str.Formats {
			b.WriteString(" format:" + f)
		}
		for _, p := range n.Str.NotPatterns {
			b.WriteString(" ¬pattern:" + strconv.Quote(p))
		}
		for _, f := range n.Str.NotFormats {
			b.WriteString(" ¬format:" + f)
		}
	}
	if len(n.NotEnum) > 0 {
		b.WriteString(" ¬enum:" + valuesText(n.NotEnum))
	}
	for _, l := range []struct {
		name string
		xs   []*Schema
	}{{"array", n.Arr}, {"object", n.Obj}, {"anyOf", n.AnyOf}, {"oneOf", n.OneOf}, {"not", n.Not}, {"if", n.If}} {
		if len(l.xs) > 0 {
			ps := make([]string, len(l.xs))
			for i, s := range l.xs {
				ps[i] = s.Ptr
			}
			b.WriteString(" " + l.name + "[" + strings.Join(ps, " ") + "]")
		}
	}
	return b.String()
}

// normalizer intersects conjunctions of schemas.
type normalizer struct {
	p    *parser
	work int // steps of flattening and intersecting, against maxMergeWork
	// types memoizes possibleTypes by schema; typesBusy marks those being
	// computed (a cycle answers every type).
	types     map[*Schema]typeBits
	typesBusy map[*Schema]bool
}

// Merging expands references in place, so its work is bounded apart
// from the schema's size.
const (
	// maxMergeWork bounds the steps of all intersections of one
	// compilation: each schema flattened, each keyword folded.
	maxMergeWork = 1 << 20
	// maxMergeDepth bounds how deeply flattening nests: each allOf
	// branch and each $ref followed in place is a level.
	maxMergeDepth = 256
)

func (z *normalizer) workError(ptr, k string) error {
	return &Error{Pointer: ptr, Keyword: k, Limit: limitWork, Msg: fmt.Sprintf("intersecting allOf branches, references and the siblings of combinators would take more than %d steps", maxMergeWork)}
}

// flatten returns the schemas the conjunction xs stands for: each
// schema, the branches of its allOf and the target of its $ref, each
// once, in the order they are first met. A schema that reaches itself
// in place (an allOf or a $ref through itself) is refused: no value can
// be checked against it, and validators report a loop.
func (z *normalizer) flatten(xs []*Schema) ([]*Schema, bool, error) {
	var out []*Schema
	seen := map[*Schema]bool{}
	// path holds the schemas being visited, each with the keyword by
	// which the visit goes on from it.
	type step struct {
		s *Schema
		k string
	}
	var path []step
	viaRef := false
	var visit func(s *Schema) error
	visit = func(s *Schema) error {
		for _, st := range path {
			if st.s == s {
				return &Error{Pointer: s.Ptr, Keyword: st.k, Limit: limitWork, Msg: "the schema reaches itself through allOf or $ref: no value can be checked against it"}
			}
		}
		if seen[s] {
			return nil
		}
		if len(path) > maxMergeDepth {
			top := path[len(path)-1]
			return &Error{Pointer: top.s.Ptr, Keyword: top.k, Limit: limitWork, Msg: fmt.Sprintf("allOf branches and references nest more than %d deep when intersected", maxMergeDepth)}
		}
		if z.work++; z.work > maxMergeWork {
			return z.workError(s.Ptr, "")
		}
		seen[s] = true
		out = append(out, s)
		path = append(path, step{s, ""})
		defer func() { path = path[:len(path)-1] }()
		if s.Ref != "" {
			t, err := z.p.target(s)
			if err != nil {
				return err
			}
			viaRef = true
			path[len(path)-1].k = "$ref"
			if err := visit(t); err != nil {
				return err
			}
		}
		for _, a := range s.AllOf {
			path[len(path)-1].k = "allOf"
			if err := visit(a); err != nil {
				return err
			}
		}
		return nil
	}
	for _, s := range xs {
		if err := visit(s); err != nil {
			return nil, false, err
		}
	}
	return out, viaRef, nil
}

// key names a flattened conjunction: the locations of the schemas that
// constrain, sorted.
func conjKey(xs []*Schema) string {
	var ptrs []string
	for _, s := range xs {
		if s.Has&^(1<<kwRef|1<<kwAllOf) != 0 || s.False || len(s.Unsupported) > 0 {
			ptrs = append(ptrs, s.Ptr)
		}
	}
	slices.Sort(ptrs)
	return strings.Join(slices.Compact(ptrs), "\x00")
}

// normalize intersects the conjunction xs.
func (z *normalizer) normalize(xs []*Schema) (*Node, error) {
	flat, viaRef, err := z.flatten(xs)
	if err != nil {
		return nil, err
	}
	n := &Node{Ptr: xs[0].Ptr, ViaRef: viaRef, Types: tAll, Str: strFacet{MaxLen: -1}}
	for _, s := range flat {
		if err := z.add(n, s); err != nil {
			return nil, err
		}
	}
	n.settle()
	return n, nil
}

// intersect returns the conjunction of n and the schemas xs (a branch
// taken from one of n's combinators): n's schemas and xs, flattened.
func (z *normalizer) intersect(n *Node, xs []*Schema) (*Node, error) {
	flat, viaRef, err := z.flatten(xs)
	if err != nil {
		return nil, err
	}
	m := *n
	m.Schemas = slices.Clone(n.Schemas)
	m.Enum, m.EnumAt = slices.Clone(n.Enum), slices.Clone(n.EnumAt)
	m.NotEnum = slices.Clone(n.NotEnum)
	m.Str.NotPatterns, m.Str.NotFormats = slices.Clone(n.Str.NotPatterns), slices.Clone(n.Str.NotFormats)
	m.Num.MultipleOf = slices.Clone(n.Num.MultipleOf)
	m.Str.Patterns, m.Str.PatternPtrs = slices.Clone(n.Str.Patterns), slices.Clone(n.Str.PatternPtrs)
	m.Str.Formats, m.Str.FormatPtrs = slices.Clone(n.Str.Formats), slices.Clone(n.Str.FormatPtrs)
	m.Arr, m.Obj = slices.Clone(n.Arr), slices.Clone(n.Obj)
	m.AnyOf, m.OneOf, m.Not, m.If = slices.Clone(n.AnyOf), slices.Clone(n.OneOf), slices.Clone(n.Not), slices.Clone(n.If)
	m.ViaRef = viaRef
	for _, s := range flat {
		if slices.Contains(m.done, s) {
			return nil, &Error{Pointer: xs[0].Ptr, Keyword: "$ref", Limit: limitWork, Msg: fmt.Sprintf("%s reaches itself in place through a combinator: no value can be checked against it", s.Ptr)}
		}
		if slices.Contains(m.Schemas, s) {
			continue
		}
		if err := z.add(&m, s); err != nil {
			return nil, err
		}
	}
	m.settle()
	return &m, nil
}

// without returns n with the combinator k (anyOf, oneOf, not or if) of
// schema s taken away: it is being distributed. s is remembered as
// done, so that a branch that brings s back (a loop in place) is
// refused.
func (n *Node) without(k kw, s *Schema) *Node {
	m := *n
	drop := func(l []*Schema) []*Schema {
		return slices.DeleteFunc(slices.Clone(l), func(x *Schema) bool { return x == s })
	}
	switch k {
	case kwAnyOf:
		m.AnyOf = drop(n.AnyOf)
	case kwOneOf:
		m.OneOf = drop(n.OneOf)
	case kwNot:
		m.Not = drop(n.Not)
	case kwIf:
		m.If = drop(n.If)
	}
	m.done = append(slices.Clone(n.done), s)
	return &m
}

// unsat marks n as satisfied by no value, keeping the first reason.
func (n *Node) unsat(ptr, k, format string, args ...any) {
	if n.Unsat == nil {
		n.Unsat = &Unsat{Ptr: ptr, Keyword: k, Reason: fmt.Sprintf(format, args...)}
	}
}

// drop leaves the types t out of n, saying why.
func (n *Node) drop(t typeBits, ptr, k, format string, args ...any) {
	if n.Types&t == 0 {
		return
	}
	n.Types &^= t
	if n.typeWhy == nil {
		n.typeWhy = map[typeBits]*Unsat{}
	}
	n.typeWhy[t] = &Unsat{Ptr: ptr, Keyword: k, Reason: fmt.Sprintf(format, args...)}
}

// add folds the keywords of the schema s into n.
func (z *normalizer) add(n *Node, s *Schema) error {
	if z.work++; z.work > maxMergeWork {
		return z.workError(s.Ptr, "")
	}
	n.Schemas = append(n.Schemas, s)
	if s.False {
		n.unsat(s.Ptr, "", "the schema false allows no value")
		return nil
	}
	if len(s.Unsupported) > 0 {
		return keywordError(s.Ptr, s.Unsupported[0], "keyword %s is not supported", s.Unsupported[0])
	}
	if s.Has.has(kwType) || s.Has.has(kwNullable) {
		before := n.Types
		n.Types &= s.Types
		if n.Types == 0 && before != 0 {
			n.unsat(s.Ptr, "type", "no type satisfies all the schemas intersected")
		}
	}
	for i, e := range [][]any{s.Enum, s.Const} {
		if e == nil {
			continue
		}
		if !n.HasEnum {
			n.HasEnum, n.Enum, n.EnumPtr = true, slices.Clone(e), s.Ptr
			n.EnumAt = make([]string, len(e))
			n.EnumKw = "enum"
			if i == 1 || !s.Has.has(kwEnum) {
				n.EnumKw = "const"
			}
			for j := range e {
				n.EnumAt[j] = s.Ptr + "/const"
				if n.EnumKw == "enum" {
					n.EnumAt[j] = s.Ptr + "/enum/" + strconv.Itoa(j)
				}
			}
			continue
		}
		var keep []int
		for j, v := range n.Enum {
			for _, w := range e {
				if z.work++; jsonEqual(v, w) {
					keep = append(keep, j)
					break
				}
			}
		}
		enum, at := make([]any, len(keep)), make([]string, len(keep))
		for k, j := range keep {
			enum[k], at[k] = n.Enum[j], n.EnumAt[j]
		}
		n.Enum, n.EnumAt = enum, at
		if z.work > maxMergeWork {
			return z.workError(s.Ptr, "enum")
		}
	}
	// Numbers: the tightest bounds.
	if s.Min != nil {
		n.Num.Lo = tighterNum(n.Num.Lo, s.Min.numBound(), true)
	}
	if s.Max != nil {
		n.Num.Hi = tighterNum(n.Num.Hi, s.Max.numBound(), false)
	}
	if s.MultipleOf != nil && !slices.ContainsFunc(n.Num.MultipleOf, func(r *big.Rat) bool { return r.Cmp(s.MultipleOf) == 0 }) {
		n.Num.MultipleOf = append(n.Num.MultipleOf, s.MultipleOf)
		n.Num.Ptr = s.Ptr
	}
	// Strings.
	if s.Has.has(kwMinLength) {
		n.Str.MinLen = max(n.Str.MinLen, s.MinLength)
	}
	if s.Has.has(kwMaxLength) && (n.Str.MaxLen < 0 || s.MaxLength < n.Str.MaxLen) {
		n.Str.MaxLen = s.MaxLength
	}
	if s.Has.has(kwPattern) && !slices.Contains(n.Str.Patterns, s.Pattern) {
		n.Str.Patterns = append(n.Str.Patterns, s.Pattern)
		n.Str.PatternPtrs = append(n.Str.PatternPtrs, s.Ptr)
	}
	if s.Has.has(kwFormat) && !slices.Contains(n.Str.Formats, s.Format) {
		n.Str.Formats = append(n.Str.Formats, s.Format)
		n.Str.FormatPtrs = append(n.Str.FormatPtrs, s.Ptr)
	}
	if s.Has.has(kwNotPattern) && !slices.Contains(n.Str.NotPatterns, s.NotPattern) {
		n.Str.NotPatterns = append(n.Str.NotPatterns, s.NotPattern)
	}
	if s.Has.has(kwNotFormat) && !slices.Contains(n.Str.NotFormats, s.NotFormat) {
		n.Str.NotFormats = append(n.Str.NotFormats, s.NotFormat)
	}
	if s.Has.has(kwNotEnum) {
		n.NotEnum = append(n.NotEnum, s.NotEnum...)
	}
	if s.Has&kwsArray != 0 {
		n.Arr = append(n.Arr, s)
	}
	if s.Has&kwsObject != 0 {
		n.Obj = append(n.Obj, s)
	}
	if s.AnyOf != nil {
		n.AnyOf = append(n.AnyOf, s)
	}
	if s.OneOf != nil {
		n.OneOf = append(n.OneOf, s)
	}
	if s.Not != nil {
		n.Not = append(n.Not, s)
	}
	if s.If != nil {
		n.If = append(n.If, s)
	}
	return nil
}

// settle leaves out the types whose folded bounds no value meets, and
// marks n Unsat when no type remains.
func (n *Node) settle() {
	if n.Unsat != nil {
		return
	}
	if lo, hi := n.Num.Lo, n.Num.Hi; lo != nil && hi != nil {
		if c := lo.v.Cmp(hi.v); c > 0 || (c == 0 && (lo.strict || hi.strict)) {
			n.drop(tInteger|tFraction, n.Ptr, "maximum", "no number lies between the bounds")
		}
	}
	if n.Str.MaxLen >= 0 && n.Str.MaxLen < n.Str.MinLen {
		n.drop(tString, n.Ptr, "maxLength", "below minLength: no string fits")
	}
	if n.HasEnum && len(n.Enum) == 0 {
		n.unsat(n.EnumPtr, "enum", "no value of enum satisfies the schema")
	}
	if n.Types == 0 {
		for _, t := range []typeBits{tInteger | tFraction, tString} {
			if u := n.typeWhy[t]; u != nil {
				n.unsat(u.Ptr, u.Keyword, "%s", u.Reason)
			}
		}
		n.unsat(n.Ptr, "type", "no type is possible")
	}
}

// tighterNum is the tighter of two lower (isMin) or upper bounds.
func tighterNum(a, b *numBound, isMin bool) *numBound {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	c := b.v.Cmp(a.v)
	if !isMin {
		c = -c
	}
	if c > 0 || (c == 0 && b.strict && !a.strict) {
		return b
	}
	return a
}

// jsonEqual reports whether two decoded JSON values are equal as JSON
// Schema compares them: numbers by value, objects whatever their order.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !jsonEqual(v, w) {
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
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		return ok && numbersEqual(x, y)
	}
	return a == b
}

// possibleTypes returns the instance types s can take: a superset, from
// type, nullable, enum and const, and its combinators (memoized; a
// schema met again while it is being computed answers every type).
func (z *normalizer) possibleTypes(s *Schema) typeBits {
	if t, ok := z.types[s]; ok {
		return t
	}
	if z.typesBusy[s] {
		return tAll
	}
	if z.types == nil {
		z.types, z.typesBusy = map[*Schema]typeBits{}, map[*Schema]bool{}
	}
	z.typesBusy[s] = true
	defer delete(z.typesBusy, s)
	t := s.Types
	if s.False {
		t = 0
	}
	for _, e := range [][]any{s.Enum, s.Const} {
		if e != nil {
			var vt typeBits
			for _, v := range e {
				vt |= valueType(v)
			}
			t &= vt
		}
	}
	if s.Ref != "" {
		if target, err := z.p.target(s); err == nil {
			t &= z.possibleTypes(target)
		}
	}
	for _, a := range s.AllOf {
		t &= z.possibleTypes(a)
	}
	for _, list := range [][]*Schema{s.AnyOf, s.OneOf} {
		if list != nil {
			var u typeBits
			for _, b := range list {
				u |= z.possibleTypes(b)
			}
			t &= u
		}
	}
	z.types[s] = t
	return t
}
