package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/internal/jsonptr"
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
				if err := walk(ptr + "/" + jsonptr.Escape(key)); err != nil {
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
	got, order, err := decodeSchema([]byte(text), false)
	var e *Error
	if errors.As(err, &e) && e.Limit != "" {
		return // past a limit of decodeSchema's own, which encoding/json does not keep
	}
	if wantErr != nil {
		require.Error(t, err, "%q: encoding/json says %v", text, wantErr)
		return
	}
	require.NoError(t, err, "%q", text)
	require.Equal(t, want, got, "%q", text)
	keys, all, err := tokenKeyOrder([]byte(text))
	require.NoError(t, err)
	var ptrs []string // the objects whose order is kept
	for _, p := range all {
		var path []string
		for _, seg := range strings.Split(p, "/")[1:] {
			path = append(path, strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~"))
		}
		if keepsOrder(path) {
			ptrs = append(ptrs, p)
		}
	}
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
	`{"properties": {"b": {}, "a": {"properties": {"z": 1, "y": 2}}}, "x": {"enum": [{"q": 1, "p": {"s": 2, "r": 3}}]}, "c": {"a": {"d": 1, "c": 2}}}`,
	`{"const": {"b": [{"y": 1, "x": 2}], "a": 1}, "a~b/c": {"properties": {"2": 1, "1": 2}}}`,
	// Keywords and type names, which decode without making a string,
	// and their near misses, which make one.
	`{"type": "string", "enum": ["object", "array", "null", "number", "integer", "boolean", "booleans", "arra", "", "type"]}`,
	`{"$ref": "#", "$defs": {"required": ["type"]}, "description": "d", "title": "t", "types": 1, "typ": 2, "": 3}`,
	`["\u0073tring", "strin\u0067", "boolean", "str\"ing", "nul\u006c"]`, `{"\u0074ype": "obj\u0065ct"}`,
	// Not JSON.
	``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a: 1}`, `01`, `1.`, `.5`, `+1`, `1e`, `-`, `tru`, `nul`, `[1 2]`,
	`{} {}`, `{}0`, `"a`, "\"\x01\"", `"\x"`, `"\u12"`, `"\u12g4"`, `[` + strings.Repeat(" ", 3),
	`"boolean`, `["string`, `{"type`, `{"type"`, "\"str\x01ing\"",
}

func TestDecodeSchemaAgrees(t *testing.T) {
	for _, text := range decodeCases {
		checkDecode(t, text)
	}
}

// TestDecodeSchemaLimits checks the limits of a schema document:
// MaxDepth levels decode, one more is refused (at the pointer of the
// level too deep); so with MaxNumberDigits and MaxSchemaBytes.
func TestDecodeSchemaLimits(t *testing.T) {
	n := MaxDepth
	checkDecode(t, strings.Repeat("[", n)+strings.Repeat("]", n))
	checkDecode(t, strings.Repeat(`{"a":`, n)+"1"+strings.Repeat("}", n))
	checkDecode(t, "1"+strings.Repeat("0", MaxNumberDigits-1))
	checkDecode(t, fmt.Sprintf("-1.5e-%d", MaxNumberDigits))
	checkDecode(t, `"`+strings.Repeat("a", MaxSchemaBytes-2)+`"`)
	for _, tc := range []struct {
		text, pointer, keyword, limit, msg string
	}{
		{strings.Repeat("[", n+1) + strings.Repeat("]", n+1), "#" + strings.Repeat("/0", n-1), "0", limitDepth, "line 1, column 129: nested more than 128 deep"},
		{strings.Repeat(`{"a":`, n+1) + "1" + strings.Repeat("}", n+1), "#" + strings.Repeat("/a", n-1), "a", limitDepth, "nested more than 128 deep"},
		{`{"minimum": 1` + strings.Repeat("0", MaxNumberDigits) + `}`, "#", "minimum", limitNumberDigits, "line 1, column 13: a number of 1001 digits"},
		{`{"a": [1, -0.` + strings.Repeat("0", MaxNumberDigits) + `]}`, "#/a", "1", limitNumberDigits, "a number of 1001 digits"},
		{fmt.Sprintf(`{"a": 1e%d}`, MaxNumberDigits+1), "#", "a", limitNumberDigits, "exponent is beyond ±1000"},
		{fmt.Sprintf(`{"a": 1E-0000%d}`, MaxNumberDigits+1), "#", "a", limitNumberDigits, "exponent is beyond ±1000"},
		{`"` + strings.Repeat("a", MaxSchemaBytes-1) + `"`, "#", "", limitSchemaBytes, "the document is 4194305 bytes, more than the limit of 4194304"},
	} {
		_, _, err := decodeSchema([]byte(tc.text), false)
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, tc.pointer, e.Pointer)
		assert.Equal(t, tc.keyword, e.Keyword)
		assert.Equal(t, tc.limit, e.Limit)
		assert.Contains(t, e.Msg, tc.msg)
	}
}

// TestDecodeSchemaQuiet checks that the errors of a document a Loader
// returned show none of its bytes, only where the fault is.
func TestDecodeSchemaQuiet(t *testing.T) {
	for _, text := range []string{"root:x:0:0:root:/root:/bin/bash\n", "{\"a\": \"s\x01cret\"}", "[1, 2, secret]", "\xffsecret"} {
		_, _, err := decodeSchema([]byte(text), true)
		require.Error(t, err)
		assert.NotContains(t, err.Error(), "'r'", text)
		assert.NotContains(t, err.Error(), "0x1", text)
		assert.NotContains(t, err.Error(), "'s'", text)
		assert.NotContains(t, err.Error(), `\xff`, text)
		assert.Contains(t, err.Error(), "line 1, column", text)
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
		{"[\xff]", `line 1, column 2: unexpected byte \xff`},
		{"[\u00e9]", `line 1, column 2: unexpected 'é'`},
	} {
		_, _, err := decodeSchema([]byte(tc.text), false)
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
