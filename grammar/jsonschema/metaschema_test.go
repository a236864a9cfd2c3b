package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	santhosh "github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/internal/shared"
)

// keywordValues are values of every JSON kind, and the edge cases of the
// metaschema's constraints (negative and fractional counts, a bad regex,
// a bad URI and anchor, duplicate names, empty and non-schema arrays).
var keywordValues = []string{
	`null`, `true`, `false`, `0`, `3`, `-1`, `1.5`, `2.0`, `1e400`,
	`""`, `"string"`, `"x y"`, `"a#b"`, `"#a"`, `"http://x/y"`, `"::"`, `"^("`, `"_a-1.b"`, `"1a"`,
	`[]`, `[1]`, `["a"]`, `["a", "a"]`, `["string", "null"]`, `["string", "string"]`, `["strin"]`, `[{}]`, `[true, {"type": 1}]`,
	`{}`, `{"a": 1}`, `{"a": {}}`, `{"a": true}`, `{"a": ["b"]}`, `{"a": ["b", "b"]}`, `{"^(": {}}`, `{"a": {"type": "x"}}`,
	`{"http://x/v": true}`, `{"::": true}`,
}

// metaschemaCorpus is every keyword the metaschema names (and an unknown
// one), each given every value of keywordValues, at the root and nested
// below a subschema keyword.
func metaschemaCorpus(t *testing.T) []string {
	var flat map[string]any
	require.NoError(t, json.Unmarshal([]byte(flatDraft2020), &flat))
	keywords := []string{"x-unknown"}
	for kw := range flat["properties"].(map[string]any) {
		keywords = append(keywords, kw)
	}
	var out []string
	for _, kw := range keywords {
		for _, v := range keywordValues {
			k, _ := json.Marshal(kw)
			member := string(k) + ": " + v
			out = append(out,
				"{"+member+"}",
				`{"properties": {"p": {`+member+`}}}`,
				`{"items": {"anyOf": [{`+member+`}]}}`,
				`{"$defs": {"d": {"not": {`+member+`}}}}`,
				`{"dependencies": {"d": {`+member+`}}}`,
			)
		}
	}
	return out
}

// checkCorpus calls check with every document of corpus, decoded, and
// wants rejected to have counted over 1,000 of them refused: a corpus of
// valid schemas only would let a check that refuses nothing pass.
func checkCorpus(t *testing.T, corpus []string, check func(what string, doc any), rejected func() int) {
	t.Helper()
	for _, text := range corpus {
		doc, err := decodeJSON([]byte(text))
		require.NoError(t, err, text)
		check(text, doc)
	}
	assert.Greater(t, rejected(), 1000, "the corpus must hold invalid schemas for the test to mean anything")
}

// TestFlatMetaschemaAgrees checks that draft 2020-12's metaschema in one
// document accepts exactly what the original accepts: on every keyword
// with values of every kind, on the official suite's draft 2020-12
// schemas and on maskbench-dev's schemas.
func TestFlatMetaschemaAgrees(t *testing.T) {
	official, err := santhosh.NewCompiler().Compile(draft2020URL)
	require.NoError(t, err)
	metas, err := metaschemas()
	require.NoError(t, err)
	flat := metas[draft2020URL]
	rejected := 0
	quirks := 0
	check := func(what string, doc any) {
		t.Helper()
		want, got := official.Validate(doc), flat.Validate(doc)
		if want != nil {
			rejected++
		}
		if want == nil && got != nil && nestedDefinitionsQuirk(got) {
			quirks++
			return
		}
		assert.Equal(t, want == nil, got == nil, "%s: the original says %v, the flat one %v", what, want, got)
	}
	checkCorpus(t, metaschemaCorpus(t), check, func() int { return rejected })
	// definitions and dependencies holding {"a": {"type": "x"}}, below
	// properties, anyOf and not: the library's quirk, and nothing else.
	assert.Equal(t, 2*3, quirks)

	suite := shared.Path(t, "json-schema-test-suite")
	files, _ := filepath.Glob(filepath.Join(suite, "draft2020-12", "*.json"))
	require.NotEmpty(t, files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var groups []struct{ Schema json.RawMessage }
		require.NoError(t, json.Unmarshal(raw, &groups))
		for i, g := range groups {
			doc, err := decodeJSON(g.Schema)
			require.NoError(t, err)
			check(filepath.Base(f)+"#"+string(rune('0'+i%10)), doc)
		}
	}
	files, _ = filepath.Glob(filepath.Join(shared.Path(t, "maskbench-dev"), "*.json"))
	require.NotEmpty(t, files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var mb struct{ Schema json.RawMessage }
		require.NoError(t, json.Unmarshal(raw, &mb))
		doc, err := decodeJSON(mb.Schema)
		require.NoError(t, err)
		if m, ok := doc.(map[string]any); ok {
			delete(m, "$schema") // checked as draft 2020-12, whatever it names
		}
		check(filepath.Base(f), doc)
	}
}

// nestedDefinitionsQuirk reports whether err (from the flat metaschema)
// finds the fault only inside a member of definitions or dependencies
// below the root. There the validator's own metaschema accepts anything
// its applicator vocabulary accepts: it resolves the $dynamicRef #meta
// of the root metaschema's definitions and dependencies, when reached
// through a vocabulary's own $dynamicRef, to that vocabulary, where the
// specification takes the outermost #meta, the whole metaschema (so
// {"not": {"definitions": {"a": {"type": "x"}}}} is invalid, as the flat
// one says).
func nestedDefinitionsQuirk(err error) bool {
	var ve *santhosh.ValidationError
	if !errors.As(err, &ve) {
		return false
	}
	var leaves func(e *santhosh.ValidationError) bool
	leaves = func(e *santhosh.ValidationError) bool {
		if len(e.Causes) == 0 {
			return nestedMember.MatchString(e.InstanceLocation)
		}
		for _, c := range e.Causes {
			if !leaves(c) {
				return false
			}
		}
		return true
	}
	return leaves(ve)
}

var nestedMember = regexp.MustCompile(`^/.+/(definitions|dependencies)/[^/]+(/|$)`)

// FuzzFlatMetaschema compares the two forms of draft 2020-12's
// metaschema on arbitrary documents.
func FuzzFlatMetaschema(f *testing.F) {
	for _, s := range []string{
		`{"type": ["string", "string"]}`, `{"properties": {"a": {"minLength": -1}}}`,
		`{"$defs": {"a": {"$anchor": "1a"}}}`, `{"dependencies": {"a": ["b", "b"]}}`,
		`{"patternProperties": {"^(": {}}}`, `{"allOf": []}`, `{"$id": "a#b"}`,
	} {
		f.Add(s)
	}
	official, err := santhosh.NewCompiler().Compile(draft2020URL)
	require.NoError(f, err)
	metas, err := metaschemas()
	require.NoError(f, err)
	flat := metas[draft2020URL]
	f.Fuzz(func(t *testing.T, text string) {
		dec := json.NewDecoder(bytes.NewReader([]byte(text)))
		dec.UseNumber()
		var doc any
		if dec.Decode(&doc) != nil {
			return
		}
		want, got := official.Validate(doc), flat.Validate(doc)
		if (want == nil) != (got == nil) && !(want == nil && nestedDefinitionsQuirk(got)) {
			t.Fatalf("%s: the original says %v, the flat one %v", text, want, got)
		}
	})
}

// TestMetaCheckAgrees checks metaCheck2020 against the validator with
// the flat draft 2020-12 metaschema, which Compile used to check with:
// the same verdict on the metaschema corpus, the official suite's draft
// 2020-12 schemas and maskbench-dev's schemas.
func TestMetaCheckAgrees(t *testing.T) {
	metas, err := metaschemas()
	require.NoError(t, err)
	flat := metas[draft2020URL]
	rejected := 0
	check := func(what string, doc any) {
		t.Helper()
		want, got := flat.Validate(doc), metaCheck2020(doc)
		if want != nil {
			rejected++
		}
		assert.Equal(t, want == nil, got == nil, "%s: the validator says %v, metaCheck2020 %v", what, want, got)
	}
	checkCorpus(t, metaschemaCorpus(t), check, func() int { return rejected })
	forSharedSchemas(t, check)
}

// forSharedSchemas calls check with every schema of the official
// suite (drafts 2020-12 and 7) and of a quarter of maskbench-dev (all of
// it with REINS_SWEEP set), decoded.
func forSharedSchemas(t *testing.T, check func(what string, doc any)) {
	t.Helper()
	for _, dir := range []string{"draft2020-12", "draft7"} {
		files, _ := filepath.Glob(filepath.Join(shared.Path(t, "json-schema-test-suite"), dir, "*.json"))
		for _, f := range files {
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			var groups []struct{ Schema json.RawMessage }
			require.NoError(t, json.Unmarshal(raw, &groups))
			for _, g := range groups {
				doc, err := decodeJSON(g.Schema)
				require.NoError(t, err)
				check(filepath.Base(f), doc)
			}
		}
	}
	// A quarter of maskbench-dev (all of it with REINS_SWEEP=1).
	files, _ := filepath.Glob(filepath.Join(shared.Path(t, "maskbench-dev"), "*.json"))
	for _, f := range shared.Sample(files, 4) {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var mb struct{ Schema json.RawMessage }
		require.NoError(t, json.Unmarshal(raw, &mb))
		doc, err := decodeJSON(mb.Schema)
		require.NoError(t, err)
		check(filepath.Base(f), doc)
	}
}

// TestMetaCheckDraft4Agrees checks metaCheckDraft4 against the validator
// with draft 4's metaschema, on the metaschema corpus (with draft 4's own
// keywords), the official suite's and maskbench-dev's schemas.
func TestMetaCheckDraft4Agrees(t *testing.T) {
	meta, err := santhosh.NewCompiler().Compile("http://json-schema.org/draft-04/schema")
	require.NoError(t, err)
	rejected := 0
	check := func(what string, doc any) {
		t.Helper()
		want, got := meta.Validate(doc), metaCheckDraft4(doc)
		if want != nil {
			rejected++
		}
		assert.Equal(t, want == nil, got == nil, "%s: the validator says %v, metaCheckDraft4 %v", what, want, got)
	}
	corpus := metaschemaCorpus(t)
	for _, kw := range []string{"id", "regexProperties", "exclusiveMinimum", "exclusiveMaximum"} {
		for _, v := range keywordValues {
			k, _ := json.Marshal(kw)
			corpus = append(corpus, "{"+string(k)+": "+v+"}", `{"minimum": 1, "maximum": 2, `+string(k)+": "+v+"}",
				`{"properties": {"p": {"minimum": 0, `+string(k)+": "+v+"}}}")
		}
	}
	checkCorpus(t, corpus, check, func() int { return rejected })
	forSharedSchemas(t, check)
}

// TestMetaCheckDraft6And7Agree checks metaCheckDraft6 and
// metaCheckDraft7 against the validator with those drafts' metaschemas,
// on the metaschema corpus (with the keywords drafts 6 and 7 have and
// 2020-12 has not), the official suite's and maskbench-dev's schemas.
func TestMetaCheckDraft6And7Agree(t *testing.T) {
	corpus := metaschemaCorpus(t)
	for _, kw := range []string{"additionalItems", "regexProperties", "definitions", "dependencies"} {
		for _, v := range keywordValues {
			k, _ := json.Marshal(kw)
			corpus = append(corpus, "{"+string(k)+": "+v+"}", `{"properties": {"p": {`+string(k)+": "+v+"}}}",
				`{"items": [{`+string(k)+": "+v+"}]}")
		}
	}
	for _, draft := range []struct {
		url   string
		check func(any) error
	}{{draft6URL, metaCheckDraft6}, {draft7URL, metaCheckDraft7}} {
		meta, err := santhosh.NewCompiler().Compile(draft.url)
		require.NoError(t, err)
		rejected := 0
		check := func(what string, doc any) {
			t.Helper()
			want, got := meta.Validate(doc), draft.check(doc)
			if want != nil {
				rejected++
			}
			assert.Equal(t, want == nil, got == nil, "%s under %s: the validator says %v, reins %v", what, draft.url, want, got)
		}
		checkCorpus(t, corpus, check, func() int { return rejected })
		forSharedSchemas(t, check)
	}
}

// TestMetaCheckLongUniqueLists checks uniqueness in lists longer than
// shortNames (found by key, not by comparing every pair) against the
// validator: required names, and draft 4's enum with numbers equal in
// value but spelled apart, each with and without a repeat.
func TestMetaCheckLongUniqueLists(t *testing.T) {
	meta4, err := santhosh.NewCompiler().Compile("http://json-schema.org/draft-04/schema")
	require.NoError(t, err)
	metas, err := metaschemas()
	require.NoError(t, err)
	names := func(repeat bool) string {
		out := list(2*shortNames, func(i int) string { return fmt.Sprintf(`"n%d"`, i) })
		if repeat {
			out += `, "n3"`
		}
		return out
	}
	numbers := func(repeat bool) string {
		out := list(2*shortNames, func(i int) string { return fmt.Sprintf("%d", i) })
		if repeat {
			out += ", 30e-1" // 3 again
		}
		return out
	}
	for _, repeat := range []bool{false, true} {
		doc, err := decodeJSON([]byte(`{"required": [` + names(repeat) + `]}`))
		require.NoError(t, err)
		got := metaCheck2020(doc)
		assert.Equal(t, metas[draft2020URL].Validate(doc) == nil, got == nil, "required, repeat %v: %v", repeat, got)
		assert.Equal(t, repeat, got != nil, "required, repeat %v", repeat)
		doc, err = decodeJSON([]byte(`{"enum": [` + numbers(repeat) + `]}`))
		require.NoError(t, err)
		got = metaCheckDraft4(doc)
		assert.Equal(t, meta4.Validate(doc) == nil, got == nil, "enum, repeat %v: %v", repeat, got)
		if repeat {
			require.Error(t, got)
			assert.Contains(t, got.Error(), fmt.Sprintf("items at index 3 and %d are equal", 2*shortNames))
		}
	}
}

// FuzzMetaCheck checks metaCheck2020, metaCheckDraft4, metaCheckDraft6
// and metaCheckDraft7 against the validator with the same metaschemas on
// fuzzed documents.
func FuzzMetaCheck(f *testing.F) {
	for _, s := range []string{
		`{"type": ["string", "string"]}`, `{"properties": {"a": {"minLength": -1}}}`,
		`{"$defs": {"a": {"$anchor": "1a"}}}`, `{"dependencies": {"a": ["b", "b"]}}`,
		`{"patternProperties": {"^(": {}}}`, `{"allOf": []}`, `{"$id": "a#b"}`,
		`{"enum": [1, 1.0]}`, `{"exclusiveMinimum": true}`, `{"items": [true]}`, `{"required": []}`,
	} {
		f.Add(s)
	}
	metas, err := metaschemas()
	require.NoError(f, err)
	flat, draft4 := metas[draft2020URL], metas[draft4URL]
	draft6, draft7 := metas[draft6URL], metas[draft7URL]
	f.Fuzz(func(t *testing.T, text string) {
		doc, err := decodeJSON([]byte(text))
		if err != nil {
			return
		}
		if want, got := flat.Validate(doc), metaCheck2020(doc); (want == nil) != (got == nil) {
			t.Fatalf("%s: the validator says %v, metaCheck2020 %v", text, want, got)
		}
		if want, got := draft4.Validate(doc), metaCheckDraft4(doc); (want == nil) != (got == nil) {
			t.Fatalf("%s: the validator says %v, metaCheckDraft4 %v", text, want, got)
		}
		if want, got := draft6.Validate(doc), metaCheckDraft6(doc); (want == nil) != (got == nil) {
			t.Fatalf("%s: the validator says %v, metaCheckDraft6 %v", text, want, got)
		}
		if want, got := draft7.Validate(doc), metaCheckDraft7(doc); (want == nil) != (got == nil) {
			t.Fatalf("%s: the validator says %v, metaCheckDraft7 %v", text, want, got)
		}
	})
}

// TestSchemaErrorsDeterministic checks that a schema with several
// faults gets the same error every time, under each draft's check (the
// validator's and reins' own walks visit objects in map order).
func TestSchemaErrorsDeterministic(t *testing.T) {
	faults := `"properties": {"b": {"maxLength": -1}, "a": {"minimum": "x"}, "c": {"type": "strin"}, "d": {"maxItems": -2}},
		"definitions": {"x": {"minLength": -1}, "y": {"type": 1}},
		"dependencies": {"p": {"maxLength": -1}, "q": {"type": 2}},
		"patternProperties": {"(": {}, "[": {}}`
	for _, draft := range []string{
		`"$schema": "http://json-schema.org/draft-04/schema#",`,
		`"$schema": "http://json-schema.org/draft-07/schema#",`,
		``, // 2020-12
		`"dependentRequired": {"m": [1], "n": [2]}, "$vocabulary": {"::": true, ":::": false},`,
	} {
		schema := []byte("{" + draft + faults + "}")
		_, first := Compile(schema, Options{})
		require.Error(t, first, "%s", schema)
		for range 30 {
			_, err := Compile(schema, Options{})
			require.Equal(t, first.Error(), err.Error(), "%s", schema)
		}
	}
}
