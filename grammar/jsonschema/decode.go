package jsonschema

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/reins-go/reins/internal/jsonptr"
)

// keyOrder is the order of the keys of the objects of a document whose
// order matters (see keepsOrder), by JSON pointer ("#/properties", ...):
// Go maps forget it, and object properties and literals are written in
// schema order.
type keyOrder struct {
	keys map[string][]string // each object's keys, as written (repeats too)
	ptrs []string            // the objects, in document order
}

// keepsOrder reports whether the key order of the object at path is
// kept: the names of properties, and objects in enum and const values.
// Keeping every object's would take memory of the document's size times
// its depth, in pointers.
func keepsOrder(path []string) bool {
	if len(path) > 0 && path[len(path)-1] == "properties" {
		return true
	}
	for _, p := range path {
		if p == "enum" || p == "const" {
			return true
		}
	}
	return false
}

// decodeSchema decodes a schema document as encoding/json decodes into
// an any with UseNumber (objects map[string]any with the last of
// repeated keys, arrays []any, numbers json.Number, invalid UTF-8 and
// lone surrogates as U+FFFD), and records its key order, in one pass.
// Anything after the value but whitespace is an error. Errors are
// *Error: the pointer of the value at fault, and the line and column.
//
// The document is held to MaxSchemaBytes, MaxDepth and MaxNumberDigits.
// With quiet, errors show none of the document's bytes (a document a
// Loader returned may be a file nobody meant to show).
func decodeSchema(data []byte, quiet bool) (any, *keyOrder, error) {
	d := &decoder{data: data, quiet: quiet, order: &keyOrder{keys: map[string][]string{}}}
	if len(data) > MaxSchemaBytes {
		return nil, nil, &Error{Pointer: "#", Limit: limitSchemaBytes,
			Msg: fmt.Sprintf("the document is %d bytes, more than the limit of %d (MaxSchemaBytes)", len(data), MaxSchemaBytes)}
	}
	d.space()
	v, err := d.value(0)
	if err != nil {
		return nil, nil, err
	}
	d.space()
	if d.pos < len(d.data) {
		return nil, nil, d.errorf("data after the value")
	}
	return v, d.order, nil
}

// decoder reads one JSON document.
type decoder struct {
	data  []byte
	pos   int
	order *keyOrder
	buf   []byte   // a string being unescaped
	path  []string // the keys and indexes from the root to the value being read
	quiet bool     // errors name positions only, not bytes
}

// errorf is an error at the current byte: its line and column, and the
// JSON pointer of the value being read.
func (d *decoder) errorf(format string, args ...any) error {
	return d.limitf("", format, args...)
}

// limitf is errorf for a document past the limit named limit.
func (d *decoder) limitf(limit, format string, args ...any) error {
	line, col := 1, 1
	for _, b := range d.data[:min(d.pos, len(d.data))] {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	e := &Error{Pointer: "#", Limit: limit, Msg: fmt.Sprintf("line %d, column %d: %s", line, col, fmt.Sprintf(format, args...))}
	if limit == "" {
		e.Msg = "not JSON: " + e.Msg
	}
	if n := len(d.path); n > 0 {
		e.Pointer, e.Keyword = pointerOf(d.path[:n-1]), jsonptr.Escape(d.path[n-1])
	}
	return e
}

// unexpected is the error for the current byte, or for the end.
func (d *decoder) unexpected(what string) error {
	switch {
	case d.pos >= len(d.data):
		return d.errorf("unexpected end of the document, looking for %s", what)
	case d.quiet:
		return d.errorf("unexpected character, looking for %s", what)
	}
	if r, size := utf8.DecodeRune(d.data[d.pos:]); r != utf8.RuneError || size > 1 {
		return d.errorf("unexpected %q, looking for %s", r, what)
	}
	return d.errorf("unexpected byte \\x%02x, looking for %s", d.data[d.pos], what)
}

func (d *decoder) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// value decodes the value at d.pos, whose path is d.path.
func (d *decoder) value(depth int) (any, error) {
	if d.pos >= len(d.data) {
		return nil, d.unexpected("a value")
	}
	switch c := d.data[d.pos]; {
	case c == '{' || c == '[':
		if depth >= MaxDepth {
			return nil, d.limitf(limitDepth, "nested more than %d deep (MaxDepth)", MaxDepth)
		}
		if c == '{' {
			return d.object(depth + 1)
		}
		return d.array(depth + 1)
	case c == '"':
		if v, ok := d.typeName(); ok {
			return v, nil
		}
		return d.string()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case d.literal("true"):
		return true, nil
	case d.literal("false"):
		return false, nil
	case d.literal("null"):
		return nil, nil
	}
	return nil, d.unexpected("a value")
}

// literal consumes word if it is next.
func (d *decoder) literal(word string) bool {
	if len(d.data)-d.pos >= len(word) && string(d.data[d.pos:d.pos+len(word)]) == word {
		d.pos += len(word)
		return true
	}
	return false
}

func (d *decoder) object(depth int) (any, error) {
	d.pos++ // {
	out := map[string]any{}
	var keys []string
	ptr := ""
	if keepsOrder(d.path) {
		ptr = pointerOf(d.path)
		d.order.ptrs = append(d.order.ptrs, ptr)
	}
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		if ptr != "" {
			d.order.keys[ptr] = keys
		}
		return out, nil
	}
	for {
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.unexpected("a key")
		}
		key, err := d.string()
		if err != nil {
			return nil, err
		}
		d.space()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.unexpected("':' after a key")
		}
		d.pos++
		d.space()
		d.path = append(d.path, key)
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		d.path = d.path[:len(d.path)-1]
		out[key] = v
		if ptr != "" {
			keys = append(keys, key)
		}
		more, err := d.more('}', "',' or '}' in an object")
		if err != nil {
			return nil, err
		}
		if !more {
			if ptr != "" {
				d.order.keys[ptr] = keys
			}
			return out, nil
		}
	}
}

// more reads what follows a member or an element: a comma (there are
// more) or the closing delimiter (there are not; err when neither).
func (d *decoder) more(closing byte, want string) (bool, error) {
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == ',' {
		d.pos++
		d.space()
		return true, nil
	}
	if d.pos < len(d.data) && d.data[d.pos] == closing {
		d.pos++
		return false, nil
	}
	return false, d.unexpected(want)
}

func (d *decoder) array(depth int) (any, error) {
	d.pos++ // [
	out := []any{}
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return out, nil
	}
	for i := 0; ; i++ {
		d.path = append(d.path, strconv.Itoa(i))
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		d.path = d.path[:len(d.path)-1]
		out = append(out, v)
		more, err := d.more(']', "',' or ']' in an array")
		if err != nil {
			return nil, err
		}
		if !more {
			return out, nil
		}
	}
}

// number reads a number as the JSON grammar writes it, into a
// json.Number: at most MaxNumberDigits digits, and an exponent of at
// most MaxNumberDigits (a validator writes 1e999999 out in full).
func (d *decoder) number() (_ any, err error) {
	start := d.pos
	defer func() {
		if err == nil {
			err = d.checkNumber(start)
		}
	}()
	digits := func() int {
		n := 0
		for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	if d.data[d.pos] == '-' {
		d.pos++
	}
	switch {
	case d.pos < len(d.data) && d.data[d.pos] == '0':
		d.pos++
	case digits() == 0:
		return nil, d.unexpected("a digit")
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if digits() == 0 {
			return nil, d.unexpected("a digit after '.'")
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			return nil, d.unexpected("a digit in the exponent")
		}
	}
	return json.Number(d.data[start:d.pos]), nil
}

// checkNumber holds the number just read, from start, to
// MaxNumberDigits.
func (d *decoder) checkNumber(start int) error {
	text := string(d.data[start:d.pos])
	mant, exp, _ := strings.Cut(strings.ToLower(text), "e")
	digits := len(mant) - strings.Count(mant, "-") - strings.Count(mant, ".")
	if digits > MaxNumberDigits {
		d.pos = start
		return d.limitf(limitNumberDigits, "a number of %d digits, more than the limit of %d (MaxNumberDigits)", digits, MaxNumberDigits)
	}
	if exp != "" {
		e := strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")
		if n, err := strconv.Atoi(e); e != "" && (err != nil || n > MaxNumberDigits) {
			d.pos = start
			return d.limitf(limitNumberDigits, "a number whose exponent is beyond ±%d (MaxNumberDigits)", MaxNumberDigits)
		}
	}
	return nil
}

// string reads a string at d.pos (its opening quote).
func (d *decoder) string() (string, error) {
	d.pos++ // "
	start := d.pos
	// The common case: no escapes, ASCII or valid UTF-8, no copy to make
	// but the string itself.
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		if c == '"' {
			s, ok := keyword(d.data[start:d.pos])
			if !ok {
				s = string(d.data[start:d.pos])
			}
			d.pos++
			return s, nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		d.pos++
	}
	d.buf = append(d.buf[:0], d.data[start:d.pos]...)
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			return string(d.buf), nil
		case c < 0x20:
			if d.quiet {
				return "", d.errorf("a control character in a string")
			}
			return "", d.errorf("control character %#02x in a string", c)
		case c == '\\':
			r, err := d.escape()
			if err != nil {
				return "", err
			}
			d.buf = utf8.AppendRune(d.buf, r)
		case c < utf8.RuneSelf:
			d.buf = append(d.buf, c)
			d.pos++
		default:
			r, size := utf8.DecodeRune(d.data[d.pos:])
			d.buf = utf8.AppendRune(d.buf, r) // U+FFFD for an invalid byte
			d.pos += size
		}
	}
	return "", d.unexpected("the end of a string")
}

// keyword returns b as a string without allocating one when b is a
// keyword most schemas use: a schema's keys are mostly these, and making
// a string of each was a tenth of decoding's allocations.
func keyword(b []byte) (string, bool) {
	switch string(b) { // compared in place: no string is made
	case "type":
		return "type", true
	case "properties":
		return "properties", true
	case "required":
		return "required", true
	case "description":
		return "description", true
	case "title":
		return "title", true
	case "items":
		return "items", true
	case "enum":
		return "enum", true
	case "const":
		return "const", true
	case "format":
		return "format", true
	case "pattern":
		return "pattern", true
	case "default":
		return "default", true
	case "additionalProperties":
		return "additionalProperties", true
	case "$ref":
		return "$ref", true
	case "$schema":
		return "$schema", true
	case "minimum":
		return "minimum", true
	case "maximum":
		return "maximum", true
	case "minLength":
		return "minLength", true
	case "maxLength":
		return "maxLength", true
	case "minItems":
		return "minItems", true
	case "maxItems":
		return "maxItems", true
	case "anyOf":
		return "anyOf", true
	case "oneOf":
		return "oneOf", true
	case "allOf":
		return "allOf", true
	case "definitions":
		return "definitions", true
	case "$defs":
		return "$defs", true
	case "examples":
		return "examples", true
	}
	return "", false
}

// typeName reads the string at d.pos (its quote) when it is the name of
// a JSON type, and returns it as an interface value that costs no
// allocation, as keyword does for keys.
func (d *decoder) typeName() (any, bool) {
	end := d.pos + 1
	for end < len(d.data) && end-d.pos <= len("boolean") && d.data[end] != '"' {
		end++
	}
	if end >= len(d.data) || d.data[end] != '"' {
		return nil, false
	}
	var v any
	switch string(d.data[d.pos+1 : end]) {
	case "string":
		v = "string"
	case "object":
		v = "object"
	case "integer":
		v = "integer"
	case "number":
		v = "number"
	case "boolean":
		v = "boolean"
	case "array":
		v = "array"
	case "null":
		v = "null"
	default:
		return nil, false
	}
	d.pos = end + 1
	return v, true
}

// escape reads the escape sequence at d.pos (its backslash).
func (d *decoder) escape() (rune, error) {
	d.pos++
	if d.pos >= len(d.data) {
		return 0, d.unexpected("an escape")
	}
	c := d.data[d.pos]
	d.pos++
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
		r, ok := d.hex4()
		if !ok {
			return 0, d.unexpected("4 hexadecimal digits after \\u")
		}
		if !utf16.IsSurrogate(r) {
			return r, nil
		}
		// A high surrogate takes the low one that follows; anything
		// else is U+FFFD, as encoding/json decodes it.
		if len(d.data)-d.pos >= 6 && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
			save := d.pos
			d.pos += 2
			if r2, ok := d.hex4(); ok {
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					return dec, nil
				}
			}
			d.pos = save
		}
		return utf8.RuneError, nil
	}
	d.pos--
	return 0, d.unexpected("an escape character")
}

// hex4 reads four hexadecimal digits.
func (d *decoder) hex4() (rune, bool) {
	if len(d.data)-d.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d.data[d.pos : d.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	d.pos += 4
	return r, true
}
