package automaton

import "github.com/reins-go/reins/internal/earley"

// Parser exposes a matcher's byte-level parser to benchmarks that place
// it inside a string or a number without tokens.
func (m *Matcher) Parser() *earley.Parser { return m.p }
