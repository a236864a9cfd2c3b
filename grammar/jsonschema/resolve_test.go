package jsonschema

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/grammar"
)

func TestRefsInsideTheDocument(t *testing.T) {
	runKeywordCases(t, []keywordCase{
		{
			name: "$id below the root changes the base of its $refs",
			schema: `{"$id": "http://example.com/root.json",
				"properties": {"a": {"$id": "sub/a.json", "$defs": {"n": {"type": "integer"}}, "items": {"$ref": "#/$defs/n"}}},
				"$defs": {"n": {"type": "string"}},
				"additionalProperties": {"$ref": "sub/a.json"}}`,
			valid:   []string{`{"a": [1, 2]}`, `{"b": [3]}`, `{}`},
			invalid: []string{`{"a": ["x"]}`, `{"b": ["x"]}`},
		},
		{
			// walk finds the subschemas by m's own keys: a $ref below each
			// kind of keyword (a schema, a list, a map, and items both as
			// a schema and, in draft 7, as a list) resolves against the
			// $id above it.
			name: "$id bases below every kind of subschema keyword",
			schema: `{"$schema": "http://json-schema.org/draft-07/schema#", "$id": "http://x.org/root.json",
				"definitions": {"i": {"$id": "d/i.json", "type": "integer"}, "s": {"$id": "d/s.json", "type": "string"}},
				"type": "array",
				"items": [
					{"$id": "d/t0.json", "items": {"$ref": "i.json"}},
					{"$id": "d/t1.json", "anyOf": [{"$ref": "s.json"}]},
					{"$id": "d/t2.json", "properties": {"p": {"not": {"$ref": "s.json"}}}}
				]}`,
			valid:   []string{`[[1], "a", {"p": 1}]`, `[]`},
			invalid: []string{`[["x"]]`, `[[], 1]`, `[[], "a", {"p": "b"}]`},
		},
		{
			name:    "$anchor",
			schema:  `{"$defs": {"x": {"$anchor": "pos", "type": "integer", "minimum": 1}}, "items": {"$ref": "#pos"}}`,
			valid:   []string{`[1, 5]`, `[]`},
			invalid: []string{`[0]`, `["1"]`},
		},
		{
			name:    "a draft 7 anchor written as $id",
			schema:  `{"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"x": {"$id": "#s", "type": "string"}}, "items": {"$ref": "#s"}}`,
			valid:   []string{`["a"]`},
			invalid: []string{`[1]`},
		},
		{
			name:    "draft 4 id",
			schema:  `{"$schema": "http://json-schema.org/draft-04/schema#", "id": "http://x.org/r.json", "definitions": {"x": {"id": "other.json", "type": "boolean"}}, "items": {"$ref": "other.json"}}`,
			valid:   []string{`[true]`},
			invalid: []string{`[1]`},
		},
		{
			// A merged $ref keeps its target's assertions, also in drafts
			// that ignore the siblings of $ref.
			name: "draft 7 allOf of a reference to a reference",
			schema: `{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"b": {}}, "required": ["b"], "allOf": [{"$ref": "#/definitions/x"}],
				"definitions": {"x": {"allOf": [{"$ref": "#/definitions/inner"}]}, "inner": {"properties": {"bar": {"type": "string"}}}}}`,
			valid:   []string{`{"bar": "s", "b": 1}`},
			invalid: []string{`{"bar": 1, "b": 1}`, `{"bar": "s"}`},
		},
	})
}

// mapLoader serves documents from a map and counts the loads.
type mapLoader struct {
	docs  map[string]string
	loads map[string]int
}

func (m *mapLoader) load(url string) ([]byte, error) {
	m.loads[url]++
	d, ok := m.docs[url]
	if !ok {
		return nil, fmt.Errorf("no document %s", url)
	}
	return []byte(d), nil
}

func TestLoader(t *testing.T) {
	l := &mapLoader{loads: map[string]int{}, docs: map[string]string{
		"https://example.com/defs.json": `{"$defs": {"id": {"type": "integer", "minimum": 1}, "name": {"$ref": "strings.json#short"},
			"bad": {"$dynamicRef": "#x"}}}`,
		"https://example.com/strings.json": `{"$defs": {"s": {"$anchor": "short", "type": "string", "maxLength": 3}}}`,
	}}
	schema := `{"properties": {"id": {"$ref": "defs.json#/$defs/id"}, "name": {"$ref": "https://example.com/defs.json#/$defs/name"}}, "required": ["id"]}`
	opts := Options{BaseURI: "https://example.com/root.json", Loader: l.load}
	g, err := Compile([]byte(schema), opts)
	require.NoError(t, err)
	p, err := grammar.Compile(g)
	require.NoError(t, err)
	v, err := NewValidator([]byte(schema), opts)
	require.NoError(t, err)
	for text, valid := range map[string]bool{
		`{"id": 1}`: true, `{"id": 2, "name": "abc"}`: true,
		`{"id": 0}`: false, `{"name": "a"}`: false, `{"id": 1, "name": "abcd"}`: false, `{"id": 1, "name": 1}`: false,
	} {
		require.Equal(t, valid, v.Validate([]byte(text)) == nil, "test case wrong: %s", text)
		assert.Equal(t, valid, acceptsText(p, text), text)
	}
	// Compile loads each document once; NewValidator once more.
	assert.Equal(t, map[string]int{"https://example.com/defs.json": 2, "https://example.com/strings.json": 2}, l.loads)

	// An error inside a loaded document names it.
	_, err = Compile([]byte(`{"items": {"$ref": "defs.json#/$defs/bad"}}`), opts)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "https://example.com/defs.json#/$defs/bad", e.Pointer)
	assert.Equal(t, "$dynamicRef", e.Keyword)
	// A missing document, anchor or Loader is an error that names the
	// reference.
	for _, tc := range []struct {
		schema, msg string
		opts        Options
	}{
		{`{"items": {"$ref": "nowhere.json"}}`, "no document https://example.com/nowhere.json", opts},
		{`{"items": {"$ref": "defs.json#nope"}}`, `no anchor "nope" in https://example.com/defs.json`, opts},
		{`{"items": {"$ref": "http://example.com/defs.json"}}`, "remote $ref http://example.com/defs.json refused: no Options.Loader", Options{}},
	} {
		_, err := Compile([]byte(tc.schema), tc.opts)
		require.ErrorContains(t, err, tc.msg, tc.schema)
	}
}

// TestRefErrors checks the resolver's errors for a missing anchor, a
// missing document and a missing Loader.
func TestRefErrors(t *testing.T) {
	l := &mapLoader{loads: map[string]int{}, docs: map[string]string{"https://example.com/d.json": `{"$defs": {}}`}}
	for _, tc := range []struct {
		ref, msg string
		load     Loader
	}{
		{"https://example.com/d.json#nope", `no anchor "nope"`, l.load},
		{"https://example.com/e.json", "no document https://example.com/e.json", l.load},
		{"https://example.com/d.json", "no Options.Loader", nil},
	} {
		doc, order, err := decodeSchema([]byte(`{}`), false)
		require.NoError(t, err)
		r, err := newRefs(doc, order, 2, DefaultBaseURI, tc.load)
		require.NoError(t, err)
		_, _, err = r.target(tc.ref)
		assert.ErrorContains(t, err, tc.msg, tc.ref)
	}
}

// TestInvalidSchemas checks that Compile refuses schemas their draft's
// metaschema rejects, and takes what each draft allows.
func TestInvalidSchemas(t *testing.T) {
	for _, tc := range []struct {
		schema string
		valid  bool
	}{
		{`{"type": 5}`, false},
		{`{"minLength": -1}`, false},
		{`{"properties": []}`, false},
		{`{"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 0, "exclusiveMinimum": true}`, true},
		{`{"minimum": 0, "exclusiveMinimum": true}`, false}, // a number since draft 6
		{`{"$schema": "http://json-schema.org/draft-07/schema", "items": [{"type": "string"}]}`, true},
		{`{"$schema": "https://json-schema.org/draft/2020-12/schema", "items": [{"type": "string"}]}`, false},
	} {
		_, err := Compile([]byte(tc.schema), Options{})
		_, verr := NewValidator([]byte(tc.schema), Options{})
		assert.Equal(t, verr == nil, tc.valid, "test case wrong: %s: %v", tc.schema, verr)
		if tc.valid {
			assert.NoError(t, err, tc.schema)
		} else {
			assert.ErrorContains(t, err, "invalid schema", tc.schema)
		}
	}
}

// TestTrailingData checks that a schema or an instance with anything
// after its JSON value is refused, not read up to the value (FuzzCompile
// found {}0 compiling as {}).
func TestTrailingData(t *testing.T) {
	_, err := Compile([]byte(`{}0`), Options{})
	assert.ErrorContains(t, err, "not JSON")
	_, err = Compile([]byte("{} \n"), Options{})
	assert.NoError(t, err)
	v, err := NewValidator([]byte(`{}`), Options{})
	require.NoError(t, err)
	assert.Error(t, v.Validate([]byte(`1 2`)))
	assert.NoError(t, v.Validate([]byte(" 1\n")))
}
