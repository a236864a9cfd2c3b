package extract

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/reins-go/reins/internal/jsonptr"
)

// maxRefHops bounds the $refs followed from one schema to the next.
const maxRefHops = 32

// alternativesAt returns the JSON texts of the values a schema allows at
// path, when it lists them: a const, an enum, or a boolean type (with
// null when the type allows it). ok is false when the schema does not
// list them there, or reins cannot tell (an anyOf on the way, a $ref to
// another document).
func alternativesAt(schema any, path []string) (alts []string, ok bool) {
	node, ok := resolve(schema, schema)
	if !ok {
		return nil, false
	}
	for _, seg := range path {
		if node, ok = child(schema, node, seg); !ok {
			return nil, false
		}
	}
	obj, isObj := node.(map[string]any)
	if !isObj {
		return nil, false
	}
	var vals []any
	switch {
	case hasKey(obj, "const"):
		vals = []any{obj["const"]}
	case obj["enum"] != nil:
		e, ok := obj["enum"].([]any)
		if !ok {
			return nil, false
		}
		vals = e
	default:
		types := typesOf(obj["type"])
		if len(types) == 0 || slices.ContainsFunc(types, func(t string) bool { return t != "boolean" && t != "null" }) || !slices.Contains(types, "boolean") {
			return nil, false
		}
		vals = []any{true, false}
		if slices.Contains(types, "null") {
			vals = append(vals, nil)
		}
	}
	for _, v := range vals {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, false
		}
		alts = append(alts, strings.TrimSuffix(b.String(), "\n"))
	}
	return alts, len(alts) > 0
}

func hasKey(m map[string]any, k string) bool { _, ok := m[k]; return ok }

func typesOf(t any) []string {
	switch t := t.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// resolve follows local $refs ("#/..." JSON pointers into root).
func resolve(root, node any) (any, bool) {
	for range maxRefHops {
		obj, ok := node.(map[string]any)
		if !ok {
			return node, true
		}
		ref, ok := obj["$ref"].(string)
		if !ok {
			return node, true
		}
		if !strings.HasPrefix(ref, "#") {
			return nil, false
		}
		if node, ok = lookup(root, strings.TrimPrefix(ref, "#")); !ok {
			return nil, false
		}
	}
	return nil, false
}

// lookup returns the value at a JSON pointer in doc.
func lookup(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = jsonptr.Unescape(tok)
		switch d := doc.(type) {
		case map[string]any:
			v, ok := d[tok]
			if !ok {
				return nil, false
			}
			doc = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(d) {
				return nil, false
			}
			doc = d[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// child returns the subschema of node for the member or item seg.
func child(root, node any, seg string) (any, bool) {
	obj, ok := node.(map[string]any)
	if !ok {
		return nil, false
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf", "if", "not", "dependentSchemas", "patternProperties"} {
		if _, has := obj[k]; has {
			return nil, false
		}
	}
	next := func(v any) (any, bool) { return resolve(root, v) }
	if props, ok := obj["properties"].(map[string]any); ok {
		if v, ok := props[seg]; ok {
			return next(v)
		}
	}
	if i, err := strconv.Atoi(seg); err == nil {
		if pre, ok := obj["prefixItems"].([]any); ok {
			if i < len(pre) {
				return next(pre[i])
			}
			if it, ok := obj["items"].(map[string]any); ok {
				return next(it)
			}
			return nil, false
		}
		switch it := obj["items"].(type) {
		case map[string]any:
			return next(it)
		case []any:
			if i < len(it) {
				return next(it[i])
			}
			if ai, ok := obj["additionalItems"].(map[string]any); ok {
				return next(ai)
			}
			return nil, false
		}
	}
	if ap, ok := obj["additionalProperties"].(map[string]any); ok {
		return next(ap)
	}
	return nil, false
}
