package jsonschema

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/reins-go/reins/internal/jsonptr"
)

// The parse stage: a decoded schema document (maps, slices,
// json.Number) becomes typed Schemas, one per schema object, each parsed
// once however often it is referred to. Keywords are read here and
// nowhere else; a keyword of the wrong shape is an *Error at its
// pointer. $refs are linked to their targets on first use (target),
// through refs.

// parser parses schema objects into Schemas, by location.
type parser struct {
	refs     *refs
	oldDraft bool // draft 4, 6 or 7: the siblings of $ref are ignored
	version  int  // the draft: 4, 6, 7, 2019 or 2020; keywords of later drafts are not keywords

	relax map[string]bool // keywords Options.Relax drops
	byLoc map[string]*Schema
	count int // schemas parsed, against maxSchemaNodes

	// formatAnnotation reads format as an annotation
	// (Options.FormatAnnotation).
	formatAnnotation bool
}

// sinceDraft is the draft that made each keyword one, where it is
// not draft 4.
var sinceDraft = map[string]int{
	"const": 6, "contains": 6, "propertyNames": 6, "if": 7, "then": 7, "else": 7,
	"dependentRequired": 2019, "dependentSchemas": 2019, "minContains": 2019, "maxContains": 2019,
	"unevaluatedItems": 2019, "unevaluatedProperties": 2019, "prefixItems": 2020, "$dynamicRef": 2020, "$recursiveRef": 2019,
}

func newParser(r *refs, d draft, relax []string) *parser {
	p := &parser{refs: r, oldDraft: d.old, version: d.version, byLoc: map[string]*Schema{}}
	for _, k := range relax {
		if p.relax == nil {
			p.relax = map[string]bool{}
		}
		for _, name := range relaxable[k] {
			p.relax[name] = true
		}
	}
	return p
}

// maxSchemaNodes bounds how many schema objects one compilation parses:
// a document (or a chain of references) of more is refused.
const maxSchemaNodes = 20000

// at parses the schema v found at location loc (memoized by loc).
func (p *parser) at(v any, loc string) (*Schema, error) {
	if s, ok := p.byLoc[loc]; ok {
		return s, nil
	}
	if p.count++; p.count > maxSchemaNodes {
		return nil, &Error{Pointer: loc, Limit: limitSubschemas, Msg: fmt.Sprintf("the schema has more than %d subschemas", maxSchemaNodes)}
	}
	s := &Schema{Ptr: loc, Types: tAll, MaxLength: -1, MaxItems: -1, MaxProps: -1, MinContains: 1, MaxContains: -1}
	p.byLoc[loc] = s
	switch x := v.(type) {
	case bool:
		s.False = !x
		return s, nil
	case map[string]any:
		if err := p.object(s, x); err != nil {
			delete(p.byLoc, loc)
			return nil, err
		}
		return s, nil
	}
	delete(p.byLoc, loc)
	return nil, &Error{Pointer: loc, Msg: "a schema must be an object or a boolean"}
}

// target returns the schema s's $ref names, parsed and linked.
func (p *parser) target(s *Schema) (*Schema, error) {
	if s.Target != nil {
		return s.Target, nil
	}
	loc, v, err := p.refs.target(s.Ref)
	if err != nil {
		return nil, wrapError(s.Ptr, "$ref", err)
	}
	t, err := p.at(v, loc)
	if err != nil {
		return nil, err
	}
	s.Target = t
	return t, nil
}

// keywordError is an error at keyword k of the schema at ptr.
func keywordError(ptr, k, format string, args ...any) error {
	return &Error{Pointer: ptr, Keyword: k, Msg: fmt.Sprintf(format, args...)}
}

// unsupportedKeywords are assertion keywords the typed form does not
// hold.
var unsupportedKeywords = []string{"$dynamicRef", "$recursiveRef"}

// object reads the keywords of the schema object m into s.
func (p *parser) object(s *Schema, m map[string]any) error {
	ptr := s.Ptr
	if ref, ok := m["$ref"]; ok && !p.relax["$ref"] {
		r, ok := ref.(string)
		if !ok {
			return keywordError(ptr, "$ref", "must be a string")
		}
		s.Ref, s.Has = r, s.Has|1<<kwRef
		if p.oldDraft { // the siblings of $ref do not count
			return nil
		}
	}
	// A schema of few keys is asked for each keyword by looking through
	// its keys (a length and a few bytes compared each) rather than by
	// hashing every keyword, most of which are absent: 2% fewer
	// instructions compiling a Kubernetes schema.
	var few [8]string
	keys, small := few[:0], len(m) <= len(few)
	if small {
		for k := range m {
			keys = append(keys, k)
		}
	}
	has := func(k string) (any, bool) {
		if small && !slices.Contains(keys, k) {
			return nil, false
		}
		v, ok := m[k]
		if !ok || p.relax[k] || p.version < sinceDraft[k] {
			return nil, false
		}
		return v, true
	}
	sub := func(k string, v any) (*Schema, error) {
		return p.at(v, ptr+"/"+jsonptr.Escape(k))
	}
	subs := func(k string, v any) ([]*Schema, error) {
		list, ok := v.([]any)
		if !ok || (len(list) == 0 && k != "items" && k != "prefixItems") {
			return nil, keywordError(ptr, k, "must be a non-empty array")
		}
		out := make([]*Schema, len(list))
		for i, x := range list {
			var err error
			if out[i], err = p.at(x, ptr+"/"+k+"/"+strconv.Itoa(i)); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	count := func(k string) (int, bool, error) {
		v, ok := has(k)
		if !ok {
			return 0, false, nil
		}
		n, err := countOf(v)
		if err != nil {
			return 0, false, &Error{Pointer: ptr, Keyword: k, Msg: err.Error(), Limit: limitOf(err)}
		}
		return n, true, nil
	}
	mark := func(k kw) { s.Has |= 1 << k }
	var err error

	for _, k := range unsupportedKeywords {
		if _, ok := has(k); ok {
			s.Unsupported = append(s.Unsupported, k)
		}
	}
	if t, ok := has("type"); ok {
		mark(kwType)
		s.Types = 0
		var names []any
		switch t := t.(type) {
		case string:
			names = []any{t}
		case []any:
			names = t
		default:
			return keywordError(ptr, "type", "must be a string or an array")
		}
		for _, n := range names {
			name, _ := n.(string)
			b := typeBit(name)
			if b == tAll {
				return keywordError(ptr, "type", "unknown type %q", name)
			}
			s.Types |= b
		}
	}
	if n, ok := has("nullable"); ok {
		if b, _ := n.(bool); b {
			mark(kwNullable)
			s.Types |= tNull
		}
	}
	if e, ok := has("enum"); ok {
		list, ok := e.([]any)
		if !ok {
			return keywordError(ptr, "enum", "must be an array")
		}
		if len(list) > MaxEnumValues {
			return &Error{Pointer: ptr, Keyword: "enum", Limit: limitEnumValues, Msg: fmt.Sprintf("%d values, more than the limit of %d (MaxEnumValues)", len(list), MaxEnumValues)}
		}
		mark(kwEnum)
		s.Enum = list
	}
	if v, ok := has("const"); ok {
		mark(kwConst)
		if s.Enum != nil {
			s.Const = []any{v}
		} else {
			s.Enum = []any{v}
		}
	}
	for _, c := range []struct {
		k    string
		kw   kw
		dest *[]*Schema
	}{{"allOf", kwAllOf, &s.AllOf}, {"anyOf", kwAnyOf, &s.AnyOf}, {"oneOf", kwOneOf, &s.OneOf}} {
		if v, ok := has(c.k); ok {
			mark(c.kw)
			if *c.dest, err = subs(c.k, v); err != nil {
				return err
			}
		}
	}
	for _, c := range []struct {
		k    string
		kw   kw
		dest **Schema
	}{{"not", kwNot, &s.Not}, {"if", kwIf, &s.If}, {"then", kwThen, &s.Then}, {"else", kwElse, &s.Else},
		{"additionalProperties", kwAdditionalProperties, &s.AdditionalProps}, {"propertyNames", kwPropertyNames, &s.PropertyNames},
		{"contains", kwContains, &s.Contains}} {
		if v, ok := has(c.k); ok {
			mark(c.kw)
			if *c.dest, err = sub(c.k, v); err != nil {
				return err
			}
		}
	}
	if !p.oldDraft {
		for _, c := range []struct {
			k    string
			kw   kw
			dest **Schema
		}{{"unevaluatedItems", kwUnevaluatedItems, &s.UnevaluatedItems}, {"unevaluatedProperties", kwUnevaluatedProperties, &s.UnevaluatedProps}} {
			if v, ok := has(c.k); ok {
				mark(c.kw)
				if *c.dest, err = sub(c.k, v); err != nil {
					return err
				}
			}
		}
	}
	if s.If == nil { // then and else without if are annotations
		s.Then, s.Else = nil, nil
		s.Has &^= 1<<kwThen | 1<<kwElse
	}
	// Numbers.
	for _, isMin := range []bool{true, false} {
		b, berr := readBound(m, isMin)
		if berr != nil {
			return &Error{Pointer: ptr, Keyword: berr.kw, Msg: berr.Error(), Limit: limitOf(berr), Err: berr.err}
		}
		if b == nil {
			continue
		}
		if isMin {
			s.Min = b
			mark(kwMinimum)
		} else {
			s.Max = b
			mark(kwMaximum)
		}
	}
	if v, ok := has("multipleOf"); ok {
		num, ok := v.(json.Number)
		if !ok {
			return keywordError(ptr, "multipleOf", "must be a number")
		}
		r, err := parseNumber(num)
		if err != nil {
			return &Error{Pointer: ptr, Keyword: "multipleOf", Msg: err.Error(), Limit: limitOf(err)}
		}
		if r.Sign() <= 0 {
			return keywordError(ptr, "multipleOf", "must be above 0")
		}
		mark(kwMultipleOf)
		s.MultipleOf = r
	}
	// Strings.
	if n, ok, err := count("minLength"); err != nil {
		return err
	} else if ok {
		mark(kwMinLength)
		s.MinLength = n
	}
	if n, ok, err := count("maxLength"); err != nil {
		return err
	} else if ok {
		mark(kwMaxLength)
		s.MaxLength = n
	}
	if v, ok := has("pattern"); ok {
		pat, ok := v.(string)
		if !ok {
			return keywordError(ptr, "pattern", "must be a string")
		}
		mark(kwPattern)
		s.Pattern = pat
	}
	if v, ok := has("format"); ok {
		name, _ := v.(string)
		if knownFormat(name) && !p.formatAnnotation { // others are annotations
			mark(kwFormat)
			s.Format = name
		}
	}
	// Arrays.
	if v, ok := has("prefixItems"); ok {
		mark(kwPrefixItems)
		if s.Prefix, err = subs("prefixItems", v); err != nil {
			return err
		}
		if it, ok := has("items"); ok {
			mark(kwItems)
			if s.Items, err = sub("items", it); err != nil {
				return err
			}
		}
	} else if it, ok := has("items"); ok {
		if _, isList := it.([]any); isList { // the tuple form of older drafts
			mark(kwPrefixItems)
			if s.Prefix, err = subs("items", it); err != nil {
				return err
			}
			if a, ok := has("additionalItems"); ok {
				mark(kwItems)
				if s.Items, err = sub("additionalItems", a); err != nil {
					return err
				}
			}
		} else {
			mark(kwItems)
			if s.Items, err = sub("items", it); err != nil {
				return err
			}
		}
	}
	if n, ok, err := count("minItems"); err != nil {
		return err
	} else if ok {
		mark(kwMinItems)
		s.MinItems = n
	}
	if n, ok, err := count("maxItems"); err != nil {
		return err
	} else if ok {
		mark(kwMaxItems)
		s.MaxItems = n
	}
	if v, ok := has("uniqueItems"); ok {
		if b, _ := v.(bool); b {
			mark(kwUniqueItems)
			s.Unique = true
		}
	}
	if s.Contains != nil && !p.oldDraft {
		if n, ok, err := count("minContains"); err != nil {
			return err
		} else if ok {
			mark(kwMinContains)
			s.MinContains = n
		}
		if n, ok, err := count("maxContains"); err != nil {
			return err
		} else if ok {
			mark(kwMaxContains)
			s.MaxContains = n
		}
	}
	// Objects.
	if v, ok := has("properties"); ok {
		props, ok := v.(map[string]any)
		if !ok {
			return keywordError(ptr, "properties", "must be an object")
		}
		mark(kwProperties)
		names := p.refs.order[ptr+"/properties"]
		if len(names) != len(props) {
			names = slices.Sorted(maps.Keys(props))
		}
		s.Props = make([]Prop, 0, len(names))
		for _, name := range names {
			ps, err := p.at(props[name], ptr+"/properties/"+jsonptr.Escape(name))
			if err != nil {
				return err
			}
			s.Props = append(s.Props, Prop{name, ps})
		}
	}
	if v, ok := has("patternProperties"); ok {
		pp, ok := v.(map[string]any)
		if !ok {
			return keywordError(ptr, "patternProperties", "must be an object")
		}
		if len(pp) > 0 {
			mark(kwPatternProperties)
			for _, pat := range slices.Sorted(maps.Keys(pp)) {
				ps, err := p.at(pp[pat], ptr+"/patternProperties/"+jsonptr.Escape(pat))
				if err != nil {
					return err
				}
				s.PatternProps = append(s.PatternProps, PatternProp{pat, ps})
			}
		}
	}
	if v, ok := has("required"); ok {
		list, ok := v.([]any)
		if !ok {
			return keywordError(ptr, "required", "must be an array")
		}
		var seen map[string]bool // for a long list, the names kept so far
		if len(list) > shortNames {
			seen = make(map[string]bool, len(list))
		}
		for _, x := range list {
			name, ok := x.(string)
			if !ok {
				return keywordError(ptr, "required", "must list strings")
			}
			switch {
			case seen != nil && !seen[name]:
				seen[name] = true
				s.Required = append(s.Required, name)
			case seen == nil && !slices.Contains(s.Required, name):
				s.Required = append(s.Required, name)
			}
		}
		if len(s.Required) > 0 {
			mark(kwRequired)
		}
	}
	if n, ok, err := count("minProperties"); err != nil {
		return err
	} else if ok {
		mark(kwMinProperties)
		s.MinProps = n
	}
	if n, ok, err := count("maxProperties"); err != nil {
		return err
	} else if ok {
		mark(kwMaxProperties)
		s.MaxProps = n
	}
	for _, k := range []string{"dependentRequired", "dependencies", "dependentSchemas"} {
		v, ok := has(k)
		if !ok {
			continue
		}
		deps, ok := v.(map[string]any)
		if !ok {
			return keywordError(ptr, k, "must be an object")
		}
		for _, name := range slices.Sorted(maps.Keys(deps)) {
			d := deps[name]
			if list, isList := d.([]any); isList && k != "dependentSchemas" {
				dep := Dependent{Name: name, Required: []string{}}
				for _, x := range list {
					n, ok := x.(string)
					if !ok {
						return keywordError(ptr+"/"+k, jsonptr.Escape(name), "must list property names")
					}
					dep.Required = append(dep.Required, n)
				}
				mark(kwDependentRequired)
				s.DepRequired = append(s.DepRequired, dep)
				continue
			}
			if k == "dependentRequired" {
				return keywordError(ptr+"/"+k, jsonptr.Escape(name), "must be an array")
			}
			ds, err := p.at(d, ptr+"/"+k+"/"+jsonptr.Escape(name))
			if err != nil {
				return err
			}
			mark(kwDependentSchemas)
			s.DepSchemas = append(s.DepSchemas, DependentSchema{name, ds, k})
		}
	}
	return nil
}

// countOf reads a non-negative integer keyword (2.0 counts as 2).
func countOf(v any) (int, error) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("must be a non-negative integer")
	}
	if i, err := strconv.Atoi(num.String()); err == nil {
		if i < 0 {
			return 0, fmt.Errorf("must be a non-negative integer")
		}
		return i, nil
	}
	r, err := parseNumber(num)
	if err != nil {
		return 0, err
	}
	if !r.IsInt() || r.Sign() < 0 {
		return 0, fmt.Errorf("must be a non-negative integer")
	}
	if !r.Num().IsInt64() || r.Num().Int64() > 1<<40 {
		return 1 << 40, nil // beyond any bound reins compiles; lowering refuses it
	}
	return int(r.Num().Int64()), nil
}
