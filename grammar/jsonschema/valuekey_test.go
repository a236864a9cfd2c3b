package jsonschema

import (
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestValueKeyMatchesJSONEqual checks that two values have the same key
// exactly when jsonEqual holds, over numbers spelled many ways, strings
// a length prefix keeps apart, and arrays and objects nesting them.
func TestValueKeyMatchesJSONEqual(t *testing.T) {
	texts := []string{
		`0`, `-0`, `0.0`, `0e5`, `-0.000e-3`, `1`, `1.0`, `10e-1`, `0.1e1`, `100e-2`, `1E0`, `1e+0`, `-1`, `-1.00`,
		`1e-999`, `10e-1000`, `0.1e-998`, `2e-999`, `1e999`, `12.5`, `125e-1`, `1250E-2`, `0.125e2`, `12.50`,
		`"1"`, `"a"`, `""`, `"s1:a"`, `"1:a"`, `null`, `true`, `false`,
		`[]`, `[1]`, `[1.0]`, `[1, 2]`, `[2, 1]`, `[[1]]`, `["a", "b"]`, `["ab"]`, `["as:b"]`, `["as1:b"]`, `["a", "s1:b"]`,
		`{}`, `{"a": 1}`, `{"a": 1.0}`, `{"a": 1, "b": 2}`, `{"b": 2, "a": 1}`, `{"a": [1, {"b": null}]}`, `{"a": [1.00, {"b": null}]}`, `{"ab": 1}`,
	}
	values := make([]any, len(texts))
	for i, text := range texts {
		d := json.NewDecoder(strings.NewReader(text))
		d.UseNumber()
		require.NoError(t, d.Decode(&values[i]), text)
	}
	key := func(v any) string {
		var b strings.Builder
		require.True(t, valueKey(&b, v))
		return b.String()
	}
	for i, a := range values {
		for j, b := range values {
			assert.Equal(t, jsonEqual(a, b), key(a) == key(b), "%s and %s", texts[i], texts[j])
		}
	}
	set := newValueSet(values)
	for i, v := range values {
		in, ok := set.has(v)
		assert.True(t, in && ok, texts[i])
	}
	in, ok := set.has(json.Number("3"))
	assert.True(t, ok)
	assert.False(t, in)
}

// TestNumbersEqualMatchesRat checks numbersEqual against big.Rat on
// random spellings of a few values: digits shifted between the mantissa
// and the exponent, with leading and trailing zeros.
func TestNumbersEqualMatchesRat(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	spell := func() string {
		mant := fmt.Sprint(r.IntN(30))
		if r.IntN(2) == 0 {
			mant += "." + strings.Repeat("0", r.IntN(3)) + fmt.Sprint(r.IntN(5))
		}
		if r.IntN(3) == 0 {
			mant = "-" + mant
		}
		if r.IntN(2) == 0 {
			mant += fmt.Sprintf("e%d", r.IntN(7)-3)
		}
		return mant
	}
	for range 20000 {
		x, y := spell(), spell()
		rx, _ := new(big.Rat).SetString(x)
		ry, _ := new(big.Rat).SetString(y)
		require.Equal(t, rx.Cmp(ry) == 0, numbersEqual(json.Number(x), json.Number(y)), "%s and %s", x, y)
	}
	_, ok := parseDecimal("1e99999999999999999999")
	assert.False(t, ok, "an exponent past int is not parsed")
	assert.True(t, numbersEqual("1e99999999999999999999", "1e99999999999999999999"))
}

// TestInListBySet checks that a value is found in a long enum by the
// list's set (made once, at the first lookup), numbers by value, and in
// a short one by a scan.
func TestInListBySet(t *testing.T) {
	long := make([]any, 100)
	for i := range long {
		long[i] = json.Number(fmt.Sprint(i))
	}
	e := &evaluator{}
	assert.True(t, e.inList(long, json.Number("5.0")))
	assert.True(t, e.inList(long, json.Number("9.9e1")))
	assert.False(t, e.inList(long, json.Number("100")))
	assert.False(t, e.inList(long, "5"))
	assert.Len(t, e.sets, 1, "the long list is looked up by its set")
	short := long[:shortNames]
	assert.True(t, e.inList(short, json.Number("3e0")))
	assert.False(t, e.inList(short, json.Number("16")))
	assert.Len(t, e.sets, 1, "a short list is scanned")
}

// FuzzValueKey checks valueKey against jsonEqual on pairs of decoded
// JSON texts: equal keys exactly when the values are equal.
func FuzzValueKey(f *testing.F) {
	for _, pair := range [][2]string{
		{`1`, `1.0`}, {`1e-999`, `0.1e-998`}, {`-0`, `0e7`}, {`["a","b"]`, `["as:b"]`},
		{`{"a":1,"b":[2]}`, `{"b":[2.0],"a":10e-1}`}, {`"x"`, `"y"`}, {`12.50`, `1250E-2`},
	} {
		f.Add(pair[0], pair[1])
	}
	decode := func(text string) (any, bool) {
		d := json.NewDecoder(strings.NewReader(text))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil || d.More() {
			return nil, false
		}
		return v, true
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		x, ok1 := decode(a)
		y, ok2 := decode(b)
		if !ok1 || !ok2 {
			return
		}
		var kx, ky strings.Builder
		if !valueKey(&kx, x) || !valueKey(&ky, y) {
			return // numbers outside JSON's grammar reach neither
		}
		if got, want := kx.String() == ky.String(), jsonEqual(x, y); got != want {
			t.Fatalf("%s and %s: keys equal %v, jsonEqual %v", a, b, got, want)
		}
	})
}
