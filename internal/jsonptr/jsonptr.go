// Package jsonptr escapes and unescapes the reference tokens of JSON
// pointers (RFC 6901): "~" is written "~0" and "/" is written "~1".
package jsonptr

import "strings"

// Escape returns key as a JSON pointer's reference token.
func Escape(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// Unescape returns the key that a JSON pointer's reference token names.
func Unescape(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
}
