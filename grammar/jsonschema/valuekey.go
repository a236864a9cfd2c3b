package jsonschema

import (
	"encoding/json"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// exactDecimal is a JSON number's value as sign, digits and exponent:
// digits × 10^exp, the digits without leading or trailing zeros (none
// for zero, whose sign is dropped), so that two numbers are equal
// exactly when their decimals are. Unlike big.Rat it costs a pass over
// the text whatever the exponent: 1e-999 needs no 10^999.
type exactDecimal struct {
	neg    bool
	digits string
	exp    int
}

// parseDecimal reads s, a number in JSON's grammar (the decoder checked
// it: parseDecimal itself lets some other spellings through, such as
// "5." or "00"); ok is false for text that is no number, or an
// exponent past int's range.
func parseDecimal(s string) (d exactDecimal, ok bool) {
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	}
	mant, expText, hasExp := strings.Cut(strings.ToLower(s), "e")
	if hasExp {
		e, err := strconv.Atoi(strings.TrimPrefix(expText, "+"))
		if err != nil {
			return exactDecimal{}, false
		}
		d.exp = e
	}
	whole, frac, _ := strings.Cut(mant, ".")
	if whole == "" || strings.Trim(whole+frac, "0123456789") != "" {
		return exactDecimal{}, false
	}
	digits := whole + frac
	if len(frac) > 0 {
		if d.exp < math.MinInt+len(frac) {
			return exactDecimal{}, false
		}
		d.exp -= len(frac)
	}
	digits = strings.TrimLeft(digits, "0")
	trimmed := strings.TrimRight(digits, "0")
	if d.exp > math.MaxInt-(len(digits)-len(trimmed)) {
		return exactDecimal{}, false
	}
	d.exp += len(digits) - len(trimmed)
	d.digits = trimmed
	if d.digits == "" {
		return exactDecimal{}, true // zero, either sign
	}
	return d, true
}

// numbersEqual reports whether two JSON numbers have the same value.
func numbersEqual(x, y json.Number) bool {
	if x == y {
		return true
	}
	dx, okx := parseDecimal(string(x))
	dy, oky := parseDecimal(string(y))
	if okx && oky {
		return dx == dy
	}
	rx, ok1 := new(big.Rat).SetString(string(x))
	ry, ok2 := new(big.Rat).SetString(string(y))
	return ok1 && ok2 && rx.Cmp(ry) == 0
}

// valueKey writes a key of the decoded JSON value v to b, equal for two
// values exactly when jsonEqual holds between them: numbers by their
// exact decimal, objects with their keys sorted, strings length-prefixed.
// It reports false for a value it cannot key (a number outside JSON's
// grammar, a type the decoder does not make).
func valueKey(b *strings.Builder, v any) bool {
	switch x := v.(type) {
	case nil:
		b.WriteByte('z')
	case bool:
		if x {
			b.WriteByte('t')
		} else {
			b.WriteByte('f')
		}
	case string:
		b.WriteByte('s')
		b.WriteString(strconv.Itoa(len(x)))
		b.WriteByte(':')
		b.WriteString(x)
	case json.Number:
		d, ok := parseDecimal(string(x))
		if !ok {
			return false
		}
		b.WriteByte('n')
		if d.neg {
			b.WriteByte('-')
		}
		b.WriteString(d.digits)
		b.WriteByte('e')
		b.WriteString(strconv.Itoa(d.exp))
		b.WriteByte(';')
	case []any:
		b.WriteByte('[')
		for _, w := range x {
			if !valueKey(b, w) {
				return false
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for _, k := range keys {
			valueKey(b, k)
			if !valueKey(b, x[k]) {
				return false
			}
		}
		b.WriteByte('}')
	default:
		return false
	}
	return true
}

// valueSet is a set of JSON values, by valueKey.
type valueSet map[string]struct{}

// valueKeys returns the valueKey of each of values, or false when one
// cannot be keyed.
func valueKeys(values []any) ([]string, bool) {
	keys := make([]string, len(values))
	var b strings.Builder
	for i, v := range values {
		b.Reset()
		if !valueKey(&b, v) {
			return nil, false
		}
		keys[i] = b.String()
	}
	return keys, true
}

// newValueSet returns the set of values, or nil when one cannot be keyed.
func newValueSet(values []any) valueSet {
	keys, ok := valueKeys(values)
	if !ok {
		return nil
	}
	set := make(valueSet, len(keys))
	for _, k := range keys {
		set[k] = struct{}{}
	}
	return set
}

// has reports whether v is in the set; ok is false when v cannot be keyed.
func (s valueSet) has(v any) (in, ok bool) {
	var b strings.Builder
	if !valueKey(&b, v) {
		return false, false
	}
	_, in = s[b.String()]
	return in, true
}
