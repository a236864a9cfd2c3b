// Package jsonschema compiles a JSON Schema into a grammar.Grammar whose
// language is JSON text valid under the schema.
//
// The rule that matters most: a schema that cannot be compiled exactly
// is an error naming the keyword and its JSON pointer, never silently
// widened. This package covers a core of keywords exactly and refuses
// the rest; see Compile for the list.
//
// Output conventions, which the grammar enforces: object properties come
// in the order the schema lists them, then any additional properties;
// strings use the canonical encoding (characters as they are; \", \\ and
// control characters escaped, short forms where JSON has them); numbers
// as JSON writes them. Whitespace is flexible (runs of up to
// Options.MaxWhitespace spaces, tabs and newlines between tokens) or, with
// Compact, none.
package jsonschema
