package jsonschema

import (
	"fmt"
	"maps"
	"slices"
)

// MaxFanOut bounds the subschemas that checking one value against a
// schema visits at the value's own location: a schema whose allOf,
// anyOf, oneOf and $refs lead to the same subschema along many paths (a
// chain of anyOfs of two references to the next link doubles at each
// link) is compiled fast, but the validator reins checks every output
// with follows every path, in time exponential in the chain's length.
// None of MaskBench's development schemas passes it.
const MaxFanOut = 100_000

const limitFanOut = "MaxFanOut"

// fanOut counts, for root, the subschemas a value's check visits at its
// own location (root itself, its allOf, anyOf and oneOf branches, not,
// if, then, else, dependent schemas and $ref targets, and theirs), and
// refuses a schema past MaxFanOut, naming the first subschema (deepest
// first) whose count passes it.
func (c *compiler) fanOut(root *Schema) error {
	memo := map[*Schema]int{}
	var over *Schema
	var visits func(s *Schema) int
	visits = func(s *Schema) int {
		if s == nil {
			return 0
		}
		if n, ok := memo[s]; ok {
			return n
		}
		memo[s] = 0 // a cycle at one location counts once (the validator stops it)
		n := 1
		add := func(sub *Schema) { n = min(n+visits(sub), MaxFanOut+1) }
		if s.Ref != "" {
			if t, err := c.p.target(s); err == nil {
				add(t)
			}
		}
		for _, list := range [][]*Schema{s.AllOf, s.AnyOf, s.OneOf} {
			for _, sub := range list {
				add(sub)
			}
		}
		for _, sub := range []*Schema{s.Not, s.If, s.Then, s.Else} {
			add(sub)
		}
		for _, d := range s.DepSchemas {
			add(d.Schema)
		}
		memo[s] = n
		if n > MaxFanOut && over == nil {
			over = s
		}
		return n
	}
	// Every subschema is the root of its own location's check somewhere:
	// visit them all, root first, the others in order of location.
	visits(root)
	for _, loc := range slices.Sorted(maps.Keys(c.p.byLoc)) {
		visits(c.p.byLoc[loc])
	}
	if over != nil {
		return &Error{Pointer: over.Ptr, Limit: limitFanOut, Msg: fmt.Sprintf("checking a value against this schema visits its subschemas more than %d times (MaxFanOut): allOf, anyOf, oneOf and $ref lead to the same subschemas along many paths, and the validator follows every one", MaxFanOut)}
	}
	return nil
}
