package jsonschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/reins-go/reins/grammar"
)

// TestExactNumericBounds checks bounds merged from allOf and siblings,
// compared exactly (never through float64), and draft 4's boolean
// exclusiveMinimum and exclusiveMaximum, which belong to the minimum or
// maximum beside them, not to a merged one.
func TestExactNumericBounds(t *testing.T) {
	const d4 = `"$schema": "http://json-schema.org/draft-04/schema#", `
	runKeywordCases(t, []keywordCase{
		{
			// 99999999999999999 and 1e17 are one float64.
			name:    "minimums that float64 cannot tell apart",
			schema:  `{"allOf": [{"minimum": 99999999999999999}, {"minimum": 100000000000000000}]}`,
			valid:   []string{`100000000000000000`, `100000000000000001`, `100000000000000000.5`},
			invalid: []string{`99999999999999999`, `99999999999999999.9`},
		},
		{
			name:    "maximums that float64 cannot tell apart, the tighter second",
			schema:  `{"type": "integer", "allOf": [{"maximum": 100000000000000000}, {"maximum": 99999999999999999}]}`,
			valid:   []string{`99999999999999999`, `-5`},
			invalid: []string{`100000000000000000`},
		},
		{
			name:    "a minimum in exponent form beside one written out",
			schema:  `{"allOf": [{"minimum": 1e17}, {"minimum": 99999999999999999}]}`,
			valid:   []string{`100000000000000000`},
			invalid: []string{`99999999999999999`},
		},
		{
			name:    "decimal minimums that float64 rounds",
			schema:  `{"allOf": [{"minimum": 0.3}, {"minimum": 0.30000000000000004}, {"minimum": 0.30000000000000003}]}`,
			valid:   []string{`0.30000000000000004`, `0.4`},
			invalid: []string{`0.3`, `0.30000000000000003`},
		},
		{
			name:    "2020-12: exclusiveMinimum beside a minimum of the same value",
			schema:  `{"minimum": 5, "allOf": [{"exclusiveMinimum": 5}]}`,
			valid:   []string{`5.000000000000000000001`, `6`},
			invalid: []string{`5`, `4`},
		},
		{
			name:    "2020-12: an exclusive minimum just below an inclusive one",
			schema:  `{"allOf": [{"exclusiveMinimum": 4.999999999999999999}, {"minimum": 5}]}`,
			valid:   []string{`5`},
			invalid: []string{`4.9999999999999999999`},
		},
		{
			// The merged minimum is 5, inclusive; the flag was 3's.
			name:    "draft 4: an exclusive minimum in one branch, a higher inclusive one in another",
			schema:  `{` + d4 + `"allOf": [{"minimum": 5}, {"minimum": 3, "exclusiveMinimum": true}]}`,
			valid:   []string{`5`, `5.5`},
			invalid: []string{`4.9`, `3`},
		},
		{
			name:    "draft 4: an exclusive minimum beside allOf, a lower minimum inside",
			schema:  `{` + d4 + `"minimum": 5, "exclusiveMinimum": true, "allOf": [{"minimum": 3}]}`,
			valid:   []string{`5.5`, `6`},
			invalid: []string{`5`, `4`},
		},
		{
			name:    "draft 4: an exclusive minimum beside allOf, a higher minimum inside",
			schema:  `{` + d4 + `"minimum": 5, "exclusiveMinimum": true, "allOf": [{"minimum": 7}]}`,
			valid:   []string{`7`, `8`},
			invalid: []string{`6.9`, `5`},
		},
		{
			name:    "draft 4: exclusive and inclusive minimums of one value",
			schema:  `{` + d4 + `"minimum": 3, "exclusiveMinimum": true, "allOf": [{"minimum": 3}]}`,
			valid:   []string{`3.1`},
			invalid: []string{`3`},
		},
		{
			name:    "draft 4: exclusiveMinimum false",
			schema:  `{` + d4 + `"allOf": [{"minimum": 3, "exclusiveMinimum": false}, {"minimum": 2, "exclusiveMinimum": true}]}`,
			valid:   []string{`3`},
			invalid: []string{`2.9`},
		},
		{
			name:    "draft 4: an exclusive maximum in one branch, a lower inclusive one in another",
			schema:  `{` + d4 + `"allOf": [{"maximum": 5}, {"maximum": 7, "exclusiveMaximum": true}]}`,
			valid:   []string{`5`, `-1`},
			invalid: []string{`5.1`, `7`},
		},
		{
			name:    "draft 4: an exclusive maximum beside allOf, a lower maximum inside",
			schema:  `{` + d4 + `"maximum": 7, "exclusiveMaximum": true, "allOf": [{"maximum": 5}]}`,
			valid:   []string{`5`, `4`},
			invalid: []string{`5.5`, `7`},
		},
		{
			name:    "draft 4: both exclusive bounds across branches",
			schema:  `{` + d4 + `"type": "number", "allOf": [{"minimum": 1, "exclusiveMinimum": true}, {"maximum": 1.5, "exclusiveMaximum": true}, {"minimum": 1}]}`,
			valid:   []string{`1.25`, `1.000001`},
			invalid: []string{`1`, `1.5`},
		},
		{
			name:    "draft 4: an excluded fractional minimum of an integer",
			schema:  `{` + d4 + `"type": "integer", "minimum": 5.5, "exclusiveMinimum": true}`,
			valid:   []string{`6`, `7`},
			invalid: []string{`5`},
		},
		{
			name:    "draft 4: an excluded fractional negative minimum of an integer",
			schema:  `{` + d4 + `"type": "integer", "minimum": -5.5, "exclusiveMinimum": true, "maximum": -2.5, "exclusiveMaximum": true}`,
			valid:   []string{`-5`, `-3`},
			invalid: []string{`-6`, `-2`},
		},
	})
}

// choices draws fuzzing decisions from bytes, then zeros.
type choices struct{ data []byte }

func (c *choices) n(k int) int {
	if len(c.data) == 0 || k <= 1 {
		return 0
	}
	b := int(c.data[0])
	c.data = c.data[1:]
	return b % k
}

// boundValues are numbers around which bounds fall: the ones float64
// confuses, huge and tiny ones, negatives, exponents.
var boundValues = []string{
	"0", "1", "-1", "5", "5.5", "-5.5", "0.1", "0.3", "0.30000000000000004", "99999999999999999", "100000000000000000",
	"1e17", "-1e17", "9007199254740993", "-9007199254740993", "123456789012345678901234567890.5", "1e-30", "-1e-30",
	"2.5E2", "0.000001", "1.0", "-0.5", "1e300", "12345678901234567890123456789012345678.25",
}

// genNumber returns a JSON number: one of boundValues or random digits.
func genNumber(c *choices) string {
	if c.n(3) > 0 {
		return boundValues[c.n(len(boundValues))]
	}
	var b strings.Builder
	if c.n(2) == 1 {
		b.WriteString("-")
	}
	b.WriteByte(byte('1' + c.n(9)))
	for range c.n(25) {
		b.WriteByte(byte('0' + c.n(10)))
	}
	if c.n(2) == 1 {
		b.WriteString(".")
		for range 1 + c.n(12) {
			b.WriteByte(byte('0' + c.n(10)))
		}
	}
	return b.String()
}

// decimal writes r as JSON writes a number without an exponent, the
// subset of numerals bounded ranges take.
func decimal(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	s := r.FloatString(60)
	return strings.TrimRight(s, "0")
}

// numericSchema builds a schema of random numeric bounds spread over
// the root, allOf branches and a nested allOf, in draft 4 (boolean
// exclusive flags), 7 or 2020-12, of type integer or number; and the
// bound values.
func numericSchema(c *choices) (string, []string) {
	draft := []string{"http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2020-12/schema"}[c.n(3)]
	draft4 := strings.Contains(draft, "draft-04")
	objects := make([]map[string]any, 1+c.n(4)) // the root, then allOf branches
	for i := range objects {
		objects[i] = map[string]any{}
	}
	var values []string
	for range 1 + c.n(5) {
		o := objects[c.n(len(objects))]
		isMin := c.n(2) == 0
		base, ex := boundKeywords(isMin)
		v := genNumber(c)
		values = append(values, v)
		exclusive := c.n(2) == 1
		switch {
		case draft4:
			if _, taken := o[base]; taken {
				continue
			}
			o[base] = json.Number(v)
			if exclusive || c.n(3) == 0 {
				o[ex] = exclusive
			}
		case exclusive:
			o[ex] = json.Number(v)
		default:
			o[base] = json.Number(v)
		}
	}
	root := objects[0]
	root["$schema"] = draft
	root["type"] = []string{"integer", "number"}[c.n(2)]
	var branches []any
	for _, o := range objects[1:] {
		branches = append(branches, o)
	}
	if len(branches) > 1 && c.n(2) == 1 { // a nested allOf
		branches = []any{branches[0], map[string]any{"allOf": branches[1:]}}
	}
	if len(branches) > 0 {
		root["allOf"] = branches
	}
	out, err := json.Marshal(root)
	if err != nil {
		panic(err)
	}
	return string(out), values
}

// nearValues are numbers at, just beside and around each of values:
// equal, ±1, ±a tiny decimal, and the integers around it.
func nearValues(c *choices, values []string) []string {
	var out []string
	for _, v := range values {
		r, err := parseNumber(json.Number(v))
		if err != nil {
			continue
		}
		tiny := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(1+c.n(30))), nil))
		one := big.NewRat(1, 1)
		floor := new(big.Rat).SetInt(floorRat(r))
		for _, x := range []*big.Rat{
			r, new(big.Rat).Add(r, one), new(big.Rat).Sub(r, one), new(big.Rat).Add(r, tiny), new(big.Rat).Sub(r, tiny),
			floor, new(big.Rat).Add(floor, one), new(big.Rat).Sub(floor, one),
		} {
			out = append(out, decimal(x))
		}
	}
	out = append(out, "0", "1", "-1")
	slices.Sort(out)
	return slices.Compact(out)
}

// FuzzNumericBounds merges random numeric bounds (numericSchema) and
// checks the grammar against the validator on numbers at and around
// them: it accepts no invalid number, and every valid one within the
// numerals bounded ranges take (no exponent; integers without a
// fraction; no "-0").
func FuzzNumericBounds(f *testing.F) {
	for _, seed := range []string{
		"\x00", "\x01\x02\x03\x04\x05", "\x00\x01\x01\x00\x01\x00\x0a\x00\x01\x01\x01\x0a",
		"\x00\x03\x02\x00\x01\x01\x00\x00\x04\x01\x00\x00\x02\x00\x01\x01\x06\x00\x00\x01",
		"\x02\x02\x03\x01\x00\x01\x00\x13\x00\x00\x00\x00\x01\x00\x02\x00\x01\x00\x14",
		"\x01\x01\x02\x01\x00\x01\x00\x08\x01\x01\x02\x00\x00\x09\x00\x01\x00",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &choices{data: data}
		schema, values := numericSchema(c)
		instances := nearValues(c, values)
		v, err := NewValidator([]byte(schema), Options{})
		if err != nil {
			t.Fatalf("%s: the generator wrote an invalid schema: %v", schema, err)
		}
		integer := strings.Contains(schema, `"type":"integer"`)
		g, err := Compile([]byte(schema), Options{})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%s: %v is not an *Error", schema, err)
			}
			if e.Empty {
				for _, x := range instances {
					if v.Validate([]byte(x)) == nil {
						t.Fatalf("%s: refused as allowing no value, but %s is valid", schema, x)
					}
				}
			}
			return // refused (fraction digits beyond maxFracDigits)
		}
		p, err := grammar.Compile(g)
		if err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		for _, x := range instances {
			valid := v.Validate([]byte(x)) == nil
			got := acceptsText(p, x)
			inSubset := !(integer && strings.Contains(x, "."))
			switch {
			case got && !valid:
				t.Fatalf("%s: the grammar accepts %s, which is invalid", schema, x)
			case !got && valid && inSubset:
				t.Fatalf("%s: the grammar refuses %s, which is valid", schema, x)
			}
		}
	})
}

// TestNumericSchemaGenerator checks that FuzzNumericBounds's generator
// writes schemas that compile, for the most part, so that the fuzz
// target tests grammars rather than refusals.
func TestNumericSchemaGenerator(t *testing.T) {
	compiled := 0
	for i := range 200 {
		data := []byte(fmt.Sprintf("%d-%d-%d", i*7919, i*104729, i))
		schema, _ := numericSchema(&choices{data: data})
		if _, err := Compile([]byte(schema), Options{}); err == nil {
			compiled++
		}
	}
	if compiled < 100 {
		t.Fatalf("only %d of 200 generated schemas compile", compiled)
	}
}
