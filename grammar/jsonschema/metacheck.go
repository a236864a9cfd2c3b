package jsonschema

import (
	"regexp"
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
func metaCheck2020(doc any) error { return inOrderOnError(metaCheckOrdered, doc) }

// inOrderOnError runs check with keys in map order, and when it fails,
// again with keys in order, for the same error every time.
func inOrderOnError(check func(doc any, sorted bool) error, doc any) error {
	if err := check(doc, false); err != nil {
		return check(doc, true)
	}
	return nil
}

func metaCheckOrdered(doc any, sorted bool) error {
	w := &metaWalk{sorted: sorted}
	anchor := func(v any) error {
		s, ok := asString(v)
		if !ok {
			return w.fail("expected string")
		}
		if !anchorPattern.MatchString(s) {
			return w.fail("%q is not an anchor", s)
		}
		return nil
	}
	names := func(v any) error {
		a, err := w.array(v)
		if err != nil {
			return err
		}
		seen := make(map[string]bool, len(a))
		for i, x := range a {
			s, ok := asString(x)
			if !ok {
				return w.in(strconv.Itoa(i), func() error { return w.fail("expected string") })
			}
			if seen[s] {
				return w.fail("items are not unique")
			}
			seen[s] = true
		}
		return nil
	}
	w.check = func(v any) error {
		if _, ok := v.(bool); ok {
			return nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return w.fail("expected object or boolean")
		}
		for _, k := range w.keys(m) {
			x := m[k]
			err := w.in(k, func() error {
				switch k {
				case "$id":
					if err := w.format(x, "uri-reference"); err != nil {
						return err
					}
					if s := x.(string); !idPattern.MatchString(s) {
						return w.fail("%q has a fragment", s)
					}
				case "$schema":
					return w.format(x, "uri")
				case "$ref", "$dynamicRef", "$recursiveRef":
					return w.format(x, "uri-reference")
				case "$anchor", "$dynamicAnchor", "$recursiveAnchor":
					return anchor(x)
				case "$vocabulary":
					vm, err := w.object(x)
					if err != nil {
						return err
					}
					for _, u := range w.keys(vm) {
						b := vm[u]
						if !santhosh.Formats["uri"](u) {
							return w.fail("%q is not valid uri", u)
						}
						if err := w.in(u, func() error { return w.boolean(b) }); err != nil {
							return err
						}
					}
				case "$comment", "title", "description", "format", "contentEncoding", "contentMediaType":
					return w.str(x)
				case "$defs", "properties", "dependentSchemas", "definitions":
					return w.schemaMap(x)
				case "patternProperties":
					return w.patternProperties(x)
				case "prefixItems", "allOf", "anyOf", "oneOf":
					return w.schemaArray(x)
				case "items", "contains", "additionalProperties", "propertyNames", "if", "then", "else", "not",
					"unevaluatedItems", "unevaluatedProperties", "contentSchema":
					return w.check(x)
				case "type":
					if a, ok := x.([]any); ok {
						if len(a) == 0 {
							return w.fail("minimum 1 items required")
						}
						seen := map[string]bool{}
						for i, t := range a {
							if err := w.in(strconv.Itoa(i), func() error { return w.simpleType(t) }); err != nil {
								return err
							}
							if seen[t.(string)] {
								return w.fail("items are not unique")
							}
							seen[t.(string)] = true
						}
						return nil
					}
					return w.simpleType(x)
				case "enum", "examples":
					_, err := w.array(x)
					return err
				case "multipleOf":
					return w.multipleOf(x)
				case "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum":
					_, err := w.number(x)
					return err
				case "maxLength", "minLength", "maxItems", "minItems", "maxContains", "minContains", "maxProperties", "minProperties":
					return w.count(x)
				case "pattern":
					if err := w.str(x); err != nil {
						return err
					}
					if err := w.regexSize(x.(string)); err != nil {
						return err
					}
					if !santhosh.Formats["regex"](x) {
						s, _ := x.(string) // w.str checked it
						return w.fail("%q is not valid regex%s", x, regexReason(s))
					}
				case "uniqueItems", "deprecated", "readOnly", "writeOnly":
					return w.boolean(x)
				case "required":
					return names(x)
				case "dependentRequired":
					dm, err := w.object(x)
					if err != nil {
						return err
					}
					for _, d := range w.keys(dm) {
						if err := w.in(d, func() error { return names(dm[d]) }); err != nil {
							return err
						}
					}
				case "dependencies":
					return w.dependencies(x, names)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	return w.check(doc)
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
func metaCheckDraft4(doc any) error { return inOrderOnError(metaCheckDraft4Ordered, doc) }

func metaCheckDraft4Ordered(doc any, sorted bool) error {
	w := &metaWalk{sorted: sorted}
	stringArray := func(v any) error {
		if a, ok := v.([]any); ok && len(a) == 0 {
			return w.fail("minimum 1 items required")
		}
		return w.distinctStrings(v)
	}
	boolOrSchema := func(v any) error {
		if _, ok := v.(bool); ok {
			return nil
		}
		return w.check(v)
	}
	w.check = func(v any) error {
		m, ok := v.(map[string]any)
		if !ok {
			return w.fail("expected object")
		}
		if _, ok := m["exclusiveMaximum"]; ok {
			if _, ok := m["maximum"]; !ok {
				return w.fail("exclusiveMaximum without maximum")
			}
		}
		if _, ok := m["exclusiveMinimum"]; ok {
			if _, ok := m["minimum"]; !ok {
				return w.fail("exclusiveMinimum without minimum")
			}
		}
		for _, k := range w.keys(m) {
			x := m[k]
			err := w.in(k, func() error {
				switch k {
				case "id":
					return w.format(x, "uriref")
				case "$schema":
					return w.format(x, "uri")
				case "title", "description", "format", "$ref":
					return w.str(x)
				case "multipleOf":
					return w.multipleOf(x)
				case "maximum", "minimum":
					_, err := w.number(x)
					return err
				case "exclusiveMaximum", "exclusiveMinimum", "uniqueItems", "regexProperties":
					return w.boolean(x)
				case "maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties":
					return w.count(x)
				case "pattern":
					return w.format(x, "regex")
				case "additionalItems", "additionalProperties":
					return boolOrSchema(x)
				case "items":
					if _, ok := x.([]any); ok {
						return w.schemaArray(x)
					}
					return w.check(x)
				case "required":
					return stringArray(x)
				case "definitions", "properties":
					return w.schemaMap(x)
				case "patternProperties":
					return w.patternProperties(x)
				case "dependencies":
					return w.dependencies(x, stringArray)
				case "enum":
					return w.enum(x)
				case "type":
					return w.types(x)
				case "allOf", "anyOf", "oneOf":
					return w.schemaArray(x)
				case "not":
					return w.check(x)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	return w.check(doc)
}

// metaCheckDraft7 is metaCheck2020 for draft 7's metaschema, and
// metaCheckDraft6 for draft 6's, which lacks draft 7's annotations
// ($comment, readOnly, writeOnly, examples, contentMediaType,
// contentEncoding) and if, then and else: the validator asserts these
// drafts' formats; enum holds at least one item, without repeats, and
// required any number of distinct names.
func metaCheckDraft7(doc any) error {
	return inOrderOnError(func(doc any, sorted bool) error { return metaCheckDraft6or7(doc, sorted, true) }, doc)
}

func metaCheckDraft6(doc any) error {
	return inOrderOnError(func(doc any, sorted bool) error { return metaCheckDraft6or7(doc, sorted, false) }, doc)
}

func metaCheckDraft6or7(doc any, sorted, seven bool) error {
	w := &metaWalk{sorted: sorted}
	w.check = func(v any) error {
		if _, ok := v.(bool); ok {
			return nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return w.fail("expected object or boolean")
		}
		for _, k := range w.keys(m) {
			x := m[k]
			err := w.in(k, func() error {
				switch k {
				case "$comment", "contentEncoding", "contentMediaType":
					if seven {
						return w.str(x)
					}
				case "readOnly", "writeOnly":
					if seven {
						return w.boolean(x)
					}
				case "examples":
					if seven {
						_, err := w.array(x)
						return err
					}
				case "if", "then", "else":
					if seven {
						return w.check(x)
					}
				case "$id", "$ref":
					return w.format(x, "uri-reference")
				case "$schema":
					return w.format(x, "uri")
				case "title", "description", "format":
					return w.str(x)
				case "definitions", "properties":
					return w.schemaMap(x)
				case "patternProperties":
					return w.patternProperties(x)
				case "allOf", "anyOf", "oneOf":
					return w.schemaArray(x)
				case "items":
					if _, ok := x.([]any); ok {
						return w.schemaArray(x)
					}
					return w.check(x)
				case "additionalItems", "additionalProperties", "contains", "propertyNames", "not":
					return w.check(x)
				case "type":
					return w.types(x)
				case "enum":
					return w.enum(x)
				case "multipleOf":
					return w.multipleOf(x)
				case "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum":
					_, err := w.number(x)
					return err
				case "maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties":
					return w.count(x)
				case "pattern":
					return w.format(x, "regex")
				case "uniqueItems":
					return w.boolean(x)
				case "required":
					return w.distinctStrings(x)
				case "dependencies":
					return w.dependencies(x, w.distinctStrings)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	return w.check(doc)
}
