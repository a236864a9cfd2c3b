package jsonschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"

	"github.com/reins-go/reins/grammar"
)

// The lowering stage: a Node becomes grammar. A conjunction met again
// (a $ref's target, recursion) is one rule; combinators are distributed
// over their branches (each branch intersected with the rest of the
// Node); what remains is lowered type by type.

// maxLowered bounds the Nodes one compilation lowers.
const maxLowered = 4 * maxSchemaNodes

// maxDistribute bounds how deeply combinators nest as they are
// distributed (a branch whose own anyOf is distributed in turn).
const maxDistribute = 64

// maxDistributions bounds how many branches one compile intersects with
// their siblings, however shallow: the dev set's most is 6,733 (most
// schemas take under 600), and nested not of anyOf took 262,000 (23 s,
// 5 GB) with depth to spare.
const maxDistributions = 1 << 15

// distribute counts one more branch intersected with its siblings, the
// branch at ptr, against maxDistribute and maxDistributions.
func (c *compiler) distribute(ptr string) error {
	if c.distributed++; c.distributed > maxDistribute {
		return c.limitf(ptr, "", limitWork, "combinators nest more than %d deep as they are distributed over their siblings", maxDistribute)
	}
	if c.branches++; c.branches > maxDistributions {
		return c.limitf(ptr, "", limitWork, "combinators are distributed over their siblings more than %d times (many anyOf, oneOf, not or if intersected)", maxDistributions)
	}
	return nil
}

// conj compiles the conjunction of xs: a property's schema, an item's,
// a branch's. One that follows a $ref is a rule, shared by every place
// that names the same schemas at the same depth.
func (c *compiler) conj(xs ...*Schema) (*grammar.Node, error) {
	if c.lowered++; c.lowered > maxLowered {
		return nil, c.limitf(xs[0].Ptr, "", limitSubschemas, "the schema expands to more than %d subschemas (a recursive $ref intersected by allOf, or a large object repeated in each of many anyOf or oneOf branches?)", maxLowered)
	}
	n, err := c.z.normalize(xs)
	if err != nil {
		return nil, err
	}
	if !n.ViaRef || n.Unsat != nil {
		return c.node(n)
	}
	key := conjKey(n.Schemas) + c.level()
	if name, ok := c.rules[key]; ok {
		return c.nodes.ref(name), nil
	}
	name := fmt.Sprintf("ref%d", len(c.rules))
	c.rules[key] = name
	at := len(c.g.Rules)
	c.setRulePtr(at, n.Ptr)
	c.g.Rules = append(c.g.Rules, grammar.Rule{Name: name})
	body, err := c.node(n)
	if err != nil {
		c.g.Rules[at].Body = grammar.Alt() // matches nothing, should a caller go on without it
		return nil, err
	}
	c.g.Rules[at].Body = body
	return c.nodes.ref(name), nil
}

// node compiles a Node.
func (c *compiler) node(n *Node) (*grammar.Node, error) {
	if n.Unsat != nil {
		return nil, c.emptyf(n.Unsat.Ptr, n.Unsat.Keyword, "%s", n.Unsat.Reason)
	}
	outer := c.ptr
	c.ptr = n.Ptr
	defer func() { c.ptr = outer }()
	g, err := c.nodeBody(n)
	if err == nil {
		c.schemaNodes = append(c.schemaNodes, schemaNode{g, n.Ptr})
	}
	return g, err
}

func (c *compiler) nodeBody(n *Node) (*grammar.Node, error) {
	if n.HasEnum {
		return c.literals(n)
	}
	for _, s := range n.OneOf {
		if sets, ok := presenceOneOf(s.OneOf); ok {
			// oneOf of required lists: exactly one list is fully present.
			// Every branch holds for a value that is not an object, so with
			// two or more branches only objects remain.
			if n.Types&tObject == 0 {
				return nil, c.emptyf(s.Ptr, "oneOf", "no value satisfies exactly one branch")
			}
			if n.presence != nil {
				return nil, c.errorf(s.Ptr, "oneOf", "two oneOfs of required lists are not supported")
			}
			m := n.without(kwOneOf, s)
			m.Types &= tObject
			m.presence = sets
			return c.nodeBody(m)
		}
	}
	if len(n.OneOf) > 0 {
		return c.oneOf(n, n.OneOf[0])
	}
	if len(n.AnyOf) > 0 {
		return c.anyOf(n, n.AnyOf[0])
	}
	for _, s := range n.Obj {
		if len(s.DepSchemas) > 0 && !slices.Contains(n.depsDone, s) {
			m := *n
			m.depsDone = append(slices.Clone(n.depsDone), s)
			return c.withSchema(&m, c.neg.dependents(s))
		}
	}
	if len(n.If) > 0 {
		s := n.If[0]
		cond, err := c.neg.conditional(s)
		if err != nil {
			return nil, c.negationError(err, s.Ptr, "if")
		}
		return c.withSchema(n.without(kwIf, s), cond)
	}
	if len(n.Not) > 0 {
		s := n.Not[0]
		ns, err := c.neg.negate(s.Not)
		if err != nil {
			return nil, c.negationError(err, s.Ptr, "not")
		}
		return c.withSchema(n.without(kwNot, s), ns)
	}
	return c.leaf(n)
}

// withSchema compiles n intersected with the (synthetic) schema x.
func (c *compiler) withSchema(n *Node, x *Schema) (*grammar.Node, error) {
	defer func() { c.distributed-- }()
	if err := c.distribute(x.Ptr); err != nil {
		return nil, err
	}
	m, err := c.z.intersect(n, []*Schema{x})
	if err != nil {
		return nil, err
	}
	if m.Unsat != nil {
		return nil, c.emptyf(m.Unsat.Ptr, m.Unsat.Keyword, "%s", m.Unsat.Reason)
	}
	return c.nodeBody(m)
}

// negationError is the *Error of a negation reins cannot write, for the
// keyword kw at ptr that needs it.
func (c *compiler) negationError(err error, ptr, kw string) error {
	var ne *negationError
	if errors.As(err, &ne) {
		return &Error{Pointer: ne.ptr, Keyword: ne.kw, Msg: ne.why + " (for " + kw + " at " + ptr + ")"}
	}
	return err
}

// trivial reports whether n constrains nothing but through its
// combinators.
func (n *Node) trivial() bool {
	return n.Unsat == nil && n.Types == tAll && !n.HasEnum && n.Num.Lo == nil && n.Num.Hi == nil &&
		len(n.Num.MultipleOf) == 0 && n.Str.MinLen == 0 && n.Str.MaxLen < 0 && len(n.Str.Patterns) == 0 &&
		len(n.Str.Formats) == 0 && len(n.Arr) == 0 && len(n.Obj) == 0 && n.presence == nil &&
		len(n.NotEnum) == 0 && len(n.Str.NotPatterns)+len(n.Str.NotFormats) == 0
}

// branch compiles one branch b of a combinator of n, rest being n
// without that combinator: b alone (a rule where it follows a $ref)
// when rest constrains nothing else, else b intersected with rest.
func (c *compiler) branch(rest *Node, b *Schema) (*grammar.Node, error) {
	if rest.trivial() && len(rest.AnyOf)+len(rest.OneOf)+len(rest.Not)+len(rest.If) == 0 {
		return c.conj(b)
	}
	defer func() { c.distributed-- }()
	if err := c.distribute(b.Ptr); err != nil {
		return nil, err
	}
	m, err := c.z.intersect(rest, []*Schema{b})
	if err != nil {
		return nil, err
	}
	// The same intersection met again (a branch that several
	// distributions reach) is compiled once, and shared as a rule.
	key := fmt.Sprintf("%s|%s|%d|%v%s", conjKey(m.Schemas), conjKey(m.done), m.Types, m.presence, c.level())
	if d, ok := c.distributions[key]; ok {
		if d.err != nil {
			return nil, d.err
		}
		if d.g.Op != grammar.OpRef {
			d.g = c.ruleAt(d.g, m.Ptr)
			c.distributions[key] = d
		}
		return d.g, nil
	}
	g, err := c.node(m)
	if c.distributions == nil {
		c.distributions = map[string]distribution{}
	}
	c.distributions[key] = distribution{g, err}
	return g, err
}

// distribution is a compiled intersection of a branch with its
// siblings, or its error.
type distribution struct {
	g   *grammar.Node
	err error
}

// anyOf distributes the anyOf of s over its branches.
func (c *compiler) anyOf(n *Node, s *Schema) (*grammar.Node, error) {
	rest := n.without(kwAnyOf, s)
	var branches []*Schema
	for i, b := range s.AnyOf {
		if !slices.Contains(s.AnyOf[:i], b) { // the same branch again: once
			branches = append(branches, b)
		}
	}
	if !s.synthetic && n.unevaluated() && len(branches) > 1 && len(branches) <= maxSubsetBranches {
		// Which branches hold decides what is evaluated: one alternative
		// per set of branches that hold (see branchSets), without the
		// negations of the others where holdingSetsFit says so; else
		// with them, and where a branch cannot be negated, each branch
		// taken alone (narrower: a branch not taken may also hold and
		// evaluate more).
		if c.holdingSetsFit(n, branches) {
			branches = branchSets(s, branches, nil)
		} else if negs, err := c.negations(branches); err == nil {
			branches = branchSets(s, branches, negs)
		}
	}
	return c.anyOfBranches(s, rest, branches)
}

// anyOfBranches is the alternation of branches, each taken with rest, of
// the anyOf of s.
func (c *compiler) anyOfBranches(s *Schema, rest *Node, branches []*Schema) (*grammar.Node, error) {
	var alts []*grammar.Node
	for _, b := range branches {
		g, err := c.branch(rest, b)
		if isEmpty(err) { // a branch no value takes
			continue
		}
		if err != nil {
			return nil, err
		}
		alts = append(alts, g)
	}
	switch len(alts) {
	case 0:
		return nil, c.emptyf(s.Ptr, "anyOf", "no branch allows a value")
	case 1:
		return alts[0], nil
	}
	return grammar.Alt(alts...), nil
}

// maxSubsetBranches bounds the anyOf branches split into the sets of
// them that hold, for unevaluatedProperties and unevaluatedItems.
const maxSubsetBranches = 4

// unevaluated reports whether a schema of n says unevaluatedProperties
// or unevaluatedItems.
func (n *Node) unevaluated() bool {
	for _, s := range n.Schemas {
		if s.UnevaluatedProps != nil || s.UnevaluatedItems != nil {
			return true
		}
	}
	return false
}

// maxExclusions bounds the branches one oneOf branch is taken without.
const maxExclusions = 8

// oneOf compiles the oneOf of s as an anyOf of its branches, each taken
// without the values of the branches it may overlap (exact: a value is
// valid when it satisfies one branch and none of the others, and where
// two branches are proved exclusive the one excludes the other already).
// The types every value of which satisfies two branches are left out.
func (c *compiler) oneOf(n *Node, s *Schema) (*grammar.Node, error) {
	rest := n.without(kwOneOf, s)
	keep, types, overlaps, err := c.oneOfTypes(s, rest)
	if err != nil {
		return nil, err
	}
	if rest.Types&^keep != 0 {
		if keep&rest.Types == 0 {
			return nil, c.emptyf(s.Ptr, "oneOf", "no value satisfies exactly one branch")
		}
		r := *rest
		r.Types &= keep
		rest = &r
	}
	var alts []*grammar.Node
	for i, b := range s.OneOf {
		if types[i]&rest.Types == 0 {
			continue // a branch of types the oneOf leaves out
		}
		taken := b
		if len(overlaps[i]) > 0 {
			if len(overlaps[i]) > maxExclusions {
				return nil, c.errorf(s.Ptr, "oneOf", "branch %d may overlap %d others: not supported", i, len(overlaps[i]))
			}
			x := newSchema(fmt.Sprintf("%s/oneOf/%d/only", s.Ptr, i))
			x.Has, x.AllOf = 1<<kwAllOf, []*Schema{b}
			for _, j := range overlaps[i] {
				nj, err := c.neg.negate(s.OneOf[j])
				if err != nil {
					var ne *negationError
					if errors.As(err, &ne) {
						return nil, c.errorf(s.Ptr, "oneOf", "branches %d and %d may both hold for one value, and the values of %d cannot be taken out (%s/%s: %s): not supported", i, j, j, ne.ptr, ne.kw, ne.why)
					}
					return nil, err
				}
				x.AllOf = append(x.AllOf, nj)
			}
			taken = x
		}
		g, err := c.branch(rest, taken)
		if isEmpty(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		alts = append(alts, g)
	}
	switch len(alts) {
	case 0:
		return nil, c.emptyf(s.Ptr, "oneOf", "no branch allows a value")
	case 1:
		return alts[0], nil
	}
	return grammar.Alt(alts...), nil
}

// presenceOneOf recognises a oneOf whose branches only list required
// properties, and returns the lists.
func presenceOneOf(list []*Schema) ([][]string, bool) {
	if len(list) < 2 {
		return nil, false
	}
	var sets [][]string
	for _, b := range list {
		if b.False || b.Has&^(1<<kwRequired) != 0 || len(b.Unsupported) > 0 {
			return nil, false
		}
		sets = append(sets, slices.Clone(b.Required))
	}
	return sets, true
}

// literals compiles enum and const: the values that satisfy every schema
// of n, each as the schema writes it.
func (c *compiler) literals(n *Node) (*grammar.Node, error) {
	kw := n.EnumKw
	var alts []*grammar.Node
	for i, v := range n.Enum {
		ok, err := c.ev.validAll(n.Schemas, v)
		if err != nil {
			return nil, c.wrapf(n.EnumPtr, kw, err)
		}
		if !ok {
			continue
		}
		text, err := json.Marshal(v)
		if err != nil {
			return nil, c.errorf(n.EnumPtr, kw, "%v", err)
		}
		at := n.EnumAt[i]
		if c.literalBytes += len(text); c.literalBytes > MaxLiteralBytes {
			if len(text) > MaxLiteralBytes {
				return nil, c.limitf(n.EnumPtr, kw, limitLiteralBytes, "the value at %s is %d bytes of JSON, more than the limit of %d (MaxLiteralBytes)", at, len(text), MaxLiteralBytes)
			}
			return nil, c.limitf(n.EnumPtr, kw, limitLiteralBytes, "with the value at %s, the enum and const values compiled take %d bytes of JSON, more than the limit of %d (MaxLiteralBytes)", at, c.literalBytes, MaxLiteralBytes)
		}
		g, err := c.literal(v, at)
		if err != nil {
			return nil, c.errorf(n.EnumPtr, kw, "%v", err)
		}
		alts = append(alts, g)
	}
	if len(alts) == 0 {
		return nil, c.emptyf(n.EnumPtr, kw, "no value of %s satisfies the schema", kw)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return grammar.Alt(alts...), nil
}

// leaf compiles a Node without combinators, type by type. A type none
// of whose values satisfies the rest is left out.
func (c *compiler) leaf(n *Node) (*grammar.Node, error) {
	var alts []*grammar.Node
	var empty error
	for _, t := range []typeBits{tNull, tBoolean, tObject, tArray, tInteger | tFraction, tString} {
		if n.Types&t == 0 {
			continue
		}
		g, err := c.typed(t&n.Types, n)
		if isEmpty(err) {
			if empty == nil {
				empty = err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		alts = append(alts, g)
	}
	switch len(alts) {
	case 0:
		if empty != nil {
			return nil, empty
		}
		return nil, c.emptyf(n.Ptr, "type", "no type is possible")
	case 1:
		return alts[0], nil
	}
	return grammar.Alt(alts...), nil
}

// typed compiles the values of type t (one bit, or the number bits) of n.
func (c *compiler) typed(t typeBits, n *Node) (*grammar.Node, error) {
	for _, v := range n.NotEnum {
		if vt := valueType(v); vt&t != 0 && (t == tObject || t == tArray) {
			return nil, c.errorf(n.Ptr, "not", "excluding one object or array value is not supported")
		}
	}
	switch t {
	case tNull:
		if slices.ContainsFunc(n.NotEnum, func(v any) bool { return v == nil }) {
			return nil, c.emptyf(n.Ptr, "not", "null is excluded")
		}
		return lit("null"), nil
	case tBoolean:
		var alts []*grammar.Node
		for _, b := range []bool{true, false} {
			if !slices.Contains(n.NotEnum, any(b)) {
				alts = append(alts, lit(strconv.FormatBool(b)))
			}
		}
		if len(alts) == 0 {
			return nil, c.emptyf(n.Ptr, "not", "both booleans are excluded")
		}
		return grammar.Alt(alts...), nil
	case tString:
		return c.str(n)
	case tInteger:
		return c.integer(n)
	case tInteger | tFraction:
		return c.number(n)
	case tFraction:
		return c.fraction(n)
	case tObject:
		return c.object(n)
	case tArray:
		return c.array(n)
	}
	return nil, c.errorf(n.Ptr, "type", "unknown type")
}

// number compiles the numbers of n.
func (c *compiler) number(n *Node) (*grammar.Node, error) {
	if len(n.Num.MultipleOf) > 0 {
		return c.multipleNode(n, false)
	}
	lo, hi := n.Num.Lo, n.Num.Hi
	excluded := excludedNumbers(n.NotEnum)
	if lo == nil && hi == nil && len(excluded) == 0 {
		return c.numberNode(), nil
	}
	if c.opts.Bounded {
		lo, hi = boundRange(lo, hi)
	}
	// Excluded values split the range: (lo, v1), (v1, v2), ... (vk, hi).
	var alts []*grammar.Node
	from := lo
	for _, v := range append(excluded, nil) {
		to := hi
		if v != nil {
			if (lo != nil && v.Cmp(lo.v) < 0) || (hi != nil && v.Cmp(hi.v) > 0) {
				continue
			}
			to = &numBound{v: v, strict: true}
		}
		g, err := decRange(from, to, c.opts.Bounded)
		if err != nil {
			return nil, c.errorf(n.Ptr, "minimum", "%v", err)
		}
		if g != nil {
			alts = append(alts, g)
		}
		if v != nil {
			from = &numBound{v: v, strict: true}
		}
	}
	if len(alts) == 0 {
		return nil, c.emptyf(n.Ptr, "minimum", "no number lies between the bounds")
	}
	g := alts[0]
	if len(alts) > 1 {
		g = grammar.Alt(alts...)
	}
	return g, c.countRange(n, g)
}

// fraction compiles the numbers of n that are not integers, written
// with a fraction that is not all zeros (without an exponent).
func (c *compiler) fraction(n *Node) (*grammar.Node, error) {
	if n.Num.Lo != nil || n.Num.Hi != nil || len(n.Num.MultipleOf) > 0 || len(n.NotEnum) > 0 {
		return nil, c.errorf(n.Ptr, "type", "numbers that are not integers, with bounds, are not supported")
	}
	more := -1
	if c.opts.Bounded {
		more = BoundedDigits - 1
	}
	digits := grammar.Repeat(grammar.Class('0', '9'), 0, more)
	intPart := grammar.Alt(lit("0"), grammar.Seq(grammar.Class('1', '9'), digits))
	frac := grammar.Seq(digits, grammar.Class('1', '9'), digits)
	return grammar.Seq(grammar.Repeat(lit("-"), 0, 1), intPart, lit("."), frac), nil
}

// excludedNumbers returns the numbers among vals, sorted, each once.
func excludedNumbers(vals []any) []*big.Rat {
	var out []*big.Rat
	for _, v := range vals {
		if num, ok := v.(json.Number); ok {
			if r, ok := new(big.Rat).SetString(num.String()); ok {
				out = append(out, r)
			}
		}
	}
	slices.SortFunc(out, func(a, b *big.Rat) int { return a.Cmp(b) })
	return slices.CompactFunc(out, func(a, b *big.Rat) bool { return a.Cmp(b) == 0 })
}

// integer compiles the integers of n.
func (c *compiler) integer(n *Node) (*grammar.Node, error) {
	nlo, nhi := n.Num.Lo, n.Num.Hi
	// The tightest integer bounds: above an excluded minimum, at or
	// above an included one; the same below the maximum.
	var lo, hi *big.Int
	if nlo != nil {
		lo = floorRat(nlo.v)
		if nlo.strict || !nlo.v.IsInt() {
			lo.Add(lo, big.NewInt(1))
		}
	}
	if nhi != nil {
		hi = floorRat(nhi.v)
		if nhi.strict && nhi.v.IsInt() {
			hi.Sub(hi, big.NewInt(1))
		}
	}
	if len(n.Num.MultipleOf) > 0 {
		return c.multipleNode(n, true)
	}
	if lo != nil && hi != nil && lo.Cmp(hi) > 0 {
		return nil, c.emptyf(n.Ptr, "maximum", "no integer lies between the bounds")
	}
	if c.opts.Bounded {
		limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(BoundedDigits), nil)
		limit.Sub(limit, big.NewInt(1))
		if hi == nil {
			hi = new(big.Int).Set(limit)
			if lo != nil && lo.Cmp(hi) > 0 {
				hi.Set(lo)
			}
		}
		if lo == nil {
			lo = new(big.Int).Neg(limit)
			if lo.Cmp(hi) > 0 {
				lo.Set(hi)
			}
		}
	}
	zeroFraction := c.p.version >= 6 && !c.opts.Bounded
	if lo == nil && hi == nil && !slices.ContainsFunc(excludedNumbers(n.NotEnum), (*big.Rat).IsInt) {
		// Every integer: one node per compile, as numberNode, for the
		// many integer properties of a large schema.
		return memo(&c.anyIntegers, zeroFraction, func() *grammar.Node { return integerNode(nil, zeroFraction) }), nil
	}
	// Excluded integers split the range.
	var alts []*grammar.Node
	from := lo
	for _, v := range excludedNumbers(n.NotEnum) {
		if !v.IsInt() {
			continue
		}
		x := v.Num()
		if (from != nil && x.Cmp(from) < 0) || (hi != nil && x.Cmp(hi) > 0) {
			continue
		}
		if to := new(big.Int).Sub(x, big.NewInt(1)); from == nil || from.Cmp(to) <= 0 {
			alts = append(alts, intRange(from, to))
		}
		from = new(big.Int).Add(x, big.NewInt(1))
	}
	if from == nil || hi == nil || from.Cmp(hi) <= 0 {
		alts = append(alts, intRange(from, hi))
	}
	if len(alts) == 0 {
		return nil, c.emptyf(n.Ptr, "not", "every integer between the bounds is excluded")
	}
	g := integerNode(alts, zeroFraction)
	if lo == nil && hi == nil {
		return g, nil
	}
	return g, c.countRange(n, g)
}

// integerNode is the integers of ranges (every integer when there are
// none), with a zero fraction (1.0 as well as 1) when zeroFraction is
// set: from draft 6 on, such a number is an integer.
func integerNode(ranges []*grammar.Node, zeroFraction bool) *grammar.Node {
	var g *grammar.Node
	switch len(ranges) {
	case 0:
		g = intRange(nil, nil)
	case 1:
		g = ranges[0]
	default:
		g = grammar.Alt(ranges...)
	}
	if zeroFraction {
		g = grammar.Seq(g, grammar.Repeat(grammar.Seq(lit("."), grammar.Repeat(lit("0"), 1, -1)), 0, 1))
	}
	return g
}

// countRange adds the size of g, the grammar of n's numeric range, to
// the compile's count of them, and refuses the schema once they alone
// pass grammar.MaxInst: a range of wide bounds takes thousands of
// instructions, and 5,000 properties each with its own took 21 s and
// 3.8 GB before the grammar's size was checked.
func (c *compiler) countRange(n *Node, g *grammar.Node) error {
	if c.rangeInsts += (&sizer{}).size(g); c.rangeInsts > grammar.MaxInst {
		return c.limitf(n.Ptr, "", limitGrammar, "the numeric ranges compiled so far would take more than %d instructions (grammar.MaxInst)", grammar.MaxInst)
	}
	return nil
}
