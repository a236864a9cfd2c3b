// Package jsonschema compiles a JSON Schema into a grammar.Grammar whose
// language is JSON text valid under the schema.
//
// The rule that matters most: a schema that cannot be compiled exactly
// is an error naming the keyword and its JSON pointer, never silently
// widened. Where exactness would need more than a grammar can say, the
// compiler keeps to a documented subset of the valid texts (narrower,
// never wider) or refuses; see Compile for the keywords.
//
// Output conventions, which the grammar enforces:
//
//   - Property order. An object that lists at most 6 properties takes
//     them in any order, each at most once, with additional properties
//     (where allowed) anywhere among them. A larger object takes its
//     listed properties in the order the schema writes them (merged ones,
//     from allOf or siblings, in order of first appearance), then the
//     additional ones. Required properties are never skipped.
//   - Strings: any character or JSON escape, except that pattern, format
//     and additional-property-name strings use the canonical encoding
//     (characters as they are; ", \ and control characters escaped, with
//     the short forms where JSON has them), so that the pattern or the
//     exclusion of listed names is judged on the decoded text exactly.
//     Lengths count code points (escaped surrogate pairs are left out of
//     bounded strings, so a count is never off).
//   - Numbers as JSON writes them; numbers with bounds without an
//     exponent, compared exactly as decimals; "-0" is left out of bounded
//     ranges.
//   - Whitespace: flexible (runs of at most Options.MaxWhitespace spaces,
//     tabs and newlines between tokens); with Compact, none; with Indent,
//     exactly json.MarshalIndent's layout.
//
// Stages, each in its own file and testable alone: decode.go reads the
// document (key order kept); parse.go turns each schema object into a
// typed Schema, once; resolve.go finds the targets of $refs (across
// documents, through Options.Loader), which the parser links on first
// use; normalize.go intersects a schema with its allOf branches, its
// $ref's target and, as combinators are distributed, the branch taken,
// into one Node (numeric bounds exact, "no value" a reason at a
// pointer rather than an error); lower.go (with strings.go, array.go,
// object.go, oneof.go) writes Nodes as grammar. eval.go checks values
// against Schemas as the validator does, for the constructions that
// enumerate values (enum, const). Schema.String and Node.String are
// deterministic dumps; testdata/typed holds them for the official test
// suite's schemas.
//
// For generation, Options.Bounded gives what the schema leaves open a
// bound (strings, arrays, number digits, free JSON depth), so that a
// sampled output always ends by itself.
//
// Hostile schemas: compile time and memory grow polynomially, and
// slowly, with the schema's size. Documented limits (MaxSchemaBytes,
// MaxDepth, MaxNumberDigits, MaxEnumValues, MaxLiteralBytes,
// MaxOneOfBranches, MaxDocuments, and grammar.MaxInst for the grammar)
// are checked before the work they bound; a schema past one is an *Error
// whose Limit names it, at the JSON pointer of what is too large. $refs
// to other documents are read only through Options.Loader; DirLoader
// reads regular files under one folder, of bounded size.
package jsonschema
