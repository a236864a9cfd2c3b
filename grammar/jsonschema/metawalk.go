package jsonschema

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"

	santhosh "github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/regex"
	"github.com/reins-go/reins/internal/jsonptr"
)

// metaWalk is what the metaschema checks (metaCheck2020,
// metaCheckDraft4, metaCheckDraft6 and metaCheckDraft7) share: where the walk is (the keys from the
// document's root, for the error's pointer), whether an object's keys
// are visited in order (for the same error every time), the check of one
// schema, which the helpers call on subschemas, and the helpers that
// check one value's shape with the validator's messages.
type metaWalk struct {
	path   []string
	sorted bool
	check  func(v any) error
	// keyBuf holds, one after another, the keys of every object the walk
	// has listed (see keys).
	keyBuf []string
}

// fail is an *Error at the walk's place: the pointer of the object and
// the keyword whose value is wrong.
func (w *metaWalk) fail(format string, args ...any) error {
	return w.errorHere("", "invalid schema: "+fmt.Sprintf(format, args...))
}

// errorHere is the *Error at the walk's place, of limit when it is one.
func (w *metaWalk) errorHere(limit, msg string) *Error {
	e := &Error{Pointer: pointerOf(w.path), Msg: msg, Limit: limit}
	if n := len(w.path); n > 0 {
		e.Pointer, e.Keyword = pointerOf(w.path[:n-1]), jsonptr.Escape(w.path[n-1])
	}
	return e
}

// in runs f one key or index deeper.
func (w *metaWalk) in(seg string, f func() error) error {
	w.path = append(w.path, seg)
	err := f()
	w.path = w.path[:len(w.path)-1]
	return err
}

// keys are m's keys, in order when the walk is sorted. They are listed
// in the walk's buffer, which only grows, so that a nested walk's keys
// go after them: an iterator over the map, or a slice per object, cost
// an allocation per object of the schema. The buffer ends up holding
// every key of the document once, a string header each, less than the
// decoded document holds already.
func (w *metaWalk) keys(m map[string]any) []string {
	start := len(w.keyBuf)
	for k := range m {
		w.keyBuf = append(w.keyBuf, k)
	}
	ks := w.keyBuf[start:len(w.keyBuf):len(w.keyBuf)]
	if w.sorted {
		slices.Sort(ks)
	}
	return ks
}

func asString(v any) (string, bool) { s, ok := v.(string); return s, ok }

func (w *metaWalk) str(v any) error {
	if _, ok := v.(string); !ok {
		return w.fail("expected string")
	}
	return nil
}

// format checks a string in one of the validator's formats.
func (w *metaWalk) format(v any, name string) error {
	if err := w.str(v); err != nil {
		return err
	}
	if name == "regex" {
		if err := w.regexSize(v.(string)); err != nil {
			return err
		}
	}
	if !santhosh.Formats[name](v) {
		return w.fail("%q is not valid %s", v, name)
	}
	return nil
}

func (w *metaWalk) number(v any) (*big.Rat, error) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, w.fail("expected number")
	}
	r, ok := new(big.Rat).SetString(n.String())
	if !ok {
		return nil, w.fail("expected number")
	}
	return r, nil
}

// count checks an integer ≥ 0 (maxLength and the like).
func (w *metaWalk) count(v any) error {
	r, err := w.number(v)
	if err != nil || !r.IsInt() {
		return w.fail("expected integer")
	}
	if r.Sign() < 0 {
		return w.fail("must be >= 0")
	}
	return nil
}

func (w *metaWalk) boolean(v any) error {
	if _, ok := v.(bool); !ok {
		return w.fail("expected boolean")
	}
	return nil
}

func (w *metaWalk) array(v any) ([]any, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, w.fail("expected array")
	}
	return a, nil
}

func (w *metaWalk) object(v any) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, w.fail("expected object")
	}
	return m, nil
}

// schemaMap checks an object of schemas (properties, $defs).
func (w *metaWalk) schemaMap(v any) error {
	m, err := w.object(v)
	if err != nil {
		return err
	}
	for _, k := range w.keys(m) {
		if err := w.in(k, func() error { return w.check(m[k]) }); err != nil {
			return err
		}
	}
	return nil
}

// schemaArray checks a non-empty array of schemas (allOf, anyOf, oneOf).
func (w *metaWalk) schemaArray(v any) error {
	a, err := w.array(v)
	if err != nil {
		return err
	}
	if len(a) == 0 {
		return w.fail("minimum 1 items required")
	}
	for i, x := range a {
		if err := w.in(strconv.Itoa(i), func() error { return w.check(x) }); err != nil {
			return err
		}
	}
	return nil
}

func (w *metaWalk) simpleType(v any) error {
	s, ok := v.(string)
	if !ok || !simpleTypes[s] {
		return w.fail("not a type name")
	}
	return nil
}

// unique checks that no two items of a are equal as JSON values.
func (w *metaWalk) unique(a []any) error {
	if len(a) > shortNames { // by key: a scan for each item is quadratic
		if keys, ok := valueKeys(a); ok {
			first := make(map[string]int, len(keys))
			for i, k := range keys {
				if j, dup := first[k]; dup {
					return w.fail("items at index %d and %d are equal", j, i)
				}
				first[k] = i
			}
			return nil
		}
	}
	for i := range a {
		for j := range i {
			if jsonEqual(a[i], a[j]) {
				return w.fail("items at index %d and %d are equal", j, i)
			}
		}
	}
	return nil
}

// types checks drafts 4 to 7's type: a type's name, or a non-empty
// list of distinct ones.
func (w *metaWalk) types(v any) error {
	a, ok := v.([]any)
	if !ok {
		return w.simpleType(v)
	}
	if len(a) == 0 {
		return w.fail("minimum 1 items required")
	}
	for i, t := range a {
		if err := w.in(strconv.Itoa(i), func() error { return w.simpleType(t) }); err != nil {
			return err
		}
	}
	return w.unique(a)
}

// distinctStrings checks a list of distinct strings (drafts 4 to 7's
// required, and the lists of dependencies).
func (w *metaWalk) distinctStrings(v any) error {
	a, err := w.array(v)
	if err != nil {
		return err
	}
	for i, x := range a {
		if err := w.in(strconv.Itoa(i), func() error { return w.str(x) }); err != nil {
			return err
		}
	}
	return w.unique(a)
}

// enum checks drafts 4 to 7's enum: a non-empty list of distinct values.
func (w *metaWalk) enum(v any) error {
	a, err := w.array(v)
	if err != nil {
		return err
	}
	if len(a) == 0 {
		return w.fail("minimum 1 items required")
	}
	return w.unique(a)
}

// patternProperties checks an object of schemas whose keys are regular
// expressions.
func (w *metaWalk) patternProperties(v any) error {
	m, err := w.object(v)
	if err != nil {
		return err
	}
	for _, p := range w.keys(m) {
		if err := w.regexSize(p); err != nil { // at patternProperties: the key may be 10 KB
			return err
		}
		if !santhosh.Formats["regex"](p) {
			return w.fail("%q is not valid regex%s", p, regexReason(p))
		}
	}
	return w.schemaMap(v)
}

// multipleOf checks a number > 0.
func (w *metaWalk) multipleOf(v any) error {
	r, err := w.number(v)
	if err != nil {
		return err
	}
	if r.Sign() <= 0 {
		return w.fail("must be > 0")
	}
	return nil
}

// dependencies checks an object whose values are each a schema or a
// list of property names (as names checks it).
func (w *metaWalk) dependencies(v any, names func(any) error) error {
	m, err := w.object(v)
	if err != nil {
		return err
	}
	for _, d := range w.keys(m) {
		x := m[d]
		err := w.in(d, func() error {
			if w.check(x) == nil || names(x) == nil {
				return nil
			}
			return w.fail("neither a schema nor a list of names")
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// regexSize refuses, as a limit, a regular expression whose counted
// repetitions spell out more characters than a grammar may take
// instructions (patternChars): the validator's regex format compiles
// it with Go's regexp, which took 370 MB for 11 KB of \pL{1000}
// before reins could refuse it. One that Go's parser does not read is
// left to the format.
func (w *metaWalk) regexSize(pattern string) error {
	if n, ok := patternChars(pattern); !ok || n <= grammar.MaxInst {
		return nil
	}
	return w.errorHere(limitGrammar, fmt.Sprintf("a pattern of %d bytes, whose grammar would take more than %d instructions (grammar.MaxInst)", len(pattern), grammar.MaxInst))
}

// patternChars returns regex.SpelledOut of pattern, counted up to just
// past grammar.MaxInst; false when Go's parser does not read it.
func patternChars(pattern string) (int, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0, false
	}
	return regex.SpelledOut(re, grammar.MaxInst), true
}

// patternSizes walks v, a schema the validator's metaschema is to check
// (draft 2019-09, or a $schema reins does not know), and applies
// regexSize to every pattern and patternProperties key in it.
func (w *metaWalk) patternSizes(v any) error {
	return walkPatterns(v, &w.path, w.regexSize)
}

// walkPatterns calls f with every pattern and patternProperties key of
// the schema document v, in key order, *path the place of the pattern
// (of a key: its patternProperties). It walks every value, the data of
// enum or const too (a property may be named "enum"), so f may meet a
// "pattern" of data.
func walkPatterns(v any, path *[]string, f func(pattern string) error) error {
	at := func(seg string, do func() error) error {
		*path = append(*path, seg)
		defer func() { *path = (*path)[:len(*path)-1] }()
		return do()
	}
	switch v := v.(type) {
	case []any:
		for i, x := range v {
			if err := at(strconv.Itoa(i), func() error { return walkPatterns(x, path, f) }); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			x := v[k]
			err := at(k, func() error {
				if s, ok := x.(string); ok && k == "pattern" {
					return f(s)
				}
				if m, ok := x.(map[string]any); ok && k == "patternProperties" {
					for _, p := range slices.Sorted(maps.Keys(m)) {
						if err := f(p); err != nil {
							return err
						}
					}
				}
				return walkPatterns(x, path, f)
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// regexReason says why Go's regexp refuses pattern, as ": reason" (the
// repeat count past RE2's limit, say), or "" when it does not: the
// validator's regex format refuses what Go's regexp cannot compile,
// after rewriting ECMA-262's syntax.
func regexReason(pattern string) string {
	if _, err := regexp.Compile(pattern); err != nil {
		return ": " + err.Error()
	}
	return ""
}
