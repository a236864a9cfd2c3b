package extract

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/grammar/jsonschema"
	"github.com/reins-go/reins/internal/fixture"
)

var (
	schemaPath = filepath.Join("..", "testdata", "extract", "person.schema.json")
	inputs     = []string{filepath.Join("..", "testdata", "extract", "docs"), filepath.Join("..", "testdata", "extract", "more.jsonl")}
)

func readRecords(t *testing.T, b []byte) []Record {
	t.Helper()
	var out []Record
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var r Record
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), sc.Text())
		out = append(out, r)
	}
	return out
}

// TestExtractTestdata: over the testdata documents, every value validates against the schema; every confidence, raw
// probability and alternative's probability is in [0, 1]; every leaf
// has a confidence; the field the schema forces ("kind", a const) has
// confidence 1; the alternatives of an enum or boolean sum to 1, and the
// confidence is the chosen value's.
func TestExtractTestdata(t *testing.T) {
	schema, err := os.ReadFile(schemaPath)
	require.NoError(t, err)
	docs, err := ReadInputs(inputs, nil)
	require.NoError(t, err)
	require.Len(t, docs, 5)
	for name, m := range map[string]*reins.Model{"logits": reins.Builtin()} {
		x, err := NewFile(m, schemaPath, &Options{Temperature: 1, Seed: 7})
		require.NoError(t, err)
		var out bytes.Buffer
		st, err := x.Run(context.Background(), docs, &out, &RunOptions{Concurrency: 3})
		require.NoError(t, err)
		assert.Equal(t, Stats{Done: 5}, st, name)
		recs := readRecords(t, out.Bytes())
		require.Len(t, recs, 5)
		for i, r := range recs {
			assert.Equal(t, docs[i].ID, r.ID, "records are in the documents' order")
			require.Empty(t, r.Error, "%s %s", name, r.ID)
			require.NoError(t, jsonschema.Validate(schema, r.Value), "%s %s: %s", name, r.ID, r.Value)
			leaves, err := Leaves(r.Value)
			require.NoError(t, err)
			require.Len(t, r.Confidence, len(leaves))
			for _, l := range leaves {
				c, ok := r.Confidence[l.Pointer]
				require.True(t, ok, "%s: no confidence for %s", r.ID, l.Pointer)
				assert.True(t, c >= 0 && c <= 1, "%s %s: confidence %g", r.ID, l.Pointer, c)
				raw := r.Raw[l.Pointer]
				assert.True(t, raw >= 0 && raw <= 1, "%s %s: raw %g", r.ID, l.Pointer, raw)
			}
			assert.Equal(t, 1.0, r.Confidence["/kind"], "the schema forces kind")
			for _, p := range []string{"/pet", "/married"} {
				alts := r.Alternatives[p]
				require.NotEmpty(t, alts, "%s %s", r.ID, p)
				var sum float64
				var chosen float64 = -1
				var v map[string]json.RawMessage
				require.NoError(t, json.Unmarshal(r.Value, &v))
				for _, a := range alts {
					assert.True(t, a.Prob >= 0 && a.Prob <= 1)
					sum += a.Prob
					if string(a.Value) == string(v[p[1:]]) {
						chosen = a.Prob
					}
				}
				assert.InDelta(t, 1, sum, 1e-5, "%s %s", r.ID, p)
				assert.Equal(t, chosen, r.Confidence[p], "%s %s", r.ID, p)
			}
			assert.Len(t, r.Alternatives["/pet"], 4)
			assert.Len(t, r.Alternatives["/married"], 2)
		}
	}
}

// TestExtractOnAServer: on a text server the value is valid and the
// alternatives say they come from its top alternatives. (The fixture's
// server offers 20 alternatives from a bigram table, which after a
// quote are bytes in id order: a schema of strings would stall it, so
// this one is a boolean.)
func TestExtractOnAServer(t *testing.T) {
	m := reins.New(&fixture.TextBackend{B: fixture.New().NewBackend(), TopK: 20})
	x, err := New(m, []byte(`{"type": "boolean"}`), nil)
	require.NoError(t, err)
	res, err := x.Extract(context.Background(), "The sky is blue.")
	require.NoError(t, err)
	require.Contains(t, []string{"true", "false"}, string(res.Value))
	require.Len(t, res.Fields, 1)
	f := res.Fields[0]
	assert.Equal(t, "", f.Pointer)
	require.Len(t, f.Alternatives, 2)
	var sum float64
	for _, a := range f.Alternatives {
		sum += a.Prob
		assert.True(t, a.TopK)
	}
	assert.InDelta(t, 1, sum, 1e-9)
	assert.True(t, f.Confidence >= 0 && f.Confidence <= 1)
}

// TestAlternativesAreScores: on the local model, an enum's
// alternatives' probabilities are the exponentiated scores of each in
// context (the JSON before it), followed by the JSON text after it up to
// the next value, normalised.
func TestAlternativesAreScores(t *testing.T) {
	m := reins.Builtin()
	x, err := New(m, []byte(`{"type": "object", "properties": {"pet": {"enum": ["cat", "dog"]}, "n": {"type": "integer", "maximum": 9}},
		"required": ["pet", "n"], "additionalProperties": false}`), nil)
	require.NoError(t, err)
	res, err := x.Extract(context.Background(), "The dog ran.")
	require.NoError(t, err)
	text := string(res.Value)
	var pet *Field
	for i := range res.Fields {
		if res.Fields[i].Pointer == "/pet" {
			pet = &res.Fields[i]
		}
	}
	require.NotNil(t, pet)
	i := strings.Index(text, string(pet.Value))
	next := strings.IndexAny(text[i+len(pet.Value):], "0123456789}")
	then := text[i+len(pet.Value) : i+len(pet.Value)+next]
	if strings.HasPrefix(text[i+len(pet.Value):], "}") {
		then = "}"
	}
	ctx := x.Prompt("The dog ran.") + text[:i]
	// Healing takes back the prompt's last token, ":" in the fixture's
	// tokenization, and spells it again before each alternative.
	require.True(t, strings.HasSuffix(ctx, ":"))
	var scores []float64
	for _, a := range pet.Alternatives {
		s, err := m.Score(context.Background(), ":"+string(a.Value)+then, reins.ScoreOptions{Context: ctx[:len(ctx)-1]})
		require.NoError(t, err)
		scores = append(scores, s.Sum)
	}
	z := 0.0
	for _, s := range scores {
		z += mathExp(s)
	}
	for k, a := range pet.Alternatives {
		assert.InDelta(t, scores[k], a.Logprob, 1e-9, "%s", a.Value)
		assert.InDelta(t, mathExp(scores[k])/z, a.Prob, 1e-9, "%s", a.Value)
	}
}

// TestResumeGivesTheSameFile: a run interrupted after two documents,
// with a last line cut in the middle, then resumed, writes the same file
// as a run that was not interrupted.
func TestResumeGivesTheSameFile(t *testing.T) {
	m := reins.Builtin()
	x, err := NewFile(m, schemaPath, nil)
	require.NoError(t, err)
	docs, err := ReadInputs(inputs, nil)
	require.NoError(t, err)
	dir := t.TempDir()

	whole := filepath.Join(dir, "whole.jsonl")
	f, done, err := Resume(whole)
	require.NoError(t, err)
	assert.Empty(t, done)
	_, err = x.Run(context.Background(), docs, f, &RunOptions{Concurrency: 2})
	require.NoError(t, err)
	require.NoError(t, f.Close())

	cut := filepath.Join(dir, "cut.jsonl")
	f, _, err = Resume(cut)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	st, err := x.Run(ctx, docs, f, &RunOptions{Concurrency: 2, Progress: func(done, total int) {
		if done == 2 {
			cancel()
		}
	}})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 2, st.Done, "nothing is written after the cut")
	written := st.Done
	_, err = f.WriteString(`{"id":"max","value":{"age":`) // killed while writing
	require.NoError(t, err)
	require.NoError(t, f.Close())

	f, done, err = Resume(cut)
	require.NoError(t, err)
	assert.Len(t, done, written, "the cut line is not a record")
	st, err = x.Run(context.Background(), docs, f, &RunOptions{Concurrency: 3, Skip: done})
	require.NoError(t, err)
	assert.Equal(t, Stats{Done: 5 - written, Skipped: written}, st)
	require.NoError(t, f.Close())

	a, err := os.ReadFile(whole)
	require.NoError(t, err)
	b, err := os.ReadFile(cut)
	require.NoError(t, err)
	assert.Equal(t, string(a), string(b))
	assert.Len(t, readRecords(t, b), 5)
}

// TestFailedDocumentsAreRecorded: a document that cannot be read, and
// one whose extraction fails, are recorded with their errors, and the
// run goes on to the others.
func TestFailedDocumentsAreRecorded(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("The cat sat."), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.txt"), []byte("bad \xff bytes"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "c.jsonl"), []byte("{\"id\": \"c1\", \"text\": \"The dog.\"}\nnot json\n{\"id\": \"c3\"}\n{\"id\": \"c4\", \"text\": \"bad \xff\"}\n{\"id\": \"\", \"text\": \"The end.\"}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".hidden"), []byte("x"), 0o644))
	docs, err := ReadInputs([]string{dir}, nil)
	require.NoError(t, err)
	var ids []string
	for _, d := range docs {
		ids = append(ids, d.ID)
	}
	c := filepath.Join(dir, "c.jsonl")
	assert.Equal(t, []string{filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt"), "c1", c + ":2", "c3", c + ":4", c + ":5"}, ids, "an empty ID is FILE:LINE")
	assert.Equal(t, c+":4", docs[5].Source)
	assert.EqualError(t, docs[5].Err, "not UTF-8 text", "not read as U+FFFD")
	docs = docs[:5]

	x, err := New(reins.Builtin(), []byte(`{"type": "object", "properties": {"name": {"type": "string", "minLength": 3, "maxLength": 5}},
		"required": ["name"]}`), nil)
	require.NoError(t, err)
	docs = append(docs, Document{ID: "huge", Text: strings.Repeat("x", MaxDocumentBytes+1)})
	var out bytes.Buffer
	st, err := x.Run(context.Background(), docs, &out, nil)
	require.NoError(t, err)
	assert.Equal(t, Stats{Done: 2, Failed: 4}, st)
	recs := readRecords(t, out.Bytes())
	require.Len(t, recs, 6)
	assert.Contains(t, recs[1].Error, "not UTF-8")
	assert.Contains(t, recs[3].Error, "not a JSON object")
	assert.Contains(t, recs[4].Error, `no string member "text"`)
	assert.Contains(t, recs[5].Error, "MaxDocumentBytes")
	assert.Empty(t, recs[0].Error)
	assert.Empty(t, recs[2].Error)

	// A budget too small for any value fails every document, each on its line.
	x, err = New(reins.Builtin(), []byte(`{"type": "string", "minLength": 30}`), &Options{MaxTokens: 5})
	require.NoError(t, err)
	out.Reset()
	st, err = x.Run(context.Background(), docs[:1], &out, nil)
	require.NoError(t, err)
	assert.Equal(t, Stats{Failed: 1}, st)
	assert.Contains(t, readRecords(t, out.Bytes())[0].Error, "unfinished")
}

func TestLeaves(t *testing.T) {
	text := `{"a":[1,{"b/c":"x~"},[],{}],"d":true,"e":null,"f":-1.5e3}`
	ls, err := Leaves([]byte(text))
	require.NoError(t, err)
	var got []string
	for _, l := range ls {
		got = append(got, l.Pointer+"="+text[l.Start:l.End])
	}
	assert.Equal(t, []string{"/a/0=1", `/a/1/b~1c="x~"`, "/a/2=[]", "/a/3={}", "/d=true", "/e=null", "/f=-1.5e3"}, got)
	ls, err = Leaves([]byte(` "s" `))
	require.NoError(t, err)
	assert.Equal(t, "", ls[0].Pointer)
	_, err = Leaves([]byte(`{"a":}`))
	assert.Error(t, err)
}

func TestAlternativesAt(t *testing.T) {
	var schema any
	require.NoError(t, json.Unmarshal([]byte(`{"$defs": {"k": {"enum": ["x", 1, null]}},
		"type": "object", "properties": {
			"k": {"$ref": "#/$defs/k"},
			"b": {"type": "boolean"},
			"nb": {"type": ["boolean", "null"]},
			"c": {"const": "<&>"},
			"list": {"type": "array", "items": {"type": "boolean"}},
			"tuple": {"prefixItems": [{"const": 1}], "items": {"enum": ["t"]}},
			"any": {"anyOf": [{"const": 1}, {"const": 2}]},
			"s": {"type": "string"}}}`), &schema))
	for path, want := range map[string][]string{
		"k": {`"x"`, "1", "null"}, "b": {"true", "false"}, "nb": {"true", "false", "null"}, "c": {`"<&>"`},
		"list/3": {"true", "false"}, "tuple/0": {"1"}, "tuple/5": {`"t"`},
	} {
		got, ok := alternativesAt(schema, strings.Split(path, "/"))
		assert.True(t, ok, path)
		assert.Equal(t, want, got, path)
	}
	for _, path := range []string{"any", "s", "missing"} {
		_, ok := alternativesAt(schema, []string{path})
		assert.False(t, ok, path)
	}
}

func TestReadInputsErrors(t *testing.T) {
	_, err := ReadInputs([]string{"no/such/path"}, nil)
	assert.Error(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.jsonl"), []byte("{\"id\": \"a\", \"text\": \"1\"}\n{\"id\": \"a\", \"text\": \"2\"}\n"), 0o644))
	_, err = ReadInputs([]string{dir}, nil)
	x := filepath.Join(dir, "x.jsonl")
	assert.ErrorContains(t, err, `two documents have the ID "a": `+x+":1 and "+x+":2")
	var pe *os.PathError
	assert.False(t, errors.As(err, &pe))
}

func mathExp(x float64) float64 { return math.Exp(x) }

// TestListedValuesAreTheMostProbable: where the schema lists a leaf's
// values, the value extracted is the most probable of them in full, not
// the end of the likeliest token path.
func TestListedValuesAreTheMostProbable(t *testing.T) {
	schema, err := os.ReadFile("../testdata/extract/person.schema.json")
	require.NoError(t, err)
	x, err := New(reins.Builtin(), schema, &Options{})
	require.NoError(t, err)
	docs, err := filepath.Glob("../testdata/extract/docs/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, docs)
	checked := 0
	for _, d := range docs {
		text, err := os.ReadFile(d)
		require.NoError(t, err)
		res, err := x.Extract(context.Background(), string(text))
		require.NoError(t, err)
		for _, f := range res.Fields {
			if len(f.Alternatives) < 2 {
				continue
			}
			best := f.Alternatives[0]
			for _, a := range f.Alternatives {
				if a.Prob > best.Prob {
					best = a
				}
			}
			assert.JSONEq(t, string(best.Value), string(f.Value), "%s %s", d, f.Pointer)
			assert.InDelta(t, best.Prob, f.Confidence, 1e-9)
			checked++
		}
		require.NoError(t, jsonschema.Validate(schema, res.Value))
	}
	assert.Positive(t, checked)
}

// TestJSONLLinesAreReadOn: a JSONL line longer than MaxJSONLLineBytes is
// that line's document's error and the lines after it are read (the
// scanner had stopped the file there); a byte order mark opens the
// first line; an ID that is neither a string nor a number is an error.
func TestJSONLLinesAreReadOn(t *testing.T) {
	dir := t.TempDir()
	long := `{"id": "long", "text": "` + strings.Repeat("a", MaxJSONLLineBytes) + `"}`
	exact := strings.Repeat(" ", MaxJSONLLineBytes-1-len(`{"id": "exact", "text": "x"}`)) + `{"id": "exact", "text": "x"}`
	in := "\uFEFF" + `{"id": "first", "text": "The cat."}` + "\n" + long + "\n" + `{"id": "after", "text": "The dog."}` + "\n" +
		exact + "\n" + exact + " \n" + `{"id": [1], "text": "x"}` + "\n" + `{"id": null, "text": "y"}` + "\n" + long
	path := filepath.Join(dir, "in.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(in), 0o644))
	docs, err := ReadInputs([]string{path}, nil)
	require.NoError(t, err)
	var got []string
	for _, d := range docs {
		e := ""
		if d.Err != nil {
			e = " error: " + d.Err.Error()
		}
		got = append(got, d.ID+e)
	}
	long2 := fmt.Sprintf(" error: a line longer than MaxJSONLLineBytes (%d)", MaxJSONLLineBytes)
	assert.Equal(t, []string{
		"first",
		path + ":2" + long2,
		"after",
		"exact",             // MaxJSONLLineBytes with its newline
		path + ":5" + long2, // one more: its newline is read with the byte past the bound, and line 6 is not skipped
		path + `:6 error: member "id": want a string or a number as the ID`,
		path + ":7",
		path + ":8" + long2,
	}, got)
}
