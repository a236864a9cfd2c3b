package remote

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestShapeCounts checks that Shape counts the containers and entries of
// a JSON text, not the braces and commas inside its strings (escaped
// quotes included), and refuses past either bound.
func TestShapeCounts(t *testing.T) {
	text := `{"a": [1, 2, {"b": "x,{[\"],"}], "c\\": "{,"}`
	assert.NoError(t, Shape{Containers: 3, Values: 3}.check([]byte(text)))
	assert.ErrorContains(t, Shape{Containers: 2}.check([]byte(text)), "more than 2 objects and arrays")
	assert.ErrorContains(t, Shape{Values: 2}.check([]byte(text)), "more than 2 values")
	assert.NoError(t, Shape{}.check([]byte(strings.Repeat("[{},", 1000))), "no bound")
}

// TestReportsError: an "error" field that is absent, null, false, empty
// or an empty object reports nothing; a message, an object or true does.
func TestReportsError(t *testing.T) {
	for _, raw := range []string{"", "null", "false", `""`, "{}", "{ }"} {
		assert.False(t, ReportsError([]byte(raw)), raw)
	}
	for _, raw := range []string{`"busy"`, `{"message":"x"}`, "true", "1", `[]`} {
		assert.True(t, ReportsError([]byte(raw)), raw)
	}
}

// FuzzShape: for any JSON text, Shape counts exactly its objects and
// arrays, and the commas between their entries (one fewer than the
// entries of each non-empty one); for any bytes it returns.
func FuzzShape(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2, {"b": "x,{[\"],"}], "c\\": "{,"}`, `[]`, `[[],{}]`, `"\\"`, `{"\u005b": "]"}`, `[1,`, `"`, `{"":[],"":""}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = Shape{Containers: 1, Values: 1}.check(b)
		if !json.Valid(b) {
			return
		}
		// The reference count, by the decoder's tokens (a map would merge
		// repeated keys): per open container, whether it is an object and
		// how many tokens of its own it holds (keys and values).
		type open struct {
			object bool
			tokens int
		}
		containers, values := 0, 0
		var stack []open
		d := json.NewDecoder(bytes.NewReader(b))
		for {
			tok, err := d.Token()
			if err != nil {
				break
			}
			if delim, ok := tok.(json.Delim); ok && (delim == '}' || delim == ']') {
				top := stack[len(stack)-1]
				entries := top.tokens
				if top.object {
					entries /= 2
				}
				values += max(entries-1, 0)
				stack = stack[:len(stack)-1]
				continue
			}
			if len(stack) > 0 {
				stack[len(stack)-1].tokens++
			}
			if delim, ok := tok.(json.Delim); ok {
				containers++
				stack = append(stack, open{object: delim == '{'})
			}
		}
		if err := (Shape{Containers: containers, Values: values}).check(b); err != nil {
			t.Fatalf("%q: %d containers, %d values refused: %v", b, containers, values, err)
		}
		if containers > 1 && (Shape{Containers: containers - 1}).check(b) == nil {
			t.Fatalf("%q: %d containers passed a bound of %d", b, containers, containers-1)
		}
		if values > 1 && (Shape{Values: values - 1}).check(b) == nil {
			t.Fatalf("%q: %d values passed a bound of %d", b, values, values-1)
		}
	})
}
