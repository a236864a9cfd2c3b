package jsonschema

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"strconv"

	santhosh "github.com/santhosh-tekuri/jsonschema/v5"
)

// metaCheck2020 checks a document against draft 2020-12's metaschema
// (flatDraft2020, which most schemas are checked against: all that name
// no $schema) directly, keyword by keyword, as the validator checks it
// against that metaschema (TestMetaCheckAgrees holds them equal on the
// metaschema corpus, the official suite and maskbench-dev), in a tenth of
// the time: the validator builds maps of unevaluated properties for
// every object it checks.
func metaCheck2020(doc any) error {
	if err := metaCheckOrdered(doc, false); err != nil {
		// Again, keys in order, for the same error every time.
		return metaCheckOrdered(doc, true)
	}
	return nil
}

func metaCheckOrdered(doc any, sorted bool) error {
	var path []string
	var check func(v any) error
	fail := func(format string, args ...any) error {
		e := &Error{Pointer: pointerOf(path), Msg: "invalid schema: " + fmt.Sprintf(format, args...)}
		if n := len(path); n > 0 {
			e.Pointer, e.Keyword = pointerOf(path[:n-1]), escapePointer(path[n-1])
		}
		return e
	}
	in := func(seg string, f func() error) error {
		path = append(path, seg)
		err := f()
		path = path[:len(path)-1]
		return err
	}
	isString := func(v any) (string, bool) { s, ok := v.(string); return s, ok }
	str := func(v any) error {
		if _, ok := v.(string); !ok {
			return fail("expected string")
		}
		return nil
	}
	format := func(v any, name string) error {
		if err := str(v); err != nil {
			return err
		}
		if !santhosh.Formats[name](v) {
			return fail("%q is not valid %s", v, name)
		}
		return nil
	}
	anchor := func(v any) error {
		s, ok := isString(v)
		if !ok {
			return fail("expected string")
		}
		if !anchorPattern.MatchString(s) {
			return fail("%q is not an anchor", s)
		}
		return nil
	}
	number := func(v any) (*big.Rat, error) {
		n, ok := v.(json.Number)
		if !ok {
			return nil, fail("expected number")
		}
		r, ok := new(big.Rat).SetString(n.String())
		if !ok {
			return nil, fail("expected number")
		}
		return r, nil
	}
	count := func(v any) error {
		r, err := number(v)
		if err != nil {
			return fail("expected integer")
		}
		if !r.IsInt() {
			return fail("expected integer")
		}
		if r.Sign() < 0 {
			return fail("must be >= 0")
		}
		return nil
	}
	boolean := func(v any) error {
		if _, ok := v.(bool); !ok {
			return fail("expected boolean")
		}
		return nil
	}
	array := func(v any) ([]any, error) {
		a, ok := v.([]any)
		if !ok {
			return nil, fail("expected array")
		}
		return a, nil
	}
	object := func(v any) (map[string]any, error) {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fail("expected object")
		}
		return m, nil
	}
	schemaMap := func(v any) error {
		m, err := object(v)
		if err != nil {
			return err
		}
		for k, x := range m {
			if err := in(k, func() error { return check(x) }); err != nil {
				return err
			}
		}
		return nil
	}
	schemaArray := func(v any) error {
		a, err := array(v)
		if err != nil {
			return err
		}
		if len(a) == 0 {
			return fail("minimum 1 items required")
		}
		for i, x := range a {
			if err := in(strconv.Itoa(i), func() error { return check(x) }); err != nil {
				return err
			}
		}
		return nil
	}
	names := func(v any) error {
		a, err := array(v)
		if err != nil {
			return err
		}
		seen := make(map[string]bool, len(a))
		for i, x := range a {
			s, ok := isString(x)
			if !ok {
				return in(strconv.Itoa(i), func() error { return fail("expected string") })
			}
			if seen[s] {
				return fail("items are not unique")
			}
			seen[s] = true
		}
		return nil
	}
	simpleType := func(v any) error {
		s, ok := isString(v)
		if !ok || !simpleTypes[s] {
			return fail("not a type name")
		}
		return nil
	}
	check = func(v any) error {
		if _, ok := v.(bool); ok {
			return nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return fail("expected object or boolean")
		}
		keys := maps.Keys(m)
		if sorted {
			keys = slices.Values(slices.Sorted(maps.Keys(m)))
		}
		for k := range keys {
			x := m[k]
			err := in(k, func() error {
				switch k {
				case "$id":
					if err := format(x, "uri-reference"); err != nil {
						return err
					}
					if s := x.(string); !idPattern.MatchString(s) {
						return fail("%q has a fragment", s)
					}
				case "$schema":
					return format(x, "uri")
				case "$ref", "$dynamicRef", "$recursiveRef":
					return format(x, "uri-reference")
				case "$anchor", "$dynamicAnchor", "$recursiveAnchor":
					return anchor(x)
				case "$vocabulary":
					vm, err := object(x)
					if err != nil {
						return err
					}
					for u, b := range vm {
						if !santhosh.Formats["uri"](u) {
							return fail("%q is not valid uri", u)
						}
						if err := in(u, func() error { return boolean(b) }); err != nil {
							return err
						}
					}
				case "$comment", "title", "description", "format", "contentEncoding", "contentMediaType":
					return str(x)
				case "$defs", "properties", "dependentSchemas", "definitions":
					return schemaMap(x)
				case "patternProperties":
					pm, err := object(x)
					if err != nil {
						return err
					}
					for p := range pm {
						if !santhosh.Formats["regex"](p) {
							return fail("%q is not valid regex", p)
						}
					}
					return schemaMap(x)
				case "prefixItems", "allOf", "anyOf", "oneOf":
					return schemaArray(x)
				case "items", "contains", "additionalProperties", "propertyNames", "if", "then", "else", "not",
					"unevaluatedItems", "unevaluatedProperties", "contentSchema":
					return check(x)
				case "type":
					if a, ok := x.([]any); ok {
						if len(a) == 0 {
							return fail("minimum 1 items required")
						}
						seen := map[string]bool{}
						for i, t := range a {
							if err := in(strconv.Itoa(i), func() error { return simpleType(t) }); err != nil {
								return err
							}
							if seen[t.(string)] {
								return fail("items are not unique")
							}
							seen[t.(string)] = true
						}
						return nil
					}
					return simpleType(x)
				case "enum", "examples":
					_, err := array(x)
					return err
				case "multipleOf":
					r, err := number(x)
					if err != nil {
						return err
					}
					if r.Sign() <= 0 {
						return fail("must be > 0")
					}
				case "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum":
					_, err := number(x)
					return err
				case "maxLength", "minLength", "maxItems", "minItems", "maxContains", "minContains", "maxProperties", "minProperties":
					return count(x)
				case "pattern":
					if err := str(x); err != nil {
						return err
					}
					if !santhosh.Formats["regex"](x) {
						return fail("%q is not valid regex", x)
					}
				case "uniqueItems", "deprecated", "readOnly", "writeOnly":
					return boolean(x)
				case "required":
					return names(x)
				case "dependentRequired":
					dm, err := object(x)
					if err != nil {
						return err
					}
					for d, ns := range dm {
						if err := in(d, func() error { return names(ns) }); err != nil {
							return err
						}
					}
				case "dependencies":
					dm, err := object(x)
					if err != nil {
						return err
					}
					for d, dv := range dm {
						err := in(d, func() error {
							if check(dv) == nil || names(dv) == nil {
								return nil
							}
							return fail("neither a schema nor a list of names")
						})
						if err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	return check(doc)
}

var (
	anchorPattern = regexp.MustCompile(`^[A-Za-z_][-A-Za-z0-9._]*$`)
	idPattern     = regexp.MustCompile(`^[^#]*#?$`)
	simpleTypes   = map[string]bool{"array": true, "boolean": true, "integer": true, "null": true, "number": true, "object": true, "string": true}
)

// metaCheckDraft4 is metaCheck2020 for draft 4's metaschema (whose
// formats the validator asserts): schemas are objects; exclusiveMinimum
// and exclusiveMaximum are booleans that need minimum and maximum; enum
// and required hold at least one item, without repeats.
func metaCheckDraft4(doc any) error {
	if err := metaCheckDraft4Ordered(doc, false); err != nil {
		return metaCheckDraft4Ordered(doc, true)
	}
	return nil
}

func metaCheckDraft4Ordered(doc any, sorted bool) error {
	var path []string
	var check func(v any) error
	fail := func(format string, args ...any) error {
		e := &Error{Pointer: pointerOf(path), Msg: "invalid schema: " + fmt.Sprintf(format, args...)}
		if n := len(path); n > 0 {
			e.Pointer, e.Keyword = pointerOf(path[:n-1]), escapePointer(path[n-1])
		}
		return e
	}
	in := func(seg string, f func() error) error {
		path = append(path, seg)
		err := f()
		path = path[:len(path)-1]
		return err
	}
	str := func(v any) error {
		if _, ok := v.(string); !ok {
			return fail("expected string")
		}
		return nil
	}
	format := func(v any, name string) error {
		if err := str(v); err != nil {
			return err
		}
		if !santhosh.Formats[name](v) {
			return fail("%q is not valid %s", v, name)
		}
		return nil
	}
	number := func(v any) (*big.Rat, error) {
		n, ok := v.(json.Number)
		if !ok {
			return nil, fail("expected number")
		}
		r, ok := new(big.Rat).SetString(n.String())
		if !ok {
			return nil, fail("expected number")
		}
		return r, nil
	}
	count := func(v any) error {
		r, err := number(v)
		if err != nil || !r.IsInt() {
			return fail("expected integer")
		}
		if r.Sign() < 0 {
			return fail("must be >= 0")
		}
		return nil
	}
	boolean := func(v any) error {
		if _, ok := v.(bool); !ok {
			return fail("expected boolean")
		}
		return nil
	}
	unique := func(a []any) error {
		for i := range a {
			for j := range i {
				if jsonEqual(a[i], a[j]) {
					return fail("items at index %d and %d are equal", j, i)
				}
			}
		}
		return nil
	}
	schemaMap := func(v any) error {
		m, ok := v.(map[string]any)
		if !ok {
			return fail("expected object")
		}
		for k, x := range m {
			if err := in(k, func() error { return check(x) }); err != nil {
				return err
			}
		}
		return nil
	}
	schemaArray := func(v any) error {
		a, ok := v.([]any)
		if !ok {
			return fail("expected array")
		}
		if len(a) == 0 {
			return fail("minimum 1 items required")
		}
		for i, x := range a {
			if err := in(strconv.Itoa(i), func() error { return check(x) }); err != nil {
				return err
			}
		}
		return nil
	}
	stringArray := func(v any) error {
		a, ok := v.([]any)
		if !ok {
			return fail("expected array")
		}
		if len(a) == 0 {
			return fail("minimum 1 items required")
		}
		for i, x := range a {
			if err := in(strconv.Itoa(i), func() error { return str(x) }); err != nil {
				return err
			}
		}
		return unique(a)
	}
	boolOrSchema := func(v any) error {
		if _, ok := v.(bool); ok {
			return nil
		}
		return check(v)
	}
	simpleType := func(v any) error {
		s, ok := v.(string)
		if !ok || !simpleTypes[s] {
			return fail("not a type name")
		}
		return nil
	}
	check = func(v any) error {
		m, ok := v.(map[string]any)
		if !ok {
			return fail("expected object")
		}
		if _, ok := m["exclusiveMaximum"]; ok {
			if _, ok := m["maximum"]; !ok {
				return fail("exclusiveMaximum without maximum")
			}
		}
		if _, ok := m["exclusiveMinimum"]; ok {
			if _, ok := m["minimum"]; !ok {
				return fail("exclusiveMinimum without minimum")
			}
		}
		keys := maps.Keys(m)
		if sorted {
			keys = slices.Values(slices.Sorted(maps.Keys(m)))
		}
		for k := range keys {
			x := m[k]
			err := in(k, func() error {
				switch k {
				case "id":
					return format(x, "uriref")
				case "$schema":
					return format(x, "uri")
				case "title", "description", "format", "$ref":
					return str(x)
				case "multipleOf":
					r, err := number(x)
					if err != nil {
						return err
					}
					if r.Sign() <= 0 {
						return fail("must be > 0")
					}
				case "maximum", "minimum":
					_, err := number(x)
					return err
				case "exclusiveMaximum", "exclusiveMinimum", "uniqueItems", "regexProperties":
					return boolean(x)
				case "maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties":
					return count(x)
				case "pattern":
					return format(x, "regex")
				case "additionalItems", "additionalProperties":
					return boolOrSchema(x)
				case "items":
					if _, ok := x.([]any); ok {
						return schemaArray(x)
					}
					return check(x)
				case "required":
					return stringArray(x)
				case "definitions", "properties":
					return schemaMap(x)
				case "patternProperties":
					pm, ok := x.(map[string]any)
					if !ok {
						return fail("expected object")
					}
					for p := range pm {
						if !santhosh.Formats["regex"](p) {
							return fail("%q is not valid regex", p)
						}
					}
					return schemaMap(x)
				case "dependencies":
					dm, ok := x.(map[string]any)
					if !ok {
						return fail("expected object")
					}
					for d, dv := range dm {
						err := in(d, func() error {
							if check(dv) == nil || stringArray(dv) == nil {
								return nil
							}
							return fail("neither a schema nor a list of names")
						})
						if err != nil {
							return err
						}
					}
				case "enum":
					a, ok := x.([]any)
					if !ok {
						return fail("expected array")
					}
					if len(a) == 0 {
						return fail("minimum 1 items required")
					}
					return unique(a)
				case "type":
					if a, ok := x.([]any); ok {
						if len(a) == 0 {
							return fail("minimum 1 items required")
						}
						for i, t := range a {
							if err := in(strconv.Itoa(i), func() error { return simpleType(t) }); err != nil {
								return err
							}
						}
						return unique(a)
					}
					return simpleType(x)
				case "allOf", "anyOf", "oneOf":
					return schemaArray(x)
				case "not":
					return check(x)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	return check(doc)
}
