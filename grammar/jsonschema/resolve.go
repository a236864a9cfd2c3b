package jsonschema

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/reins-go/reins/internal/jsonptr"
)

// Loader returns the schema document at an absolute URL (without a
// fragment), for a $ref that leaves the document. Compile asks for each
// document once, when a reference to it is first compiled, and holds
// the documents to MaxSchemaBytes and MaxDocuments. A Loader decides
// what may be read: see DirLoader.
type Loader func(url string) ([]byte, error)

// DefaultBaseURI is the URI of a schema document that has no $id and no
// Options.BaseURI: relative references and $ids resolve against it.
// Its host is reserved (RFC 2606), so it names nothing real.
const DefaultBaseURI = "https://reins.invalid/schema.json"

// refs finds the targets of $refs across the schema document and the
// documents a Loader returns. Every $ref in a document is rewritten, when
// the document is read, to an absolute URI; locate maps that URI to a
// location, written "#/json/pointer" in the root document and
// "URL#/json/pointer" in a loaded one.
type refs struct {
	load    Loader
	docs    map[string]any    // decoded documents by prefix: "" is the root, else the URL
	ids     map[string]string // absolute URI of a schema resource → its location
	anchors map[string]string // absolute URI "#" plain name → location
	order   map[string][]string
	ptrs    []string         // the locations of order, root document first
	bytes   int              // the size of the documents read, against MaxSchemaBytes
	places  map[string][]int // subschemaPlaces, for walk
}

// newRefs reads the root document, of size bytes, found at base.
func newRefs(doc any, order *keyOrder, size int, base string, load Loader) (*refs, error) {
	r := &refs{load: load, docs: map[string]any{}, ids: map[string]string{}, anchors: map[string]string{}, order: order.keys, ptrs: order.ptrs, bytes: size, places: subschemaPlaces()}
	if err := r.add("", base, doc, nil); err != nil {
		return nil, err
	}
	return r, nil
}

// add registers a document at prefix, read from base: its key order
// (the root document's is r's already, order nil), its resources and
// anchors; its $refs become absolute.
func (r *refs) add(prefix, base string, doc any, order *keyOrder) error {
	u, err := url.Parse(base)
	if err != nil || !u.IsAbs() {
		return fmt.Errorf("base URI %q is not absolute", base)
	}
	if order != nil {
		for _, p := range order.ptrs {
			r.order[prefix+p] = order.keys[p]
			r.ptrs = append(r.ptrs, prefix+p)
		}
	}
	r.docs[prefix] = doc
	u.Fragment, u.RawFragment = "", ""
	r.ids[u.String()] = prefix + "#"
	d := draftOf(doc)
	return r.walk(doc, prefix, nil, u, d)
}

// Keywords whose values are subschemas, by shape.
var (
	schemaKeywords = []string{"additionalProperties", "additionalItems", "items", "not", "if", "then", "else",
		"contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
	schemaListKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
	schemaMapKeywords  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)

// draft is what a document's $schema says: its version and identifiers.
type draft struct {
	idKey   string // "$id", or "id" in draft 4
	old     bool   // draft 4, 6 or 7: the siblings of $ref are ignored
	version int    // 4, 6, 7, 2019 or 2020 (the default)
}

func draftOf(doc any) draft {
	d := draft{idKey: "$id", version: 2020}
	if root, ok := doc.(map[string]any); ok {
		if s, ok := root["$schema"].(string); ok {
			for _, v := range []struct {
				name    string
				version int
			}{{"draft-04", 4}, {"draft-06", 6}, {"draft-07", 7}, {"draft/2019-09", 2019}} {
				if strings.Contains(s, v.name) {
					d.version = v.version
				}
			}
			d.old = d.version <= 7
			if d.version == 4 {
				d.idKey = "id"
			}
		}
	}
	return d
}

// walk visits the schema s at path (in the document at prefix) with base
// URI base: it registers $id and anchors and rewrites $ref to an
// absolute URI, then goes on into the subschemas. Pointers are written
// only where one is needed: for every schema they would take memory of
// the document's size times its depth.
func (r *refs) walk(s any, prefix string, path []string, base *url.URL, d draft) error {
	m, ok := s.(map[string]any)
	if !ok {
		return nil
	}
	_, hasRef := m["$ref"]
	// An $id beside a $ref counts from draft 2019-09 on; before, the
	// $ref's siblings are ignored.
	if id, ok := m[d.idKey].(string); ok && !(hasRef && d.old) {
		u, err := base.Parse(id)
		if err != nil {
			return &Error{Pointer: prefix + pointerOf(path), Keyword: d.idKey, Msg: fmt.Sprintf("%q is not a URI reference: %v", id, err), Err: err}
		}
		if u.Fragment != "" { // draft 6 and 7 (and 4) write anchors as "#name"
			anchorBase := *u
			anchorBase.Fragment, anchorBase.RawFragment = "", ""
			r.anchors[anchorBase.String()+"#"+u.Fragment] = prefix + pointerOf(path)
		}
		u.Fragment, u.RawFragment = "", ""
		if !strings.HasPrefix(id, "#") {
			base = u
			r.ids[u.String()] = prefix + pointerOf(path)
		}
	}
	for _, k := range []string{"$anchor", "$dynamicAnchor"} {
		if name, ok := m[k].(string); ok {
			r.anchors[base.String()+"#"+name] = prefix + pointerOf(path)
		}
	}
	if ref, ok := m["$ref"].(string); ok {
		u, err := base.Parse(ref)
		if err != nil {
			return &Error{Pointer: prefix + pointerOf(path), Keyword: "$ref", Msg: fmt.Sprintf("%q is not a URI reference: %v", ref, err), Err: err}
		}
		m["$ref"] = u.String()
	}
	// The subschema keywords m has, in the order of the lists above:
	// looking each keyword up took longer than going through m's few
	// keys.
	var found [8]int
	subs := found[:0]
	for k := range m {
		subs = append(subs, r.places[k]...)
	}
	slices.Sort(subs)
	for _, i := range subs {
		switch {
		case i < len(schemaKeywords):
			k := schemaKeywords[i]
			if sub, ok := m[k].(map[string]any); ok {
				if err := r.walk(sub, prefix, append(path, k), base, d); err != nil {
					return err
				}
			}
		case i < len(schemaKeywords)+len(schemaListKeywords):
			k := schemaListKeywords[i-len(schemaKeywords)]
			if list, ok := m[k].([]any); ok {
				for i, sub := range list {
					if err := r.walk(sub, prefix, append(path, k, strconv.Itoa(i)), base, d); err != nil {
						return err
					}
				}
			}
		default:
			k := schemaMapKeywords[i-len(schemaKeywords)-len(schemaListKeywords)]
			if subs, ok := m[k].(map[string]any); ok {
				for name, sub := range subs {
					if err := r.walk(sub, prefix, append(path, k, name), base, d); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// subschemaPlaces maps each keyword of schemaKeywords,
// schemaListKeywords and schemaMapKeywords to its places in the three
// lists counted as one ("items", in two lists, has two).
func subschemaPlaces() map[string][]int {
	places := map[string][]int{}
	at := 0
	for _, list := range [][]string{schemaKeywords, schemaListKeywords, schemaMapKeywords} {
		for _, k := range list {
			places[k] = append(places[k], at)
			at++
		}
	}
	return places
}

// pointerOf is the JSON pointer of path, "#/a/b".
func pointerOf(path []string) string {
	var b strings.Builder
	b.WriteString("#")
	for _, p := range path {
		b.WriteString("/" + jsonptr.Escape(p))
	}
	return b.String()
}

// locate returns the location of the absolute reference ref, loading
// its document if need be.
func (r *refs) locate(ref string) (string, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("reference %q: %w", ref, err)
	}
	frag := u.Fragment
	u.Fragment, u.RawFragment = "", ""
	doc := u.String()
	loc, ok := r.ids[doc]
	if !ok {
		if r.load == nil {
			return "", fmt.Errorf("remote $ref %s refused: no Options.Loader", doc)
		}
		if _, seen := r.docs[doc]; seen {
			return "", fmt.Errorf("reference %q: no such schema in %s", ref, doc)
		}
		if err := r.fetch(doc); err != nil {
			return "", err
		}
		if loc, ok = r.ids[doc]; !ok {
			return "", fmt.Errorf("reference %q: no such schema in %s", ref, doc)
		}
	}
	switch {
	case frag == "":
		return loc, nil
	case strings.HasPrefix(frag, "/"):
		return loc + frag, nil
	}
	if a, ok := r.anchors[doc+"#"+frag]; ok {
		return a, nil
	}
	return "", fmt.Errorf("reference %q: no anchor %q in %s", ref, frag, doc)
}

// fetch loads the document at url with the Loader, within
// MaxDocuments and MaxSchemaBytes.
func (r *refs) fetch(docURL string) error {
	if len(r.docs) > MaxDocuments { // the root is one of r.docs
		return limitErrorf(limitDocuments, "loading %s: more than %d documents (MaxDocuments)", docURL, MaxDocuments)
	}
	r.docs[docURL] = nil // asked for, once
	raw, err := r.load(docURL)
	if err != nil {
		return fmt.Errorf("loading %s: %w", docURL, err)
	}
	if r.bytes += len(raw); r.bytes > MaxSchemaBytes {
		return limitErrorf(limitSchemaBytes, "loading %s: the documents take %d bytes together, more than the limit of %d (MaxSchemaBytes)", docURL, r.bytes, MaxSchemaBytes)
	}
	doc, order, err := decodeSchema(raw, true)
	if err != nil {
		var e *Error
		if errors.As(err, &e) { // the pointer within the loaded document
			at := e.Pointer
			if e.Keyword != "" {
				at += "/" + e.Keyword
			}
			return &limitError{limit: e.Limit, msg: fmt.Sprintf("loading %s: at %s: %s", docURL, at, e.Msg)}
		}
		return fmt.Errorf("loading %s: %w", docURL, err)
	}
	return r.add(docURL, docURL, doc, order)
}

// resolve returns the schema at location loc.
func (r *refs) resolve(loc string) (any, error) {
	prefix, p, _ := strings.Cut(loc, "#")
	cur, ok := r.docs[prefix]
	if !ok {
		return nil, fmt.Errorf("reference %q: no document %s", loc, prefix)
	}
	if p == "" {
		return cur, nil
	}
	for _, part := range strings.Split(p[1:], "/") {
		part = jsonptr.Unescape(part)
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[part]
			if !ok {
				return nil, fmt.Errorf("reference %q: no %q", loc, part)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("reference %q: bad index %q", loc, part)
			}
			cur = x[i]
		default:
			return nil, fmt.Errorf("reference %q: cannot descend into a %T", loc, cur)
		}
	}
	return cur, nil
}

// target resolves the $ref string ref: its location and its schema.
func (r *refs) target(ref string) (string, any, error) {
	loc, err := r.locate(ref)
	if err != nil {
		return "", nil, err
	}
	s, err := r.resolve(loc)
	return loc, s, err
}
