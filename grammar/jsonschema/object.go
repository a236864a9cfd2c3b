package jsonschema

import (
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/internal/jsonptr"
)

// objectShape is what the object keywords of a Node's schemas say,
// intersected: the names listed (in order) and, for each, the schemas
// its value must satisfy.
type objectParts struct {
	names      []string
	values     [][]*Schema // per name: what its value satisfies (all of them)
	required   map[string]bool
	undeclared []string // required names no schema lists
	minProps   int
	maxProps   int // -1: none
	deps       map[string][]string
}

// valueSchemas returns what the value of property name must satisfy
// under the object schemas parts: in each, its properties entry, the
// patternProperties whose pattern matches name, and additionalProperties
// where neither applies. A pattern is matched as the validator matches
// it (Go's regexp on the decoded name).
func (c *compiler) valueSchemas(parts []*Schema, name string) ([]*Schema, error) {
	var out []*Schema
	for _, s := range parts {
		listed := s.prop(name)
		if listed != nil {
			out = append(out, listed)
		}
		matched := false
		for _, pp := range s.PatternProps {
			re, err := c.ev.regexp(pp.Pattern)
			if err != nil {
				return nil, c.errorf(s.Ptr+"/patternProperties", jsonptr.Escape(pp.Pattern), "%v", err)
			}
			if re.MatchString(name) {
				matched = true
				out = append(out, pp.Schema)
			}
		}
		if listed == nil && !matched && s.AdditionalProps != nil {
			out = append(out, s.AdditionalProps)
		}
	}
	return out, nil
}

// object compiles the objects of n: its listed properties (required
// ones mandatory), then additional properties when allowed.
func (c *compiler) object(n *Node) (*grammar.Node, error) {
	unevaluated, err := c.unevaluatedObjects(n)
	if err != nil {
		return nil, err
	}
	parts := append(slices.Clone(n.Obj), unevaluated...)
	ptr := n.Ptr
	nonEmpty := false
	minProps, maxProps := 0, -1
	var nameSchemas []*Schema // the propertyNames every key satisfies
	for _, s := range parts {
		for _, d := range s.DepSchemas {
			if !slices.Contains(n.depsDone, s) {
				return nil, c.errorf(s.Ptr+"/"+d.Keyword, jsonptr.Escape(d.Name), "schema dependencies are not supported here")
			}
		}
		if s.PropertyNames != nil && !s.PropertyNames.isTrue() {
			nameSchemas = append(nameSchemas, s.PropertyNames)
		}
		minProps = max(minProps, s.MinProps)
		if s.Has.has(kwMaxProperties) && (maxProps < 0 || s.MaxProps < maxProps) {
			maxProps = s.MaxProps
		}
	}
	nonEmpty = minProps == 1
	names := c.propertyOrder(parts)
	listed := newNameSet(names)
	required := map[string]bool{}
	var undeclared []string    // required, but in no properties
	var requiredOrder []string // the required names, in the order required lists them
	for _, s := range parts {
		for _, name := range s.Required {
			if !required[name] && listed.index(name) < 0 {
				undeclared = append(undeclared, name)
			}
			if !required[name] {
				requiredOrder = append(requiredOrder, name)
			}
			required[name] = true
		}
	}
	if maxProps == 0 && (len(required) > 0 || minProps > 0) {
		// Empty, whatever the members: said before building them (an
		// additional member's rule, made for thousands of names, would
		// stay in the grammar and count against its size).
		return nil, c.emptyf(ptr, "maxProperties", "0, beside required properties or minProperties")
	}
	if len(undeclared) > 0 {
		names = append(names, undeclared...)
		listed = newNameSet(names)
	}
	l := c.layout()
	var members []*grammar.Node
	for _, name := range names {
		if len(nameSchemas) > 0 {
			ok, err := c.ev.validAll(nameSchemas, name)
			if err != nil {
				return nil, c.wrapf(nameSchemas[0].Ptr, "propertyNames", err)
			}
			if !ok { // a name propertyNames refuses is never present
				if required[name] {
					return nil, c.emptyf(ptr, "propertyNames", "property %q is required but propertyNames refuses it", name)
				}
				members = append(members, nil)
				continue
			}
		}
		xs, err := c.valueSchemas(parts, name)
		if err != nil {
			return nil, err
		}
		v, err := c.nested(func() (*grammar.Node, error) {
			if len(xs) == 0 {
				return c.anyValue(), nil
			}
			return c.conj(xs...)
		})
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
		members = append(members, c.nodes.seq(c.nodes.bytes(quote(name)), l.colon, v))
	}
	// Every instance of a non-empty object writes each required name:
	// where the names alone pass the grammar's budget (checkSize would
	// count them at least once), refuse before building the rest, which
	// for 200,000 names took 3 s and 600 MB only to be refused then. An
	// object no value satisfies (maxProperties 0, or a required name
	// refused, both above) is not refused for its size.
	keyBytes := 0
	for _, name := range requiredOrder {
		keyBytes += len(name) + len(`""`)
	}
	if keyBytes > grammar.MaxInst {
		at := parts[0] // the schema whose required list is the longest
		for _, s := range parts {
			if len(s.Required) > len(at.Required) {
				at = s
			}
		}
		return nil, c.limitf(at.Ptr, "required", limitGrammar, "%d required properties, whose names alone would take %d instructions, more than grammar.MaxInst (%d)", len(requiredOrder), keyBytes, grammar.MaxInst)
	}
	// Additional properties.
	var patterned []*Schema // parts with patternProperties
	var extras []*Schema    // additionalProperties of the parts without
	for _, s := range parts {
		switch {
		case len(s.PatternProps) > 0:
			patterned = append(patterned, s)
		case s.AdditionalProps != nil:
			extras = append(extras, s.AdditionalProps)
		}
	}
	keyComps, noKeys, err := c.keyLanguage(nameSchemas)
	if err != nil {
		return nil, err
	}
	var more *grammar.Node // one additional member
	switch {
	case c.opts.Bounded && len(names) > 0, noKeys:
		// Generation: an object that lists properties takes no others;
		// or propertyNames takes no key.
	case len(patterned) > 0 || len(keyComps) > 0:
		var err error
		if more, err = c.patternMembers(patterned, extras, names, keyComps, ptr, l); err != nil {
			return nil, err
		}
	default:
		extra, err := c.nested(func() (*grammar.Node, error) {
			if len(extras) == 0 {
				return c.anyValue(), nil
			}
			return c.conj(extras...)
		})
		switch {
		case isEmpty(err):
		case err != nil:
			return nil, err
		default:
			more = c.rule(c.nodes.seq(c.keyNotIn(names), l.colon, extra))
		}
	}
	deps := map[string][]string{}
	for _, s := range parts {
		for _, d := range s.DepRequired {
			for _, dep := range d.Required {
				if listed.index(dep) < 0 {
					return nil, c.errorf(s.Ptr+"/dependentRequired", jsonptr.Escape(d.Name), "dependent property %q is not in properties: not supported", dep)
				}
				deps[d.Name] = append(deps[d.Name], dep)
			}
			if len(d.Required) > 0 && listed.index(d.Name) < 0 {
				return nil, c.errorf(s.Ptr, "dependencies", "property %q with dependents is not in properties: not supported", d.Name)
			}
		}
	}
	presence := n.presence
	// Bounds on the count of properties that always hold need no count.
	if minProps > 1 && len(required) >= minProps {
		minProps = 0
	}
	if maxProps >= 0 && more == nil && countPresent(members) <= maxProps {
		maxProps = -1
	}
	if minProps > 1 && minProps > countPresent(members) {
		if more == nil && !c.opts.Bounded { // no other key can be written (Bounded may have cut some)
			return nil, c.emptyf(ptr, "minProperties", "at least %d properties, more than the %d it may have", minProps, countPresent(members))
		}
		return nil, c.errorf(ptr, "minProperties", "at least %d properties, more than the %d listed, is not supported (additional keys may repeat one another)", minProps, countPresent(members))
	}
	if maxProps == 0 {
		if len(required) > 0 || minProps > 0 {
			return nil, c.emptyf(ptr, "maxProperties", "0, beside required properties or minProperties")
		}
		if presence != nil { // a oneOf of required lists: {} holds the empty ones
			empty := 0
			for _, set := range presence {
				if len(set) == 0 {
					empty++
				}
			}
			if empty != 1 {
				return nil, c.emptyf(ptr, "maxProperties", "0, where the empty object satisfies %d branches of a oneOf of required lists, not one", empty)
			}
		}
		return c.nodes.seq(c.nodes.bytes("{"), l.empty, c.nodes.bytes("}")), nil
	}
	o := objectShape{names: names, members: members, required: required, deps: deps, more: more, nonEmpty: nonEmpty, presence: presence,
		minProps: minProps, maxProps: maxProps}
	for _, set := range presence {
		for _, name := range set {
			if listed.index(name) < 0 {
				return nil, c.errorf(ptr, "oneOf", "required property %q of a branch is not in properties: not supported", name)
			}
		}
	}
	if k := countPresent(members); k >= 1 && k <= anyOrderMax {
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
	if minProps > 1 || maxProps >= 0 {
		kw := "minProperties"
		if maxProps >= 0 {
			kw = "maxProperties"
		}
		return nil, c.errorf(ptr, kw, "counting the properties of an object of more than %d properties taken in order is not supported", anyOrderMax)
	}
	// Right to left: first[i] when nothing was written yet, rest[i] after
	// (each ends the object's inside). With minProperties 1, first[len]
	// (no listed member written) needs an additional one.
	tailFirst := l.empty
	if nonEmpty {
		tailFirst = c.nodes.alt()
	}
	tailRest := l.close
	if more != nil {
		most := -1
		if c.opts.Bounded {
			most = BoundedItems - 1
		}
		sepMore := c.nodes.repeat(c.nodes.seq(l.comma, more), 0, most)
		tailRest = c.nodes.seq(sepMore, l.close)
		some := c.nodes.seq(l.open, more, sepMore, l.close)
		tailFirst = c.nodes.alt(some, tailFirst)
	}
	tailFirst, tailRest = c.rule(tailFirst), c.rule(tailRest)
	// The members in the schema's order, and, where it differs, with the
	// required ones first in the order required lists them: the two
	// orders instances are written in.
	order := make([]int, len(members))
	for i := range order {
		order[i] = i
	}
	orders := [][]int{order}
	var byRequired []int
	placed := make([]bool, len(members))
	for _, name := range requiredOrder {
		if i := listed.index(name); i >= 0 && !placed[i] {
			byRequired = append(byRequired, i)
			placed[i] = true
		}
	}
	for i := range members {
		if !placed[i] {
			byRequired = append(byRequired, i)
		}
	}
	if !slices.Equal(byRequired, order) {
		orders = append(orders, byRequired)
	}
	shared := make([]*grammar.Node, len(members))
	var chains []*grammar.Node
	for _, order := range orders {
		first, rest := tailFirst, tailRest
		for k := len(order) - 1; k >= 0; k-- {
			i := order[k]
			m := members[i]
			if m == nil {
				continue
			}
			if shared[i] == nil {
				shared[i] = c.shareable(m, ptr+"/properties/"+jsonptr.Escape(names[i])) // in first and in rest
			}
			m = shared[i]
			f := c.nodes.seq(l.open, m, rest)
			r := c.nodes.seq(l.comma, m)
			if !required[names[i]] {
				f = c.nodes.alt(f, first)
				r = c.nodes.repeat(r, 0, 1)
			}
			// rest refers to the next rest once, so the chain stays linear
			// however the rules are inlined.
			first, rest = c.rule(f), c.rule(c.nodes.seq(r, rest))
		}
		chains = append(chains, first)
	}
	return c.nodes.seq(c.nodes.bytes("{"), c.nodes.alt(chains...), c.nodes.bytes("}")), nil
}

// keyLanguage returns the automata every key must be accepted by under
// the propertyNames schemas xs (none when xs is empty), or noKeys when
// they take no string. Keys are strings: the propertyNames schemas' other
// types do not matter.
func (c *compiler) keyLanguage(xs []*Schema) (comps []*dfa, noKeys bool, err error) {
	if len(xs) == 0 {
		return nil, false, nil
	}
	n, err := c.z.normalize(xs)
	if err != nil {
		return nil, false, err
	}
	if n.Unsat != nil || n.Types&tString == 0 {
		return nil, true, nil
	}
	if len(n.AnyOf)+len(n.OneOf)+len(n.Not)+len(n.If) > 0 {
		return nil, false, c.errorf(xs[0].Ptr, "propertyNames", "combinators in propertyNames are not supported")
	}
	if n.HasEnum {
		var names []string
		for _, v := range n.Enum {
			s, ok := v.(string)
			if !ok {
				continue
			}
			if ok, err := c.ev.validAll(n.Schemas, s); err != nil {
				return nil, false, c.wrapf(xs[0].Ptr, "propertyNames", err)
			} else if ok {
				names = append(names, s)
			}
		}
		if len(names) == 0 {
			return nil, true, nil
		}
		return []*dfa{namesDFA(names)}, false, nil
	}
	strs, want, _, _, err := c.stringComponents(n)
	if err != nil {
		return nil, false, err
	}
	d, err := product(strs, func(t []int32) int32 {
		for i, x := range t {
			if (strs[i].label[x] != 0) != want[i] {
				return 0
			}
		}
		return 1
	})
	if err != nil {
		return nil, false, c.errorf(xs[0].Ptr, "propertyNames", "by automaton: %v", err)
	}
	return []*dfa{d}, false, nil
}

// maxKeyPatterns bounds the patterns of patternProperties one object's
// keys are judged by (its schemas' together).
const maxKeyPatterns = 16

// patternMembers compiles one additional member of an object some of
// whose schemas have patternProperties: a key that is no listed name,
// whose value satisfies what the key calls for: in each schema with
// patternProperties, the schemas of the patterns the key matches, or
// its additionalProperties where none does; in the others (extras),
// their additionalProperties. The keys are split by the patterns they
// match with an automaton of all the patterns and the listed names
// (patterns read as the validator reads them, with Go's regexp); nil
// when no additional key is possible.
func (c *compiler) patternMembers(patterned, extras []*Schema, names []string, keyComps []*dfa, ptr string, l layout) (*grammar.Node, error) {
	type pat struct {
		part int
		pp   PatternProp
		ptr  string
	}
	var pats []pat
	for i, s := range patterned {
		for _, pp := range s.PatternProps {
			pats = append(pats, pat{i, pp, s.Ptr + "/patternProperties/" + jsonptr.Escape(pp.Pattern)})
		}
	}
	at := ptr
	if len(patterned) > 0 {
		at = patterned[0].Ptr
	}
	if len(pats) > maxKeyPatterns {
		return nil, c.errorf(at, "patternProperties", "more than %d patterns judge one object's keys: not supported", maxKeyPatterns)
	}
	comps := make([]*dfa, 0, len(pats)+len(keyComps)+2)
	for _, p := range pats {
		d, err := c.regexDFA(p.pp.Pattern, true)
		if err != nil {
			return nil, c.errorf(p.ptr, "", "the pattern's complement, for the other keys: %v", err)
		}
		comps = append(comps, d.complete())
	}
	listed := namesDFA(names).complete()
	comps = append(comps, listed)
	if c.opts.Bounded {
		comps = append(comps, lengthDFA(0, BoundedLength))
	}
	firstKey := len(comps)
	comps = append(comps, keyComps...) // propertyNames: every one accepts
	regions := map[uint64]int32{}      // the patterns a key matches → its label, 0 if no value fits
	values := []*grammar.Node{nil}     // by label
	var lowerErr error
	label := func(t []int32) int32 {
		if listed.label[t[len(pats)]] != 0 || lowerErr != nil {
			return 0
		}
		for i := firstKey; i < len(comps); i++ {
			if comps[i].label[t[i]] == 0 {
				return 0
			}
		}
		var v uint64
		for i := range pats {
			if comps[i].label[t[i]] != 0 {
				v |= 1 << i
			}
		}
		if lab, ok := regions[v]; ok {
			return lab
		}
		xs := slices.Clone(extras)
		for pi, s := range patterned {
			matched := false
			for i, p := range pats {
				if p.part == pi && v&(1<<i) != 0 {
					xs = append(xs, p.pp.Schema)
					matched = true
				}
			}
			if !matched && s.AdditionalProps != nil {
				xs = append(xs, s.AdditionalProps)
			}
		}
		g, err := c.nested(func() (*grammar.Node, error) {
			if len(xs) == 0 {
				return c.anyValue(), nil
			}
			return c.conj(xs...)
		})
		if err != nil {
			if !isEmpty(err) {
				lowerErr = err
			}
			regions[v] = 0
			return 0
		}
		lab := int32(len(values))
		values = append(values, g)
		regions[v] = lab
		return lab
	}
	d, err := product(comps, label)
	if lowerErr != nil {
		return nil, lowerErr
	}
	if err != nil {
		if len(patterned) == 0 { // the keys' automata are propertyNames' alone
			return nil, c.errorf(ptr, "propertyNames", "the keys it allows, beside the listed names, by automaton: %v", err)
		}
		return nil, c.errorf(at, "patternProperties", "splitting the keys by pattern: %v", err)
	}
	d = d.minimize()
	if d.label[0] == 0 && len(d.edges[0]) == 0 {
		return nil, nil // no additional key is possible
	}
	// What follows a key, its closing quote and its value, is one rule per
	// label, referred to from every accepting state of that label, which
	// the grammar compiler inlines or calls as its budget allows: a
	// pattern such as ^[a-z]{1,255}$ has 255 of them, and a copy of the
	// value in each made 130,000 instructions of a 17 KB schema.
	tails := make([]*grammar.Node, len(values))
	key, err := c.dfaGrammar(d, ptr, func(lab int32) *grammar.Node {
		if tails[lab] == nil {
			tails[lab] = c.ruleAt(c.nodes.seq(c.nodes.bytes(`"`), l.colon, values[lab]), ptr)
		}
		return tails[lab]
	})
	if err != nil {
		return nil, c.errorf(at, "patternProperties", "%v", err)
	}
	return c.rule(c.nodes.seq(c.nodes.bytes(`"`), key)), nil
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
	// minProps (above 1) is met by distinct tracked members only (an
	// additional key may repeat another); maxProps (-1: none) counts
	// every member written (a repeated key counts twice: narrower).
	minProps, maxProps int
}

// isTracked reports whether anyOrder must remember that member i was
// written.
func (o *objectShape) isTracked(i int) bool {
	if o.once || o.minProps > 1 || o.required[o.names[i]] || len(o.deps[o.names[i]]) > 0 {
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
	// With more than one state, each state refers to the tracked members
	// it may take next, and to the rule of the others: they stay calls
	// (grammar.Rule.Called) rather than a copy of their code in every
	// state. An untracked member is referred to once, from that rule.
	states := o.tracked() > 0 || o.maxProps >= 0
	memberRule := make([]*grammar.Node, len(idx))
	bit := make([]uint, len(idx)) // the member's bit in a set, or 0 when untracked
	bitOf := map[string]uint{}
	var need uint
	tracked := 0
	for k, i := range idx {
		memberRule[k] = c.memberRule(o.members[i], ptr+"/properties/"+jsonptr.Escape(o.names[i]), states && o.isTracked(i))
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
	if o.minProps > 1 {
		// Distinct members written: the tracked ones.
		base := canEnd
		canEnd = func(set uint) bool { return base(set) && bits.OnesCount(set) >= o.minProps }
	}
	possible := false
	for set := range full + 1 {
		if canEnd(set) {
			possible = true
			break
		}
	}
	if !possible {
		return nil, c.emptyf(ptr, "required", "no set of properties satisfies required, dependencies, minProperties and oneOf together")
	}
	// counts: how many members written anyOrder tells apart (with
	// maxProperties, up to it).
	counts := 1
	if o.maxProps >= 0 {
		counts = o.maxProps + 1
		if int(full+1)*counts > maxObjectStates {
			return nil, c.errorf(ptr, "maxProperties", "counting the properties would take more than %d states", maxObjectStates)
		}
	}
	sep := l.comma
	// after[set*counts+k]: what may follow once the tracked members in
	// set, and k members in all (at least one), were written, to the end
	// of the object's inside, rule at[set*counts+k]. Rules are named
	// first, their bodies one placeholder until filled after.
	after := make([]*grammar.Node, int(full+1)*counts)
	at := make([]int, len(after))
	pending := c.nodes.alt()
	for i := range after {
		at[i] = len(c.g.Rules)
		after[i] = c.rule(pending)
	}
	// The members not tracked (and additional ones) lead back to the same
	// set: one shared rule of them all.
	var free []*grammar.Node
	for k := range idx {
		if bit[k] == 0 {
			free = append(free, memberRule[k])
		}
	}
	if o.more != nil {
		free = append(free, o.more)
	}
	var anyFree *grammar.Node
	if len(free) > 0 {
		anyFree = c.memberRule(c.nodes.alt(free...), ptr, states)
	}
	// next is the alternation of what may come after a separator (or the
	// opening) in set, with k members written, or nil. Its branches are
	// gathered in one buffer, which the slab copies.
	var branches []*grammar.Node
	next := func(set uint, k int) *grammar.Node {
		nk := k + 1
		if o.maxProps >= 0 {
			if k >= o.maxProps {
				return nil
			}
		} else {
			nk = 0
		}
		branches = branches[:0]
		for m := range idx {
			if bit[m] != 0 && set&bit[m] == 0 {
				branches = append(branches, c.nodes.seq(memberRule[m], after[int(set|bit[m])*counts+nk]))
			}
		}
		if anyFree != nil {
			branches = append(branches, c.nodes.seq(anyFree, after[int(set)*counts+nk]))
		}
		if len(branches) == 0 {
			return nil
		}
		return c.nodes.alt(branches...)
	}
	for set := range full + 1 {
		for k := range counts {
			var body [2]*grammar.Node
			alts := body[:0]
			if n := next(set, k); n != nil {
				alts = append(alts, c.nodes.seq(sep, n))
			}
			if canEnd(set) {
				alts = append(alts, l.close)
			}
			c.g.Rules[at[int(set)*counts+k]].Body = c.nodes.alt(alts...)
		}
	}
	var first [2]*grammar.Node
	alts := first[:0]
	if n := next(0, 0); n != nil {
		alts = append(alts, c.nodes.seq(l.open, n))
	}
	if canEnd(0) && !o.nonEmpty {
		alts = append(alts, l.empty)
	}
	return c.nodes.seq(c.nodes.bytes("{"), c.nodes.alt(alts...), c.nodes.bytes("}")), nil
}

// nameSet finds a name's place in an object's list of property names: a
// short list by looking through it, a long one by a map, so that an
// object of many properties and required names compiles in time linear
// in them (a schema of 60,000 required names took 10 s when every lookup
// looked through the list).
type nameSet struct {
	names []string
	at    map[string]int // for a long list: each name's first place
}

// shortNames is the longest list a nameSet looks through.
const shortNames = 16

func newNameSet(names []string) nameSet {
	x := nameSet{names: names}
	if len(names) > shortNames {
		x.at = make(map[string]int, len(names))
		for i, name := range names {
			if _, dup := x.at[name]; !dup {
				x.at[name] = i
			}
		}
	}
	return x
}

// index returns the first place of name in the list, or -1.
func (x nameSet) index(name string) int {
	if x.at == nil {
		return slices.Index(x.names, name)
	}
	if i, ok := x.at[name]; ok {
		return i
	}
	return -1
}

// maxObjectStates bounds the states of an object taking its members in
// any order while it counts them (maxProperties).
const maxObjectStates = 4096

// propertyOrder returns the names the object schemas parts list, in the
// order the schema writes them: one schema's, or, for properties from
// several (allOf, siblings), in the order of their first appearance
// among the documents' objects; names never seen in order come last,
// sorted.
func (c *compiler) propertyOrder(parts []*Schema) []string {
	// Schemas reins wrote (negations, unevaluatedProperties) do not
	// order: their names come after.
	var withProps, written []*Schema
	for _, s := range parts {
		switch {
		case len(s.Props) == 0:
		case s.synthetic:
			written = append(written, s)
		default:
			withProps = append(withProps, s)
		}
	}
	appendWritten := func(names []string) []string {
		for _, s := range written {
			for _, p := range s.Props {
				if !slices.Contains(names, p.Name) {
					names = append(names, p.Name)
				}
			}
		}
		return names
	}
	if len(withProps) <= 1 {
		var names []string
		if len(withProps) == 1 {
			for _, p := range withProps[0].Props {
				names = append(names, p.Name)
			}
		}
		return appendWritten(names)
	}
	var names []string
	seen := map[string]bool{}
	for _, s := range withProps {
		for _, p := range s.Props {
			if !seen[p.Name] {
				seen[p.Name] = true
				names = append(names, p.Name)
			}
		}
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
	slices.SortStableFunc(names, func(a, b string) int {
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
	return appendWritten(names)
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
	return c.nodes.ref(name)
}

// memberRule is ruleAt for what an object's states take next, marked
// grammar.Rule.Called when called is set (anyOrder says for which).
func (c *compiler) memberRule(n *grammar.Node, ptr string, called bool) *grammar.Node {
	at := len(c.g.Rules)
	ref := c.ruleAt(n, ptr)
	if called && len(c.g.Rules) > at {
		c.g.Rules[at].Called = true
	}
	return ref
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
func memo[K comparable](cache *map[K]*grammar.Node, key K, build func() *grammar.Node) *grammar.Node {
	if n, ok := (*cache)[key]; ok {
		return n
	}
	n := build()
	if *cache == nil {
		*cache = map[K]*grammar.Node{}
	}
	(*cache)[key] = n
	return n
}

// memoErr is memo for a build that may fail: only what is built is
// kept, and a failure is built again (its error names where it was met).
func memoErr[K comparable](cache *map[K]*grammar.Node, key K, build func() (*grammar.Node, error)) (*grammar.Node, error) {
	if n, ok := (*cache)[key]; ok {
		return n, nil
	}
	n, err := build()
	if err == nil {
		if *cache == nil {
			*cache = map[K]*grammar.Node{}
		}
		(*cache)[key] = n
	}
	return n, err
}

// buildKeyNotIn walks the trie of the sorted, distinct names without
// building it: the names below a trie node are a run of the list that
// shares its first depth bytes. Below the last branching, a trie node
// holds one name, and its subtree depends on that name's rest alone:
// the same rest in another object's names (a "name" or "description"
// in many objects) is the same node, made once.
func (c *compiler) buildKeyNotIn(sorted []string) *grammar.Node {
	quote := c.nodes.bytes(`"`)
	// Stacks: a trie node's alternatives and next characters go above
	// its parent's, and are taken off once its node is made.
	var alts []*grammar.Node
	var rs []rune
	var build func(run []string, depth int) *grammar.Node
	build = func(run []string, depth int) *grammar.Node {
		rest, one := "", len(run) == 1 // one name below: its rest is the key
		if one {
			rest = run[0][depth:]
			if n, ok := c.keyTails[rest]; ok {
				return n
			}
		}
		a0, r0 := len(alts), len(rs)
		if len(run) > 0 && len(run[0]) == depth {
			run = run[1:] // a name ends here; the shortest sorts first
		} else {
			alts = append(alts, quote)
		}
		for len(run) > 0 {
			r, size := utf8.DecodeRuneInString(run[0][depth:])
			prefix := run[0][:depth+size]
			k := 1
			for k < len(run) && strings.HasPrefix(run[k], prefix) {
				k++
			}
			rs = append(rs, r)
			lit := c.keyRune(r)
			alts = append(alts, c.nodes.seq(lit, build(run[:k], depth+size)))
			run = run[k:]
		}
		alts = append(alts, c.keyDeviate(rs[r0:]))
		n := c.nodes.alt(alts[a0:]...)
		alts, rs = alts[:a0], rs[:r0]
		if one {
			if c.keyTails == nil {
				c.keyTails = map[string]*grammar.Node{}
			}
			c.keyTails[rest] = n
		}
		return n
	}
	return c.nodes.seq(quote, build(sorted, 0))
}

// keyRune is the literal of a key's character r (escaped if it must
// be), one node for every key trie of the compile.
func (c *compiler) keyRune(r rune) *grammar.Node {
	return memo(&c.keyRunes, r, func() *grammar.Node { return c.nodes.bytes(escapeRune(r)) })
}

// keyDeviate is the rest of a key that leaves a trie node whose next
// characters are rs: one character but those, then any tail. One node
// for every key trie of the compile; a single character, the most
// common, is found without making a string of it.
//
// In a schema of more than calledDeviatesFrom bytes, the character is a
// rule of its own, which the grammar compiler calls from a large
// grammar rather than copy its ranges and escapes into every trie node
// of every object (MaskBench's kb_143: 62,208 instructions with the
// copies, 49,466 without). In a smaller one it is inline: the grammar
// compiler would inline the rule again, having paid for making it (5%
// more instructions compiling MaskBench's median schemas). Only the
// character: a rule that ran to the key's closing quote would make the
// masks of every key character depend on what follows the key (about
// 20% more mask time on the dev set).
func (c *compiler) keyDeviate(rs []rune) *grammar.Node {
	build := func() *grammar.Node {
		anyTail := c.shared("_canontail", func() *grammar.Node {
			most := -1
			if c.opts.Bounded {
				most = BoundedLength
			}
			return c.nodes.seq(c.nodes.repeat(c.canonicalChar(nil), 0, most), c.nodes.bytes(`"`))
		})
		first := c.canonicalChar(rs)
		if c.refs.bytes > calledDeviatesFrom {
			first = c.ruleAt(first, c.ptr)
		}
		return c.nodes.seq(first, anyTail)
	}
	if len(rs) == 1 {
		return memo(&c.keyDeviates1, rs[0], build)
	}
	return memo(&c.keyDeviates, string(rs), build)
}

// calledDeviatesFrom is the size of schema (its documents' bytes) past
// which keyDeviate's character is a rule. In MaskBench's dev set, the
// Kubernetes and WashingtonPost schemas, of many objects that take other
// keys, are 45 to 157 KB; the median schema is 0.7 KB, and 183 of 3,520
// are over 16 KB.
const calledDeviatesFrom = 16 << 10

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
		alts = append(alts, &grammar.Node{Op: grammar.OpClass, Leaf: &grammar.Leaf{Runes: grammar.NegateRanges(grammar.NormalizeRanges(excluded))}})
		for _, r := range append([]rune{'"', '\\'}, controlRunes()...) {
			if !slices.Contains(except, r) {
				alts = append(alts, c.nodes.bytes(escapeRune(r)))
			}
		}
		return c.nodes.alt(alts...)
	}
	// The common case shares everything but the ASCII class: printable
	// ASCII but the quote, the backslash and except.
	var out [0x80]bool
	out['"'], out['\\'] = true, true
	for _, r := range except {
		out[r] = true
	}
	ranges := make([]rune, 0, 2*(len(except)+3))
	for lo := rune(0x20); lo < 0x80; lo++ {
		if out[lo] {
			continue
		}
		hi := lo
		for hi+1 < 0x80 && !out[hi+1] {
			hi++
		}
		ranges = append(ranges, lo, hi)
		lo = hi
	}
	multi := c.shared("_multibyte", func() *grammar.Node { return grammar.Class(0x80, utf8.MaxRune) })
	esc := c.shared("_canonesc", c.canonicalEscape)
	return c.nodes.alt(c.nodes.node(grammar.Node{Op: grammar.OpClass, Leaf: c.nodes.leaf(grammar.Leaf{Runes: ranges})}), multi, esc)
}

// canonicalEscape is the escapes of a string in canonical encoding
// (escapeRune's): \" and \\, the short forms \b \f \n \r \t, and the
// other control characters as \u00 and two lowercase hex digits, 0000
// to 001f. Written as a trie of a few nodes rather than the 34
// literals, which every compile of an object that takes other keys made
// anew.
func (c *compiler) canonicalEscape() *grammar.Node {
	n := &c.nodes
	return n.seq(n.bytes(`\`), n.alt(
		grammar.Class('"', '"', '\\', '\\', 'b', 'b', 'f', 'f', 'n', 'n', 'r', 'r', 't', 't'),
		n.seq(n.bytes("u00"), n.alt(
			n.seq(n.bytes("0"), grammar.Class('0', '7', 'b', 'b', 'e', 'f')), // not 8 9 a c d: \b \t \n \f \r
			n.seq(n.bytes("1"), grammar.Class('0', '9', 'a', 'f'))))))
}

func controlRunes() []rune {
	out := make([]rune, 0, 32)
	for r := rune(0); r < 0x20; r++ {
		out = append(out, r)
	}
	return out
}
