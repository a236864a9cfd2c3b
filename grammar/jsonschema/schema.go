package jsonschema

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// The typed form: each schema object of a document is decoded once (see
// parse.go) into a Schema, whose keywords are typed fields. Its $ref
// is linked to the Schema it names (resolve.go), so that the stages after
// it never look at a map again: intersection (normalize.go) folds allOf,
// the siblings of $ref and a combinator's siblings into one Node, and
// lowering (lower.go) writes the Node as a grammar.

// kw is a keyword that can constrain instances.
type kw uint8

// The assertion keywords the typed form holds.
const (
	kwType kw = iota
	kwEnum
	kwConst
	kwRef
	kwAllOf
	kwAnyOf
	kwOneOf
	kwNot
	kwIf
	kwThen
	kwElse
	kwMinimum
	kwMaximum
	kwMultipleOf
	kwMinLength
	kwMaxLength
	kwPattern
	kwFormat
	kwItems // items after the prefix (items, or additionalItems after an items array)
	kwPrefixItems
	kwMinItems
	kwMaxItems
	kwUniqueItems
	kwContains
	kwMinContains
	kwMaxContains
	kwUnevaluatedItems
	kwProperties
	kwPatternProperties
	kwAdditionalProperties
	kwPropertyNames
	kwRequired
	kwMinProperties
	kwMaxProperties
	kwDependentRequired
	kwDependentSchemas
	kwUnevaluatedProperties
	kwNullable
	// Internal keywords, which only negation writes: a string must not
	// match a pattern, nor a format; a value must be none of some values.
	kwNotPattern
	kwNotFormat
	kwNotEnum
	kwCount
)

var kwNames = [kwCount]string{
	"type", "enum", "const", "$ref", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
	"minimum", "maximum", "multipleOf", "minLength", "maxLength", "pattern", "format",
	"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains", "minContains", "maxContains", "unevaluatedItems",
	"properties", "patternProperties", "additionalProperties", "propertyNames", "required", "minProperties", "maxProperties",
	"dependentRequired", "dependentSchemas", "unevaluatedProperties", "nullable", "¬pattern", "¬format", "¬enum",
}

func (k kw) String() string { return kwNames[k] }

// kwSet is a set of keywords.
type kwSet uint64

func (s kwSet) has(k kw) bool { return s&(1<<k) != 0 }

// Keywords by the instance type they constrain.
const (
	kwsNumber kwSet = 1<<kwMinimum | 1<<kwMaximum | 1<<kwMultipleOf
	kwsString kwSet = 1<<kwMinLength | 1<<kwMaxLength | 1<<kwPattern | 1<<kwFormat | 1<<kwNotPattern | 1<<kwNotFormat
	kwsArray  kwSet = 1<<kwItems | 1<<kwPrefixItems | 1<<kwMinItems | 1<<kwMaxItems | 1<<kwUniqueItems |
		1<<kwContains | 1<<kwMinContains | 1<<kwMaxContains | 1<<kwUnevaluatedItems
	kwsObject kwSet = 1<<kwProperties | 1<<kwPatternProperties | 1<<kwAdditionalProperties | 1<<kwPropertyNames |
		1<<kwRequired | 1<<kwMinProperties | 1<<kwMaxProperties | 1<<kwDependentRequired | 1<<kwDependentSchemas |
		1<<kwUnevaluatedProperties
	kwsCombinators kwSet = 1<<kwAllOf | 1<<kwAnyOf | 1<<kwOneOf | 1<<kwNot | 1<<kwIf | 1<<kwThen | 1<<kwElse
)

// Schema is one schema of a document in typed form. The zero value
// (with a Ptr) is the schema true: every value.
type Schema struct {
	Ptr   string // its location: "#/properties/a", or "URL#/..." in a loaded document
	False bool   // the schema false: no value
	Has   kwSet  // the assertion keywords it writes (after Options.Relax)

	Types typeBits // type (and nullable); tAll when absent
	Enum  []any    // enum values; const is an enum of one (both: Const too)
	Const []any    // const beside enum, as an enum of one; nil otherwise

	Ref    string  // $ref as an absolute URI
	Target *Schema // what Ref names, once linked

	AllOf, AnyOf, OneOf []*Schema
	Not                 *Schema
	If, Then, Else      *Schema

	Min, Max   *schemaBound // the tighter of minimum and exclusiveMinimum; the same above
	MultipleOf *big.Rat

	MinLength, MaxLength int // MaxLength -1: none
	Pattern              string
	Format               string

	Prefix                   []*Schema // prefixItems, or items as an array (older drafts)
	Items                    *Schema   // the items after the prefix; nil: any
	MinItems, MaxItems       int       // MaxItems -1: none
	Unique                   bool
	Contains                 *Schema
	MinContains, MaxContains int // MinContains 1 unless written; MaxContains -1: none
	UnevaluatedItems         *Schema

	Props            []Prop        // properties, in the order the schema writes them
	PatternProps     []PatternProp // patternProperties, sorted by pattern
	AdditionalProps  *Schema       // nil: any
	PropertyNames    *Schema
	Required         []string
	MinProps         int
	MaxProps         int // -1: none
	DepRequired      []Dependent
	DepSchemas       []DependentSchema
	UnevaluatedProps *Schema

	// Written by negation only (see negate): the string must not match
	// NotPattern nor NotFormat; the value must be none of NotEnum.
	NotPattern string
	NotFormat  string
	NotEnum    []any

	// synthetic marks a schema reins wrote (a negation, a branch taken
	// without others), not the document.
	synthetic bool
	// propAt indexes a long Props by name (see prop): each name's first
	// place among Props[:propsIndexed].
	propAt       map[string]int
	propsIndexed int

	// Unsupported lists assertion keywords the typed form does not hold
	// ($dynamicRef, $recursiveRef, discriminator): a schema with any is
	// refused where it must be compiled.
	Unsupported []string
}

// Prop is one entry of properties.
type Prop struct {
	Name   string
	Schema *Schema
}

// PatternProp is one entry of patternProperties.
type PatternProp struct {
	Pattern string
	Schema  *Schema
}

// Dependent is one entry of dependentRequired (or of draft 4 to 7's
// dependencies as a list of names).
type Dependent struct {
	Name     string
	Required []string
}

// DependentSchema is one entry of dependentSchemas (or of dependencies
// as a schema).
type DependentSchema struct {
	Name    string
	Schema  *Schema
	Keyword string // dependentSchemas or dependencies
}

// isTrue reports whether s constrains nothing.
func (s *Schema) isTrue() bool {
	return !s.False && s.Has == 0 && len(s.Unsupported) == 0
}

// prop returns the schema properties gives name, or nil. A long Props
// is looked up by an index, built at the first lookup and extended at
// each lookup after Props has grown (Props only ever grows by appends):
// an object of many properties compiles in time linear in them, where
// looking through the list for each of its names took quadratic time
// (15,000 properties, 0.6 s of their compile).
func (s *Schema) prop(name string) *Schema {
	if len(s.Props) <= shortNames {
		for _, p := range s.Props {
			if p.Name == name {
				return p.Schema
			}
		}
		return nil
	}
	if s.propAt == nil {
		s.propAt = make(map[string]int, len(s.Props))
	}
	for ; s.propsIndexed < len(s.Props); s.propsIndexed++ {
		if _, dup := s.propAt[s.Props[s.propsIndexed].Name]; !dup {
			s.propAt[s.Props[s.propsIndexed].Name] = s.propsIndexed
		}
	}
	if i, ok := s.propAt[name]; ok {
		return s.Props[i].Schema
	}
	return nil
}

// String is a compact, deterministic dump of s: its keywords in a fixed
// order, subschemas nested, a $ref as its target's location (never
// followed, so that a recursive schema prints finitely). Tests compare
// it with golden files.
func (s *Schema) String() string {
	var b strings.Builder
	s.dump(&b)
	return b.String()
}

func (s *Schema) dump(b *strings.Builder) {
	if s == nil {
		b.WriteString("nil")
		return
	}
	if s.False {
		b.WriteString("false")
		return
	}
	if s.isTrue() {
		b.WriteString("true")
		return
	}
	b.WriteString("{")
	sep := ""
	field := func(name string) {
		b.WriteString(sep + name)
		sep = " "
	}
	sub := func(name string, x *Schema) {
		if x != nil {
			field(name + ":")
			x.dump(b)
		}
	}
	list := func(name string, xs []*Schema) {
		if xs != nil {
			field(name + "[")
			for i, x := range xs {
				if i > 0 {
					b.WriteString(" ")
				}
				x.dump(b)
			}
			b.WriteString("]")
		}
	}
	if s.Has.has(kwType) || s.Has.has(kwNullable) {
		field("type:" + s.Types.names())
	}
	if s.Has.has(kwEnum) || s.Has.has(kwConst) {
		field("enum:" + valuesText(s.Enum))
	}
	if s.Const != nil {
		field("const:" + valuesText(s.Const))
	}
	if s.Ref != "" {
		to := "?"
		if s.Target != nil {
			to = s.Target.Ptr
		}
		field("$ref:" + to)
	}
	list("allOf", s.AllOf)
	list("anyOf", s.AnyOf)
	list("oneOf", s.OneOf)
	sub("not", s.Not)
	sub("if", s.If)
	sub("then", s.Then)
	sub("else", s.Else)
	if s.Min != nil {
		field(s.Min.dump(true))
	}
	if s.Max != nil {
		field(s.Max.dump(false))
	}
	if s.MultipleOf != nil {
		field("multipleOf:" + s.MultipleOf.RatString())
	}
	if s.Has.has(kwMinLength) || s.Has.has(kwMaxLength) {
		field("length:" + rangeText(s.MinLength, s.MaxLength))
	}
	if s.Has.has(kwPattern) {
		field("pattern:" + strconv.Quote(s.Pattern))
	}
	if s.Has.has(kwFormat) {
		field("format:" + s.Format)
	}
	list("prefix", s.Prefix)
	sub("items", s.Items)
	if s.Has.has(kwMinItems) || s.Has.has(kwMaxItems) {
		field("count:" + rangeText(s.MinItems, s.MaxItems))
	}
	if s.Unique {
		field("unique")
	}
	if s.Contains != nil {
		sub("contains", s.Contains)
		field("contains:" + rangeText(s.MinContains, s.MaxContains))
	}
	sub("unevaluatedItems", s.UnevaluatedItems)
	if s.Props != nil {
		field("props{")
		for i, p := range s.Props {
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString(strconv.Quote(p.Name) + ":")
			p.Schema.dump(b)
		}
		b.WriteString("}")
	}
	if s.PatternProps != nil {
		field("patternProps{")
		for i, p := range s.PatternProps {
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString(strconv.Quote(p.Pattern) + ":")
			p.Schema.dump(b)
		}
		b.WriteString("}")
	}
	sub("additional", s.AdditionalProps)
	sub("propertyNames", s.PropertyNames)
	if s.Required != nil {
		field("required" + namesText(s.Required))
	}
	if s.Has.has(kwMinProperties) || s.Has.has(kwMaxProperties) {
		field("properties:" + rangeText(s.MinProps, s.MaxProps))
	}
	for _, d := range s.DepRequired {
		field("dependent:" + strconv.Quote(d.Name) + namesText(d.Required))
	}
	for _, d := range s.DepSchemas {
		sub("dependentSchema:"+strconv.Quote(d.Name), d.Schema)
	}
	sub("unevaluatedProperties", s.UnevaluatedProps)
	if s.Has.has(kwNotPattern) {
		field("¬pattern:" + strconv.Quote(s.NotPattern))
	}
	if s.Has.has(kwNotFormat) {
		field("¬format:" + s.NotFormat)
	}
	if s.Has.has(kwNotEnum) {
		field("¬enum:" + valuesText(s.NotEnum))
	}
	for _, k := range s.Unsupported {
		field("unsupported:" + k)
	}
	b.WriteString("}")
}

// rangeText writes a count range: "2..", "2..5".
func rangeText(lo, hi int) string {
	if hi < 0 {
		return strconv.Itoa(lo) + ".."
	}
	return strconv.Itoa(lo) + ".." + strconv.Itoa(hi)
}

func namesText(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return "[" + strings.Join(q, " ") + "]"
}

// valuesText writes JSON values compactly, object keys sorted.
func valuesText(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		b, err := json.Marshal(v)
		if err != nil {
			parts[i] = fmt.Sprint(v)
			continue
		}
		parts[i] = string(b)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// dump writes a bound: "≥1", ">1" (lower) or "≤1", "<1".
func (b *schemaBound) dump(lower bool) string {
	op := map[[2]bool]string{{true, false}: "≥", {true, true}: ">", {false, false}: "≤", {false, true}: "<"}[[2]bool{lower, b.strict}]
	return op + b.v.RatString()
}

// names writes a set of types.
func (t typeBits) names() string {
	var out []string
	for _, n := range []struct {
		bit  typeBits
		name string
	}{{tNull, "null"}, {tBoolean, "boolean"}, {tObject, "object"}, {tArray, "array"}, {tString, "string"}} {
		if t&n.bit != 0 {
			out = append(out, n.name)
		}
	}
	switch t & (tInteger | tFraction) {
	case tInteger | tFraction:
		out = append(out, "number")
	case tInteger:
		out = append(out, "integer")
	case tFraction:
		out = append(out, "fraction")
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "|")
}

// sortedSchemas returns xs sorted by location, without repeats.
func sortedSchemas(xs []*Schema) []*Schema {
	out := slices.Clone(xs)
	slices.SortFunc(out, func(a, b *Schema) int { return strings.Compare(a.Ptr, b.Ptr) })
	return slices.CompactFunc(out, func(a, b *Schema) bool { return a == b })
}
