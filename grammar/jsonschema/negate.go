package jsonschema

import (
	"fmt"
	"strconv"

	"github.com/reins-go/reins/internal/jsonptr"
)

// Negation, for not, for if (a value that fails if takes else) and for
// an exact oneOf: the values a schema does not take, as a schema. A
// schema is a conjunction of its keywords, so its negation is the anyOf
// of each keyword's negation, and a keyword of one type fails only on
// values of that type: not {"minLength": 3} is {"type": "string",
// "maxLength": 2}. What plain keywords cannot say, internal ones do (a
// string must not match a pattern or a format; a value must be none of
// some values: NotPattern, NotFormat, NotEnum), which intersection and
// lowering take like the others. A keyword whose negation reins cannot
// write (multipleOf, uniqueItems, additionalProperties, ...) is an
// *Error naming it.

// negator builds negations, each once.
type negator struct {
	memo map[*Schema]*Schema
	busy map[*Schema]bool
	p    *parser
	n    int // synthetic schemas built, against maxSchemaNodes
}

// newSchema returns a synthetic schema at ptr that constrains nothing
// yet.
func newSchema(ptr string) *Schema {
	return &Schema{Ptr: ptr, Types: tAll, MaxLength: -1, MaxItems: -1, MaxProps: -1, MinContains: 1, MaxContains: -1, synthetic: true}
}

// typedSchema is a synthetic schema of the types t.
func typedSchema(ptr string, t typeBits) *Schema {
	s := newSchema(ptr)
	s.Types, s.Has = t, 1<<kwType
	return s
}

func falseSchema(ptr string) *Schema {
	s := newSchema(ptr)
	s.False = true
	return s
}

// negationError is a keyword whose negation reins cannot write.
type negationError struct {
	ptr, kw, why string
}

func (e *negationError) Error() string {
	return fmt.Sprintf("%s/%s: %s", e.ptr, e.kw, e.why)
}

// negate returns a schema that takes exactly the values s does not.
func (g *negator) negate(s *Schema) (*Schema, error) {
	if ns, ok := g.memo[s]; ok {
		return ns, nil
	}
	if g.busy[s] {
		return nil, &negationError{s.Ptr, "$ref", "the negation of a schema that refers to itself is not supported"}
	}
	if g.memo == nil {
		g.memo, g.busy = map[*Schema]*Schema{}, map[*Schema]bool{}
	}
	g.busy[s] = true
	defer delete(g.busy, s)
	ns, err := g.build(s)
	if err != nil {
		return nil, err
	}
	g.memo[s] = ns
	return ns, nil
}

func (g *negator) build(s *Schema) (*Schema, error) {
	at := s.Ptr + "/¬"
	if s.False {
		return newSchema(at), nil
	}
	if len(s.Unsupported) > 0 {
		return nil, &negationError{s.Ptr, s.Unsupported[0], "not supported"}
	}
	var alts []*Schema
	add := func(x *Schema) {
		if !x.False {
			alts = append(alts, x)
		}
	}
	if g.n += 8; g.n > maxSchemaNodes {
		return nil, &negationError{s.Ptr, "not", fmt.Sprintf("negations would take more than %d schemas", maxSchemaNodes)}
	}
	refuse := func(k kw) error {
		return &negationError{s.Ptr, k.String(), "its negation (under not, if or an overlapping oneOf) is not supported"}
	}
	of := func(k kw, t typeBits) *Schema {
		x := typedSchema(at+k.String(), t)
		return x
	}
	for k := kw(0); k < kwCount; k++ {
		if !s.Has.has(k) {
			continue
		}
		switch k {
		case kwType, kwNullable:
			if k == kwNullable && s.Has.has(kwType) {
				continue // with type, once
			}
			if t := tAll &^ s.Types; t != 0 {
				add(of(kwType, t))
			}
		case kwEnum, kwConst:
			if k == kwConst && s.Has.has(kwEnum) {
				x := newSchema(at + "const")
				x.Has, x.NotEnum = 1<<kwNotEnum, s.Const
				add(x)
				continue
			}
			x := newSchema(at + k.String())
			x.Has, x.NotEnum = 1<<kwNotEnum, s.Enum
			add(x)
		case kwNotEnum:
			x := newSchema(at + "enum")
			x.Has, x.Enum = 1<<kwEnum, s.NotEnum
			add(x)
		case kwMinimum:
			x := of(k, tInteger|tFraction)
			x.Has |= 1 << kwMaximum
			x.Max = &schemaBound{v: s.Min.v, text: s.Min.text, strict: !s.Min.strict}
			add(x)
		case kwMaximum:
			x := of(k, tInteger|tFraction)
			x.Has |= 1 << kwMinimum
			x.Min = &schemaBound{v: s.Max.v, text: s.Max.text, strict: !s.Max.strict}
			add(x)
		case kwMultipleOf, kwUniqueItems, kwAdditionalProperties, kwPatternProperties, kwPropertyNames,
			kwUnevaluatedItems, kwUnevaluatedProperties, kwOneOf:
			if k == kwAdditionalProperties && s.AdditionalProps.isTrue() ||
				k == kwPropertyNames && s.PropertyNames.isTrue() {
				continue
			}
			if k == kwPatternProperties {
				all := true
				for _, pp := range s.PatternProps {
					all = all && pp.Schema.isTrue()
				}
				if all {
					continue
				}
			}
			return nil, refuse(k)
		case kwMinLength:
			if s.MinLength > 0 {
				x := of(k, tString)
				x.Has |= 1 << kwMaxLength
				x.MaxLength = s.MinLength - 1
				add(x)
			}
		case kwMaxLength:
			x := of(k, tString)
			x.Has |= 1 << kwMinLength
			x.MinLength = s.MaxLength + 1
			add(x)
		case kwPattern:
			x := of(k, tString)
			x.Has |= 1 << kwNotPattern
			x.NotPattern = s.Pattern
			add(x)
		case kwNotPattern:
			x := of(k, tString)
			x.Has |= 1 << kwPattern
			x.Pattern = s.NotPattern
			add(x)
		case kwFormat:
			x := of(k, tString)
			x.Has |= 1 << kwNotFormat
			x.NotFormat = s.Format
			add(x)
		case kwNotFormat:
			x := of(k, tString)
			x.Has |= 1 << kwFormat
			x.Format = s.NotFormat
			add(x)
		case kwMinItems:
			if s.MinItems > 0 {
				x := of(k, tArray)
				x.Has |= 1 << kwMaxItems
				x.MaxItems = s.MinItems - 1
				add(x)
			}
		case kwMaxItems:
			x := of(k, tArray)
			x.Has |= 1 << kwMinItems
			x.MinItems = s.MaxItems + 1
			add(x)
		case kwPrefixItems:
			for i, item := range s.Prefix {
				ni, err := g.negate(item)
				if err != nil {
					return nil, err
				}
				if ni.False {
					continue
				}
				x := of(k, tArray)
				x.Ptr += "/" + strconv.Itoa(i)
				x.Has |= 1<<kwMinItems | 1<<kwPrefixItems
				x.MinItems = i + 1
				x.Prefix = make([]*Schema, i+1)
				for j := range i {
					x.Prefix[j] = newSchema(x.Ptr + "/" + strconv.Itoa(j))
				}
				x.Prefix[i] = ni
				add(x)
			}
		case kwItems:
			ni, err := g.negate(s.Items)
			if err != nil {
				return nil, err
			}
			if ni.False {
				continue
			}
			if len(s.Prefix) > 0 {
				return nil, refuse(k)
			}
			x := of(k, tArray)
			x.Has |= 1 << kwContains
			x.Contains = ni
			add(x)
		case kwContains, kwMinContains, kwMaxContains:
			if k != kwContains {
				continue
			}
			switch {
			case s.MinContains == 0 && s.MaxContains < 0:
				// every array holds: nothing to negate
			case s.MinContains == 1 && s.MaxContains < 0:
				nc, err := g.negate(s.Contains)
				if err != nil {
					return nil, err
				}
				x := of(k, tArray)
				x.Has |= 1 << kwItems
				x.Items = nc
				add(x)
			default:
				return nil, refuse(kwMinContains)
			}
		case kwRequired:
			for i, r := range s.Required {
				x := of(k, tObject)
				x.Ptr += "/" + strconv.Itoa(i)
				x.Has |= 1 << kwProperties
				x.Props = []Prop{{r, falseSchema(x.Ptr + "/" + jsonptr.Escape(r))}}
				add(x)
			}
		case kwProperties:
			for _, p := range s.Props {
				np, err := g.negate(p.Schema)
				if err != nil {
					return nil, err
				}
				if np.False {
					continue
				}
				x := of(k, tObject)
				x.Ptr += "/" + jsonptr.Escape(p.Name)
				x.Has |= 1<<kwProperties | 1<<kwRequired
				x.Required = []string{p.Name}
				x.Props = []Prop{{p.Name, np}}
				add(x)
			}
		case kwMinProperties:
			if s.MinProps > 0 {
				x := of(k, tObject)
				x.Has |= 1 << kwMaxProperties
				x.MaxProps = s.MinProps - 1
				add(x)
			}
		case kwMaxProperties:
			x := of(k, tObject)
			x.Has |= 1 << kwMinProperties
			x.MinProps = s.MaxProps + 1
			add(x)
		case kwDependentRequired:
			for _, d := range s.DepRequired {
				for i, r := range d.Required {
					x := of(k, tObject)
					x.Ptr += "/" + jsonptr.Escape(d.Name) + "/" + strconv.Itoa(i)
					x.Has |= 1<<kwProperties | 1<<kwRequired
					x.Required = []string{d.Name}
					x.Props = []Prop{{r, falseSchema(x.Ptr + "/" + jsonptr.Escape(r))}}
					add(x)
				}
			}
		case kwDependentSchemas:
			for _, d := range s.DepSchemas {
				nd, err := g.negate(d.Schema)
				if err != nil {
					return nil, err
				}
				if nd.False {
					continue
				}
				x := of(k, tObject)
				x.Ptr += "/" + jsonptr.Escape(d.Name)
				x.Has |= 1<<kwRequired | 1<<kwAllOf
				x.Required = []string{d.Name}
				x.AllOf = []*Schema{nd}
				add(x)
			}
		case kwRef:
			t, err := g.p.target(s)
			if err != nil {
				return nil, err
			}
			nt, err := g.negate(t)
			if err != nil {
				return nil, err
			}
			add(nt)
		case kwAllOf:
			for _, a := range s.AllOf {
				na, err := g.negate(a)
				if err != nil {
					return nil, err
				}
				add(na)
			}
		case kwAnyOf:
			x := newSchema(at + "anyOf")
			x.Has = 1 << kwAllOf
			empty := false
			for _, b := range s.AnyOf {
				nb, err := g.negate(b)
				if err != nil {
					return nil, err
				}
				if nb.False {
					empty = true
					break
				}
				x.AllOf = append(x.AllOf, nb)
			}
			if !empty {
				add(x)
			}
		case kwNot:
			add(s.Not)
		case kwIf:
			if s.Then != nil {
				nt, err := g.negate(s.Then)
				if err != nil {
					return nil, err
				}
				x := newSchema(at + "then")
				x.Has, x.AllOf = 1<<kwAllOf, []*Schema{s.If, nt}
				add(x)
			}
			if s.Else != nil {
				ni, err := g.negate(s.If)
				if err != nil {
					return nil, err
				}
				ne, err := g.negate(s.Else)
				if err != nil {
					return nil, err
				}
				x := newSchema(at + "else")
				x.Has, x.AllOf = 1<<kwAllOf, []*Schema{ni, ne}
				add(x)
			}
		case kwThen, kwElse:
			// with if
		}
	}
	switch len(alts) {
	case 0:
		return falseSchema(at), nil
	case 1:
		return alts[0], nil
	}
	x := newSchema(at + "anyOf")
	x.Has, x.AnyOf = 1<<kwAnyOf, alts
	return x, nil
}

// conditional returns the anyOf that if, then and else of s stand for:
// (if and then) or (not if and else), which no value satisfies both of.
func (g *negator) conditional(s *Schema) (*Schema, error) {
	yes := newSchema(s.Ptr + "/if()")
	yes.Has, yes.AllOf = 1<<kwAllOf, []*Schema{s.If}
	if s.Then != nil {
		yes.AllOf = append(yes.AllOf, s.Then)
	}
	ni, err := g.negate(s.If)
	if err != nil {
		return nil, err
	}
	no := newSchema(s.Ptr + "/¬if()")
	no.Has, no.AllOf = 1<<kwAllOf, []*Schema{ni}
	if s.Else != nil {
		no.AllOf = append(no.AllOf, s.Else)
	}
	x := newSchema(s.Ptr + "/if?")
	x.Has, x.AnyOf = 1<<kwAnyOf, []*Schema{yes, no}
	return x, nil
}

// dependents returns what the dependentSchemas of s (or dependencies
// with schemas) stand for: for each, the property absent, or the object
// with it satisfying its schema (no value satisfies both).
func (g *negator) dependents(s *Schema) *Schema {
	x := newSchema(s.Ptr + "/dependentSchemas()")
	x.Has = 1 << kwAllOf
	for _, d := range s.DepSchemas {
		at := s.Ptr + "/" + d.Keyword + "/" + jsonptr.Escape(d.Name)
		absent := newSchema(at + "/absent()")
		absent.Has = 1 << kwProperties
		absent.Props = []Prop{{d.Name, falseSchema(at + "/absent()/" + jsonptr.Escape(d.Name))}}
		present := typedSchema(at+"/present()", tObject)
		present.Has |= 1<<kwRequired | 1<<kwAllOf
		present.Required = []string{d.Name}
		present.AllOf = []*Schema{d.Schema}
		either := newSchema(at + "/either()")
		either.Has, either.AnyOf = 1<<kwAnyOf, []*Schema{absent, present}
		x.AllOf = append(x.AllOf, either)
	}
	return x
}
