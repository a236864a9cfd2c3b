// Package grammar is reins' constraint language: a small typed grammar
// representation (Grammar, Node) that every front end lowers into, and its
// compiler to a byte-level automaton (Prog) that a Parser runs.
//
// The stages follow Go's regexp/syntax: front ends (grammar/gbnf,
// grammar/regex, Choices) build a tree with source positions; Compile
// checks it (undefined rules, unproductive rules) and lowers it to a Prog
// whose instructions match bytes, call rules and match whole tokens; a
// Parser holds one sequence's parse and moves byte by byte, with push and
// pop for speculative walks. Code points are lowered to their UTF-8 byte
// sequences, so a token that ends inside a multi-byte character is judged
// exactly.
//
// Parsing is Earley's algorithm over the Prog, so any context-free grammar
// works: left recursion, ambiguity, nullable rules and deep nesting cost
// polynomial time and state, never exponential.
package grammar
