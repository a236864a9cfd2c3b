// Package jsonkind names, for an error a user reads, the JSON a Go type
// decodes from: "want an integer, got JSON string" rather than
// encoding/json's "cannot unmarshal string into Go struct field ... of
// type int".
package jsonkind

import "reflect"

// Of names the JSON that values of t decode from: "a JSON object", "an
// integer", "a number", ...
func Of(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "a JSON object"
	case reflect.Slice, reflect.Array:
		return "a JSON array"
	case reflect.String:
		return "a JSON string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "other JSON"
}
