package jsonschema

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tokenKeyOrder is keyOrder found with encoding/json's tokens: for
// every object of a JSON document, its keys in the order they are
// written, keyed by the object's JSON pointer.
func tokenKeyOrder(data []byte) (map[string][]string, []string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	out := map[string][]string{}
	var ptrs []string // objects in document order
	var walk func(ptr string) error
	walk = func(ptr string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return nil
		}
		switch d {
		case '{':
			ptrs = append(ptrs, ptr)
			var keys []string
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key := k.(string)
				keys = append(keys, key)
				if err := walk(ptr + "/" + escapePointer(key)); err != nil {
					return err
				}
			}
			out[ptr] = keys
		case '[':
			for i := 0; dec.More(); i++ {
				if err := walk(ptr + "/" + strconv.Itoa(i)); err != nil {
					return err
				}
			}
		}
		_, err = dec.Token() // the closing delimiter
		return err
	}
	err := walk("#")
	return out, ptrs, err
}

// checkDecode compares decodeSchema with encoding/json (with UseNumber,
// nothing after the value) on text: the same value, or an error from
// both; and the same key order as the tokens.
func checkDecode(t *testing.T, text string) {
	t.Helper()
	want, wantErr := decodeJSON([]byte(text)) // encoding/json
	got, order, err := decodeSchema([]byte(text))
	if wantErr != nil {
		require.Error(t, err, "%q: encoding/json says %v", text, wantErr)
		return
	}
	require.NoError(t, err, "%q", text)
	require.Equal(t, want, got, "%q", text)
	keys, ptrs, err := tokenKeyOrder([]byte(text))
	require.NoError(t, err)
	require.Equal(t, ptrs, order.ptrs, "%q", text)
	for _, p := range ptrs {
		require.Equal(t, keys[p], order.keys[p], "%q at %s", text, p)
	}
}

var decodeCases = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1.5e-3`, `-12E+4`, `123456789012345678901234567890`, `""`,
	` {"a": 1, "b": [1, {"c": null}], "a": 2} `, "\t[\n{\r}]", `{"x/y": {"~z": [[], {"": {}}]}}`,
	`"\u00e9\ud83d\ude00\n\t\"\\\/\b\f\r"`, `"\ud83d"`, `"\ude00x"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`,
	"\"\xff\xfe a\"", "\"caf\xc3\xa9\"", "\"\xc3\"", `{"\u0041": 1, "A": 2}`,
	// Not JSON.
	``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a: 1}`, `01`, `1.`, `.5`, `+1`, `1e`, `-`, `tru`, `nul`, `[1 2]`,
	`{} {}`, `{}0`, `"a`, "\"\x01\"", `"\x"`, `"\u12"`, `"\u12g4"`, `[` + strings.Repeat(" ", 3),
}

func TestDecodeSchemaAgrees(t *testing.T) {
	for _, text := range decodeCases {
		checkDecode(t, text)
	}
}

// TestDecodeSchemaDepth checks the nesting bound encoding/json keeps:
// 10000 levels decode, 10001 do not.
func TestDecodeSchemaDepth(t *testing.T) {
	for _, n := range []int{maxDepth, maxDepth + 1} {
		checkDecode(t, strings.Repeat("[", n)+strings.Repeat("]", n))
		checkDecode(t, strings.Repeat(`{"a":`, n)+"1"+strings.Repeat("}", n))
	}
}

// TestDecodeSchemaErrorPosition checks that an error names the line and
// column of the fault.
func TestDecodeSchemaErrorPosition(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"{\n  \"a\": tru\n}", "line 2, column 8"},
		{"[1,\n 2,\n ]", "line 3, column 2"},
		{`{"a": 1} x`, "line 1, column 10: data after the value"},
		{`"abc`, "line 1, column 5: unexpected end"},
	} {
		_, _, err := decodeSchema([]byte(tc.text))
		assert.ErrorContains(t, err, tc.want, strconv.Quote(tc.text))
	}
}

// FuzzDecodeSchema compares decodeSchema with encoding/json.
func FuzzDecodeSchema(f *testing.F) {
	for _, text := range decodeCases {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		checkDecode(t, text)
	})
}
