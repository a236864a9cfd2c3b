// Package grammar is reins' constraint language: a small typed grammar
// representation (Grammar, Node) that every front end lowers into, and its
// compiler to a byte-level automaton (Prog) that reins' Earley parser
// runs.
//
// The stages follow Go's regexp/syntax: front ends (grammar/gbnf,
// grammar/regex, grammar/jsonschema, Choice) build a tree with source
// positions; Compile checks it (undefined rules, unproductive rules,
// depth, size) and lowers it to a Prog whose instructions match bytes,
// call rules and match whole tokens. Code points are lowered to their
// UTF-8 byte sequences, so a token that ends inside a multi-byte
// character is judged exactly. Errors of every stage are *Error, with the
// source's name and the position.
//
// Parsing is Earley's algorithm over the Prog, so any context-free grammar
// works: left recursion, nullable rules and deep nesting cost polynomial
// time and state, never exponential; a very ambiguous grammar can cost
// cubic time, which the parser's work budget bounds.
package grammar
