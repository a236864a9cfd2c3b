package jsonschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/reins-go/reins/grammar"
)

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// objectType compiles an object schema: its listed properties in
// schema order (required ones mandatory), then additional properties
// when allowed.
func (c *compiler) objectType(s map[string]any, ptr string, handled map[string]bool) (*grammar.Node, error) {
	presence := c.presence
	c.presence = nil
	for _, kw := range []string{"propertyNames", "maxProperties", "dependentSchemas", "unevaluatedProperties"} {
		if _, ok := s[kw]; ok {
			return nil, c.errorf(ptr, kw, "not supported")
		}
	}
	handled["properties"], handled["required"], handled["additionalProperties"], handled["minProperties"] = true, true, true, true
	nonEmpty := false
	if v, ok := s["minProperties"]; ok {
		n, ok := intOf(v)
		if !ok || n > 1 {
			return nil, c.errorf(ptr, "minProperties", "only minProperties 0 or 1 is supported")
		}
		nonEmpty = n == 1
	}
	props, _ := s["properties"].(map[string]any)
	if s["properties"] != nil && props == nil {
		return nil, c.errorf(ptr, "properties", "must be an object")
	}
	names := c.propertyOrder(ptr, props)
	required := map[string]bool{}
	var undeclared []string // required, but not in properties
	if r, ok := s["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return nil, c.errorf(ptr, "required", "must be an array")
		}
		for _, x := range list {
			name, ok := x.(string)
			if !ok {
				return nil, c.errorf(ptr, "required", "must list strings")
			}
			if _, ok := props[name]; !ok && !required[name] {
				undeclared = append(undeclared, name)
			}
			required[name] = true
		}
	}
	// A required property that properties does not list takes the schema
	// of additional properties.
	schemaOf := func(name string) (any, string) {
		if _, ok := props[name]; ok {
			return props[name], ptr + "/properties/" + escapePointer(name)
		}
		if a, ok := s["additionalProperties"]; ok {
			return a, ptr + "/additionalProperties"
		}
		return true, ptr
	}
	names = append(names, undeclared...)
	l := c.layout()
	var members []*grammar.Node
	for _, name := range names {
		v, err := c.nested(func() (*grammar.Node, error) { return c.schema(schemaOf(name)) })
		if err != nil {
			if isEmpty(err) {
				if required[name] {
					return nil, c.emptyf(ptr, "required", "property %q is required but no value satisfies its schema", name)
				}
				members = append(members, nil) // never present
				continue
			}
			return nil, err
		}
		members = append(members, grammar.Seq(lit(quote(name)), l.colon, v))
	}
	// Additional properties.
	var extra *grammar.Node
	switch a := s["additionalProperties"].(type) {
	case nil, bool:
		if a != false { // absent or true: any value
			extra = c.deeper(c.anyValue)
		}
	default:
		var err error
		if extra, err = c.nested(func() (*grammar.Node, error) { return c.schema(a, ptr+"/additionalProperties") }); err != nil {
			return nil, err
		}
	}
	var more *grammar.Node // one additional member
	if c.opts.Bounded && len(names) > 0 {
		// Generation: an object that lists properties takes no others.
		extra = nil
		handled["patternProperties"] = true
	} else if pp, ok := s["patternProperties"]; ok {
		handled["patternProperties"] = true
		var err error
		if more, err = c.patternMembers(pp, s, names, undeclared, ptr, l); err != nil {
			return nil, err
		}
	} else if extra != nil {
		more = c.rule(grammar.Seq(c.keyNotIn(names), l.colon, extra))
	}
	deps, err := c.dependencies(s, ptr, handled, names)
	if err != nil {
		return nil, err
	}
	o := objectShape{names: names, members: members, required: required, deps: deps, more: more, nonEmpty: nonEmpty, presence: presence}
	for _, set := range presence {
		for _, name := range set {
			if !slices.Contains(names, name) {
				return nil, c.errorf(ptr, "oneOf", "required property %q of a branch is not in properties: not supported", name)
			}
		}
	}
	if n := countPresent(members); n >= 1 && n <= anyOrderMax {
		o.once = true
		return c.anyOrder(o, ptr, l)
	}
	if !c.opts.Bounded && o.tracked() <= anyOrderMax {
		// Larger objects: any order too, repeats allowed; generation
		// (Bounded) keeps the schema's order instead, without repeats.
		return c.anyOrder(o, ptr, l)
	}
	if len(deps) > 0 || len(presence) > 0 {
		return nil, c.errorf(ptr, "dependencies", "dependent properties or a oneOf of required lists in an object of more than %d properties are not supported here", anyOrderMax)
	}
	// Right to left: first[i] when nothing was written yet, rest[i] after
	// (each ends the object's inside). With minProperties 1, first[len]
	// (no listed member written) needs an additional one.
	tailFirst := l.empty
	if nonEmpty {
		tailFirst = grammar.Alt()
	}
	tailRest := l.close
	if more != nil {
		most := -1
		if c.opts.Bounded {
			most = BoundedItems - 1
		}
		sepMore := grammar.Repeat(grammar.Seq(l.comma, more), 0, most)
		tailRest = grammar.Seq(sepMore, l.close)
		some := grammar.Seq(l.open, more, sepMore, l.close)
		tailFirst = grammar.Alt(some, tailFirst)
	}
	first, rest := c.rule(tailFirst), c.rule(tailRest)
	for i := len(members) - 1; i >= 0; i-- {
		m := members[i]
		if m == nil {
			continue
		}
		m = c.shareable(m, ptr+"/properties/"+escapePointer(names[i])) // in first and in rest

		f := grammar.Seq(l.open, m, rest)
		r := grammar.Seq(l.comma, m)
		if !required[names[i]] {
			f = grammar.Alt(f, first)
			r = grammar.Repeat(r, 0, 1)
		}
		// rest refers to the next rest once, so the chain stays linear
		// however the rules are inlined.
		first, rest = c.rule(f), c.rule(grammar.Seq(r, rest))
	}
	return grammar.Seq(lit("{"), first, lit("}")), nil
}

// patternMembers compiles patternProperties: one member whose key
// matches a pattern. It is exact when additionalProperties is false (no
// other key may appear), the patterns' schemas are all the same (a key
// matching several needs no intersection) and no listed property name
// matches a pattern (its value would need both schemas).
func (c *compiler) patternMembers(pp any, s map[string]any, names, undeclared []string, ptr string, l layout) (*grammar.Node, error) {
	m, ok := pp.(map[string]any)
	if !ok {
		return nil, c.errorf(ptr, "patternProperties", "must be an object")
	}
	if len(m) == 0 {
		return nil, nil
	}
	if a, ok := s["additionalProperties"].(bool); !ok || a {
		return nil, c.errorf(ptr, "patternProperties", "not supported unless additionalProperties is false (the other keys would need the patterns' complement)")
	}
	if len(undeclared) > 0 {
		return nil, c.errorf(ptr, "patternProperties", "required property %q is not in properties: not supported beside patternProperties", undeclared[0])
	}
	pats := make([]string, 0, len(m))
	for p := range m {
		pats = append(pats, p)
	}
	slices.Sort(pats)
	first, _ := json.Marshal(m[pats[0]]) // maps marshal with sorted keys

	var keys []*grammar.Node
	for _, p := range pats {
		pptr := ptr + "/patternProperties/" + escapePointer(p)
		if sc, _ := json.Marshal(m[p]); !bytes.Equal(sc, first) {
			return nil, c.errorf(pptr, "", "patterns with different schemas are not supported")
		}
		re, err := regexp.Compile(p) // as the validator reads it
		if err != nil {
			return nil, c.errorf(pptr, "", "bad pattern: %v", err)
		}
		for _, name := range names {
			if re.MatchString(name) {
				return nil, c.errorf(pptr, "", "property %q matches the pattern too: not supported", name)
			}
		}
		n, err := patternNode(p)
		if err != nil {
			return nil, c.errorf(pptr, "", "%v", err)
		}
		if n, err = jsonEncode(n); err != nil {
			return nil, c.errorf(pptr, "", "%v", err)
		}
		keys = append(keys, n)
	}
	v, err := c.nested(func() (*grammar.Node, error) {
		return c.schema(m[pats[0]], ptr+"/patternProperties/"+escapePointer(pats[0]))
	})
	if isEmpty(err) {
		return nil, nil // no value fits: no such key may appear
	}
	if err != nil {
		return nil, err
	}
	return c.rule(grammar.Seq(lit(`"`), grammar.Alt(keys...), lit(`"`), l.colon, v)), nil
}

// anyOrderMax is the most listed properties an object accepts in any
// order: tracking which were written takes a rule per subset.
const anyOrderMax = 6

func countPresent(members []*grammar.Node) int {
	n := 0
	for _, m := range members {
		if m != nil {
			n++
		}
	}
	return n
}

// objectShape is what anyOrder needs of an object schema.
type objectShape struct {
	names    []string
	members  []*grammar.Node // per name; nil when never present
	required map[string]bool
	deps     map[string][]string // dependentRequired: name -> names
	more     *grammar.Node       // one additional member, or nil
	nonEmpty bool                // minProperties 1
	once     bool                // each member at most once
	presence [][]string          // a oneOf of required lists: exactly one holds
}

// isTracked reports whether anyOrder must remember that member i was
// written.
func (o *objectShape) isTracked(i int) bool {
	if o.once || o.required[o.names[i]] || len(o.deps[o.names[i]]) > 0 {
		return true
	}
	for _, set := range o.presence {
		if slices.Contains(set, o.names[i]) {
			return true
		}
	}
	for _, ds := range o.deps {
		if slices.Contains(ds, o.names[i]) {
			return true
		}
	}
	return false
}

// tracked counts the members anyOrder remembers.
func (o *objectShape) tracked() int {
	n := 0
	for i, m := range o.members {
		if m != nil && o.isTracked(i) {
			n++
		}
	}
	return n
}

// anyOrder compiles an object whose listed members may come in any
// order, with additional members (if allowed) anywhere: a rule per set
// of tracked members written, which may end once the required ones, and
// the dependents of those written, are in. With once, every member is
// tracked and comes at most once. Without, only the required members and
// those in dependencies are, and the others may repeat: JSON leaves
// duplicate names to the reader, and the validator (as Go's and Python's
// decoders) keeps the last, which satisfies its schema like every other.
func (c *compiler) anyOrder(o objectShape, ptr string, l layout) (*grammar.Node, error) {
	var idx []int // members that can be present
	for i, m := range o.members {
		if m != nil {
			idx = append(idx, i)
		}
	}
	memberRule := make([]*grammar.Node, len(idx))
	bit := make([]uint, len(idx)) // the member's bit in a set, or 0 when untracked
	bitOf := map[string]uint{}
	var need uint
	tracked := 0
	for k, i := range idx {
		memberRule[k] = c.ruleAt(o.members[i], ptr+"/properties/"+escapePointer(o.names[i]))
		if o.isTracked(i) {
			bit[k] = 1 << tracked
			bitOf[o.names[i]] = bit[k]
			tracked++
			if o.required[o.names[i]] {
				need |= bit[k]
			}
		}
	}
	// canEnd: the required members are in, and for each member written
	// that has dependents, they are in too (a dependent that is never
	// present makes its member impossible).
	canEnd := func(set uint) bool {
		if set&need != need {
			return false
		}
		for name, ds := range o.deps {
			if set&bitOf[name] == 0 || bitOf[name] == 0 {
				continue
			}
			for _, d := range ds {
				if b, ok := bitOf[d]; !ok || set&b == 0 {
					return false
				}
			}
		}
		if len(o.presence) > 0 {
			holding := 0
			for _, names := range o.presence {
				all := true
				for _, name := range names {
					if b, ok := bitOf[name]; !ok || set&b == 0 {
						all = false
					}
				}
				if all {
					holding++
				}
			}
			return holding == 1
		}
		return true
	}
	full := uint(1)<<tracked - 1
	possible := false
	for set := range full + 1 {
		if canEnd(set) {
			possible = true
			break
		}
	}
	if !possible {
		return nil, c.emptyf(ptr, "required", "no set of properties satisfies required, dependencies and oneOf together")
	}
	sep := l.comma
	// after[set]: what may follow once the tracked members in set, and
	// at least one member, were written, to the end of the object's
	// inside. Rules are named first, bodies filled after.
	after := make([]*grammar.Node, full+1)
	at := make([]int, full+1)
	for set := range full + 1 {
		at[set] = len(c.g.Rules)
		after[set] = c.rule(grammar.Alt())
	}
	for set := range full + 1 {
		var alts []*grammar.Node
		for k := range idx {
			if set&bit[k] == 0 || bit[k] == 0 {
				alts = append(alts, grammar.Seq(sep, memberRule[k], after[set|bit[k]]))
			}
		}
		if o.more != nil {
			alts = append(alts, grammar.Seq(sep, o.more, after[set]))
		}
		if canEnd(set) {
			alts = append(alts, l.close)
		}
		c.g.Rules[at[set]].Body = grammar.Alt(alts...)
	}
	var first []*grammar.Node
	for k := range idx {
		first = append(first, grammar.Seq(l.open, memberRule[k], after[bit[k]]))
	}
	if o.more != nil {
		first = append(first, grammar.Seq(l.open, o.more, after[0]))
	}
	if canEnd(0) && !o.nonEmpty {
		first = append(first, l.empty)
	}
	return grammar.Seq(lit("{"), grammar.Alt(first...), lit("}")), nil
}

// presenceOneOf recognises a oneOf whose branches only list required
// properties, and returns the lists.
func presenceOneOf(sub any) ([][]string, bool) {
	list, ok := sub.([]any)
	if !ok || len(list) < 2 {
		return nil, false
	}
	var sets [][]string
	for _, b := range list {
		m, ok := b.(map[string]any)
		if !ok {
			return nil, false
		}
		var set []string
		for k, v := range m {
			if annotations[k] {
				continue
			}
			if k != "required" {
				return nil, false
			}
			names, ok := v.([]any)
			if !ok {
				return nil, false
			}
			for _, n := range names {
				name, ok := n.(string)
				if !ok {
					return nil, false
				}
				set = append(set, name)
			}
		}
		sets = append(sets, set)
	}
	return sets, true
}

// dependencies reads dependentRequired, or the array form of draft 4-7's
// dependencies: when a property is present, others must be. Dependents
// must be listed properties; schema dependencies are refused.
func (c *compiler) dependencies(s map[string]any, ptr string, handled map[string]bool, names []string) (map[string][]string, error) {
	deps := map[string][]string{}
	for _, kw := range []string{"dependentRequired", "dependencies"} {
		v, ok := s[kw]
		if !ok {
			continue
		}
		handled[kw] = true
		m, ok := v.(map[string]any)
		if !ok {
			return nil, c.errorf(ptr, kw, "must be an object")
		}
		for name, d := range m {
			list, ok := d.([]any)
			if !ok {
				return nil, c.errorf(ptr+"/"+kw, escapePointer(name), "schema dependencies are not supported")
			}
			for _, x := range list {
				dep, ok := x.(string)
				if !ok {
					return nil, c.errorf(ptr+"/"+kw, escapePointer(name), "must list property names")
				}
				if !slices.Contains(names, dep) {
					return nil, c.errorf(ptr+"/"+kw, escapePointer(name), "dependent property %q is not in properties: not supported", dep)
				}
				deps[name] = append(deps[name], dep)
			}
		}
	}
	for name := range deps {
		if !slices.Contains(names, name) {
			return nil, c.errorf(ptr, "dependencies", "property %q with dependents is not in properties: not supported", name)
		}
	}
	return deps, nil
}

// propertyOrder returns the names of props in the order the schema
// writes them: at ptr/properties, or, for properties merged from several
// places (allOf, siblings), in the order of their first appearance among
// the document's objects; names never seen in order come last, sorted.
func (c *compiler) propertyOrder(ptr string, props map[string]any) []string {
	if names := c.refs.order[ptr+"/properties"]; len(names) == len(props) {
		return names
	}
	if c.propertyRank == nil { // each name's first appearance, once
		c.propertyRank = map[string]int{}
		for _, p := range c.refs.ptrs { // document order
			if strings.HasSuffix(p, "/properties") {
				for _, name := range c.refs.order[p] {
					if _, seen := c.propertyRank[name]; !seen {
						c.propertyRank[name] = len(c.propertyRank)
					}
				}
			}
		}
	}
	names := slices.Collect(maps.Keys(props))
	slices.SortFunc(names, func(a, b string) int {
		ra, okA := c.propertyRank[a]
		rb, okB := c.propertyRank[b]
		switch {
		case okA && okB:
			return ra - rb
		case okA != okB: // never seen in order: last
			if okA {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return names
}

// rule names n as a rule of its own, so that a chain of optional members
// shares its tails instead of repeating them.
func (c *compiler) rule(n *grammar.Node) *grammar.Node {
	return c.ruleAt(n, c.ptr)
}

// ruleAt is rule for a part of the schema at ptr.
func (c *compiler) ruleAt(n *grammar.Node, ptr string) *grammar.Node {
	if n.Op == grammar.OpEmpty || n.Op == grammar.OpRef {
		return n
	}
	name := "r" + strconv.Itoa(len(c.g.Rules))
	c.setRulePtr(len(c.g.Rules), ptr)
	c.g.Rules = append(c.g.Rules, grammar.Rule{Name: name, Body: n})
	return grammar.Ref(name)
}

// keyNotIn is a JSON string, in canonical encoding, that is none of
// names. The canonical encoding makes the complement exact: no key can
// spell a listed name another way.
func (c *compiler) keyNotIn(names []string) *grammar.Node {
	// Objects often list the same names (a definition inlined in many
	// places): build each set's automaton once.
	sorted := slices.Compact(slices.Sorted(slices.Values(names)))
	return memo(&c.keysNotIn, strings.Join(sorted, "\x00"), func() *grammar.Node { return c.buildKeyNotIn(sorted) })
}

// memo returns (*cache)[key], built and kept on first use.
func memo(cache *map[string]*grammar.Node, key string, build func() *grammar.Node) *grammar.Node {
	if n, ok := (*cache)[key]; ok {
		return n
	}
	n := build()
	if *cache == nil {
		*cache = map[string]*grammar.Node{}
	}
	(*cache)[key] = n
	return n
}

// buildKeyNotIn walks the trie of the sorted, distinct names without
// building it: the names below a trie node are a run of the list that
// shares its first depth bytes.
func (c *compiler) buildKeyNotIn(sorted []string) *grammar.Node {
	anyTail := c.shared("_canontail", func() *grammar.Node {
		most := -1
		if c.opts.Bounded {
			most = BoundedLength
		}
		return grammar.Seq(grammar.Repeat(c.canonicalChar(nil), 0, most), lit(`"`))
	})
	quote := lit(`"`)
	runes := map[rune]*grammar.Node{}     // each character's literal, shared
	deviate := map[string]*grammar.Node{} // a character but these, then any tail
	var build func(run []string, depth int) *grammar.Node
	build = func(run []string, depth int) *grammar.Node {
		var alts []*grammar.Node
		if len(run) > 0 && len(run[0]) == depth {
			run = run[1:] // a name ends here; the shortest sorts first
		} else {
			alts = append(alts, quote)
		}
		var rs []rune
		for len(run) > 0 {
			r, size := utf8.DecodeRuneInString(run[0][depth:])
			prefix := run[0][:depth+size]
			k := 1
			for k < len(run) && strings.HasPrefix(run[k], prefix) {
				k++
			}
			rs = append(rs, r)
			if runes[r] == nil {
				runes[r] = lit(escapeRune(r))
			}
			alts = append(alts, grammar.Seq(runes[r], build(run[:k], depth+size)))
			run = run[k:]
		}
		if deviate[string(rs)] == nil {
			deviate[string(rs)] = grammar.Seq(c.canonicalChar(rs), anyTail)
		}
		return grammar.Alt(append(alts, deviate[string(rs)])...)
	}
	return grammar.Seq(quote, build(sorted, 0))
}

// canonicalChar is one string character in canonical encoding, other
// than the characters in except.
func (c *compiler) canonicalChar(except []rune) *grammar.Node {
	return memo(&c.canonicalChars, string(except), func() *grammar.Node { return c.buildCanonicalChar(except) })
}

func (c *compiler) buildCanonicalChar(except []rune) *grammar.Node {
	ascii := true // every excepted rune is printable ASCII, never escaped
	for _, r := range except {
		ascii = ascii && r >= 0x20 && r < 0x7f && r != '"' && r != '\\'
	}
	if !ascii {
		excluded := []rune{0, 0x1f, '"', '"', '\\', '\\'}
		for _, r := range except {
			excluded = append(excluded, r, r)
		}
		var alts []*grammar.Node
		alts = append(alts, &grammar.Node{Op: grammar.OpClass, Ranges: grammar.NegateRanges(grammar.NormalizeRanges(excluded))})
		for _, r := range append([]rune{'"', '\\'}, controlRunes()...) {
			if !slices.Contains(except, r) {
				alts = append(alts, lit(escapeRune(r)))
			}
		}
		return grammar.Alt(alts...)
	}
	// The common case shares everything but the ASCII class.
	excluded := []rune{0, 0x1f, '"', '"', '\\', '\\', 0x80, utf8.MaxRune}
	for _, r := range except {
		excluded = append(excluded, r, r)
	}
	multi := c.shared("_multibyte", func() *grammar.Node { return grammar.Class(0x80, utf8.MaxRune) })
	esc := c.shared("_canonesc", func() *grammar.Node {
		var alts []*grammar.Node
		for _, r := range append([]rune{'"', '\\'}, controlRunes()...) {
			alts = append(alts, lit(escapeRune(r)))
		}
		return grammar.Alt(alts...)
	})
	return grammar.Alt(&grammar.Node{Op: grammar.OpClass, Ranges: grammar.NegateRanges(grammar.NormalizeRanges(excluded))}, multi, esc)
}

func controlRunes() []rune {
	out := make([]rune, 0, 32)
	for r := rune(0); r < 0x20; r++ {
		out = append(out, r)
	}
	return out
}

// array compiles an array schema.
func (c *compiler) array(s map[string]any, ptr string, handled map[string]bool) (*grammar.Node, error) {
	for _, kw := range []string{"contains", "minContains", "maxContains", "unevaluatedItems"} {
		if _, ok := s[kw]; ok {
			return nil, c.errorf(ptr, kw, "not supported")
		}
	}
	handled["items"], handled["prefixItems"], handled["additionalItems"], handled["minItems"], handled["maxItems"], handled["uniqueItems"] = true, true, true, true, true, true
	if u, ok := s["uniqueItems"]; ok {
		if b, _ := u.(bool); b {
			return nil, c.errorf(ptr, "uniqueItems", "uniqueItems true cannot be expressed by a grammar")
		}
	}
	var prefix []any
	prefixKw := "prefixItems"
	var rest any = true // schema of the items after the prefix; nil for none allowed
	restPtr := ptr + "/items"
	if p, ok := s["prefixItems"]; ok {
		list, ok := p.([]any)
		if !ok {
			return nil, c.errorf(ptr, "prefixItems", "must be an array")
		}
		prefix = list
		if it, ok := s["items"]; ok {
			rest = it
		}
	} else if it, ok := s["items"]; ok {
		if list, isList := it.([]any); isList { // draft ≤ 2019 tuple form
			prefix, prefixKw = list, "items"
			rest, restPtr = true, ptr+"/additionalItems"
			if a, ok := s["additionalItems"]; ok {
				rest = a
			}
		} else {
			rest = it
		}
	}
	if b, isBool := rest.(bool); isBool && !b {
		rest = nil
	}
	min, max := 0, -1
	if v, ok := s["minItems"]; ok {
		n, ok := intOf(v)
		if !ok {
			return nil, c.errorf(ptr, "minItems", "must be a non-negative integer")
		}
		min = n
	}
	if v, ok := s["maxItems"]; ok {
		n, ok := intOf(v)
		if !ok {
			return nil, c.errorf(ptr, "maxItems", "must be a non-negative integer")
		}
		max = n
	}
	if c.opts.Bounded && max < 0 {
		max = min + BoundedItems
	}
	if rest == nil && (max < 0 || max > len(prefix)) {
		max = len(prefix)
	}
	if max >= 0 && max < min {
		return nil, c.errorf(ptr, "maxItems", "below minItems: no array fits")
	}
	if min > 1000 || max > 1000 {
		return nil, c.errorf(ptr, "maxItems", "item counts above 1000 are not supported")
	}
	var elems []*grammar.Node
	for i, p := range prefix {
		if i >= max && max >= 0 {
			break
		}
		n, err := c.nested(func() (*grammar.Node, error) { return c.schema(p, fmt.Sprintf("%s/%s/%d", ptr, prefixKw, i)) })
		if err != nil {
			return nil, err
		}
		elems = append(elems, n)
	}
	var restNode *grammar.Node
	if rest != nil && (max < 0 || max > len(prefix)) {
		var err error
		if restNode, err = c.nested(func() (*grammar.Node, error) { return c.schema(rest, restPtr) }); err != nil {
			return nil, err
		}
		restNode = c.shareable(restNode, restPtr) // used twice below
	}
	if len(elems) < min && restNode == nil {
		return nil, c.errorf(ptr, "minItems", "more items required than the schema allows")
	}
	l := c.layout()
	sep := l.comma
	// after(i): the items from index i on, each preceded by a separator.
	var after func(i int) *grammar.Node
	after = func(i int) *grammar.Node {
		if i < len(elems) {
			n := grammar.Seq(sep, elems[i], after(i+1))
			if i >= min {
				return grammar.Repeat(n, 0, 1)
			}
			return n
		}
		if restNode == nil {
			return &grammar.Node{Op: grammar.OpEmpty}
		}
		lo := max0(min - i)
		hi := -1
		if max >= 0 {
			hi = max - i
		}
		return grammar.Repeat(grammar.Seq(sep, restNode), lo, hi)
	}
	var body *grammar.Node
	switch {
	case len(elems) > 0:
		body = grammar.Seq(elems[0], after(1))
	case restNode != nil:
		hi := -1
		if max >= 0 {
			hi = max - 1
		}
		body = grammar.Seq(restNode, grammar.Repeat(grammar.Seq(sep, restNode), max0(min-1), hi))
	default:
		body = &grammar.Node{Op: grammar.OpEmpty}
	}
	if max == 0 || body.Op == grammar.OpEmpty {
		body = nil
	}
	return l.wrap("[", "]", body, min == 0), nil
}

func max0(x int) int { return max(x, 0) }
