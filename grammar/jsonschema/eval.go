package jsonschema

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"unicode/utf8"

	santhosh "github.com/santhosh-tekuri/jsonschema/v5"
)

// The evaluator checks decoded JSON values against typed Schemas with
// the validator's semantics (santhosh-tekuri/jsonschema: Go's regexp for
// patterns, its format checkers, numbers compared exactly): enum and
// const values are filtered through the rest of their schema with it,
// and the constructions that enumerate values (uniqueItems, property
// names) check with it what they enumerate. A keyword it does not
// evaluate (unevaluatedItems, unevaluatedProperties) is an error, so
// that a caller refuses rather than guesses.

// evaluator evaluates values against Schemas of one compilation.
type evaluator struct {
	p       *parser
	regexps map[string]*regexp.Regexp
	steps   int
	// sets holds the long value lists (enum, const, negated enums) as
	// sets, by their first element: each value of a list of thousands
	// checked against it was a scan of the list (see inList).
	sets map[*any]valueSet
}

// maxEvalSteps bounds the work of all evaluations of one compilation.
const maxEvalSteps = 1 << 22

// maxEvalInPlace bounds how deeply evaluation nests in place (a value
// checked against a schema that applies to the same value: allOf,
// $ref, combinators): past it the schema loops.
const maxEvalInPlace = 256

// valid reports whether v satisfies s.
func (e *evaluator) valid(s *Schema, v any) (bool, error) {
	return e.eval(s, v, 0)
}

// validAll reports whether v satisfies every schema of xs.
func (e *evaluator) validAll(xs []*Schema, v any) (bool, error) {
	for _, s := range xs {
		if ok, err := e.eval(s, v, 0); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

func (e *evaluator) regexp(pat string) (*regexp.Regexp, error) {
	if re, ok := e.regexps[pat]; ok {
		return re, nil
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %v", pat, err)
	}
	if e.regexps == nil {
		e.regexps = map[string]*regexp.Regexp{}
	}
	e.regexps[pat] = re
	return re, nil
}

// instanceType is the type bit of a decoded value: an integer is a
// number whose value is whole (1.0 too).
func instanceType(v any) typeBits {
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
		if r, ok := new(big.Rat).SetString(x.String()); ok && r.IsInt() {
			return tInteger
		}
		return tFraction
	}
	return 0
}

// inList reports whether v equals a value of list: a short list by a
// scan, a long one by its set, made at its first use.
func (e *evaluator) inList(list []any, v any) bool {
	if len(list) > shortNames {
		set, made := e.sets[&list[0]]
		if !made {
			set = newValueSet(list) // nil when a value cannot be keyed: scanned
			if e.sets == nil {
				e.sets = map[*any]valueSet{}
			}
			e.sets[&list[0]] = set
		}
		if set != nil {
			if in, ok := set.has(v); ok {
				return in
			}
		}
	}
	return slices.ContainsFunc(list, func(w any) bool { return jsonEqual(v, w) })
}

func (e *evaluator) eval(s *Schema, v any, inPlace int) (bool, error) {
	if e.steps++; e.steps > maxEvalSteps {
		return false, limitErrorf(limitWork, "checking values against the schema would take more than %d steps", maxEvalSteps)
	}
	if inPlace > maxEvalInPlace {
		return false, fmt.Errorf("%s: the schema applies itself to the same value without end", s.Ptr)
	}
	if s.False {
		return false, nil
	}
	if len(s.Unsupported) > 0 {
		return false, fmt.Errorf("%s: keyword %s is not supported", s.Ptr, s.Unsupported[0])
	}
	if s.UnevaluatedItems != nil || s.UnevaluatedProps != nil {
		return false, fmt.Errorf("%s: unevaluatedItems and unevaluatedProperties are not evaluated here", s.Ptr)
	}
	t := instanceType(v)
	if s.Types&t == 0 {
		return false, nil
	}
	for _, list := range [][]any{s.Enum, s.Const} {
		if list != nil && !e.inList(list, v) {
			return false, nil
		}
	}
	if e.inList(s.NotEnum, v) {
		return false, nil
	}
	sub := func(x *Schema, w any) (bool, error) { return e.eval(x, w, 0) }
	here := func(x *Schema) (bool, error) { return e.eval(x, v, inPlace+1) }
	switch x := v.(type) {
	case json.Number:
		r, _ := new(big.Rat).SetString(x.String())
		if s.Min != nil {
			if c := r.Cmp(s.Min.v); c < 0 || (c == 0 && s.Min.strict) {
				return false, nil
			}
		}
		if s.Max != nil {
			if c := r.Cmp(s.Max.v); c > 0 || (c == 0 && s.Max.strict) {
				return false, nil
			}
		}
		if s.MultipleOf != nil && !new(big.Rat).Quo(r, s.MultipleOf).IsInt() {
			return false, nil
		}
	case string:
		if s.Has.has(kwMinLength) || s.Has.has(kwMaxLength) {
			n := utf8.RuneCountInString(x)
			if n < s.MinLength || (s.MaxLength >= 0 && n > s.MaxLength) {
				return false, nil
			}
		}
		if s.Has.has(kwPattern) {
			re, err := e.regexp(s.Pattern)
			if err != nil {
				return false, err
			}
			if !re.MatchString(x) {
				return false, nil
			}
		}
		if s.Has.has(kwNotPattern) {
			re, err := e.regexp(s.NotPattern)
			if err != nil {
				return false, err
			}
			if re.MatchString(x) {
				return false, nil
			}
		}
		if s.Has.has(kwNotFormat) {
			if f := santhosh.Formats[s.NotFormat]; f != nil && f(v) {
				return false, nil
			}
		}
	case []any:
		if len(x) < s.MinItems || (s.MaxItems >= 0 && len(x) > s.MaxItems) {
			return false, nil
		}
		if s.Unique {
			for i := range x {
				for j := range i {
					if e.steps++; jsonEqual(x[i], x[j]) {
						return false, nil
					}
				}
			}
		}
		for i, item := range x {
			var is *Schema
			switch {
			case i < len(s.Prefix):
				is = s.Prefix[i]
			case s.Items != nil:
				is = s.Items
			}
			if is != nil {
				if ok, err := sub(is, item); !ok || err != nil {
					return false, err
				}
			}
		}
		if s.Contains != nil {
			n := 0
			for _, item := range x {
				ok, err := sub(s.Contains, item)
				if err != nil {
					return false, err
				}
				if ok {
					n++
				}
			}
			if n < s.MinContains || (s.MaxContains >= 0 && n > s.MaxContains) {
				return false, nil
			}
		}
	case map[string]any:
		if len(x) < s.MinProps || (s.MaxProps >= 0 && len(x) > s.MaxProps) {
			return false, nil
		}
		for _, r := range s.Required {
			if _, ok := x[r]; !ok {
				return false, nil
			}
		}
		for k, w := range x {
			if s.PropertyNames != nil {
				if ok, err := sub(s.PropertyNames, k); !ok || err != nil {
					return false, err
				}
			}
			listed := s.prop(k)
			if listed != nil {
				if ok, err := sub(listed, w); !ok || err != nil {
					return false, err
				}
			}
			matched := false
			for _, pp := range s.PatternProps {
				re, err := e.regexp(pp.Pattern)
				if err != nil {
					return false, err
				}
				if re.MatchString(k) {
					matched = true
					if ok, err := sub(pp.Schema, w); !ok || err != nil {
						return false, err
					}
				}
			}
			if listed == nil && !matched && s.AdditionalProps != nil {
				if ok, err := sub(s.AdditionalProps, w); !ok || err != nil {
					return false, err
				}
			}
		}
		for _, d := range s.DepRequired {
			if _, ok := x[d.Name]; !ok {
				continue
			}
			for _, r := range d.Required {
				if _, ok := x[r]; !ok {
					return false, nil
				}
			}
		}
		for _, d := range s.DepSchemas {
			if _, ok := x[d.Name]; !ok {
				continue
			}
			if ok, err := here(d.Schema); !ok || err != nil {
				return false, err
			}
		}
	}
	if s.Has.has(kwFormat) {
		if f := santhosh.Formats[s.Format]; f != nil && !f(v) {
			return false, nil
		}
	}
	if s.Ref != "" {
		t, err := e.p.target(s)
		if err != nil {
			return false, err
		}
		if ok, err := here(t); !ok || err != nil {
			return false, err
		}
	}
	if s.Not != nil {
		ok, err := here(s.Not)
		if err != nil || ok {
			return false, err
		}
	}
	for _, a := range s.AllOf {
		if ok, err := here(a); !ok || err != nil {
			return false, err
		}
	}
	if s.AnyOf != nil {
		any := false
		for _, a := range s.AnyOf {
			ok, err := here(a)
			if err != nil {
				return false, err
			}
			if ok {
				any = true
				break
			}
		}
		if !any {
			return false, nil
		}
	}
	if s.OneOf != nil {
		n := 0
		for _, a := range s.OneOf {
			ok, err := here(a)
			if err != nil {
				return false, err
			}
			if ok {
				n++
			}
		}
		if n != 1 {
			return false, nil
		}
	}
	if s.If != nil {
		ok, err := here(s.If)
		if err != nil {
			return false, err
		}
		branch := s.Else
		if ok {
			branch = s.Then
		}
		if branch != nil {
			if ok, err := here(branch); !ok || err != nil {
				return false, err
			}
		}
	}
	return true, nil
}
