package grammar

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		e    Error
		want string
	}{
		{Error{File: "g.gbnf", Pos: Pos{Line: 3, Col: 7}, Msg: "bad"}, "g.gbnf:3:7: bad"},
		{Error{File: "g.gbnf", Msg: "bad"}, "g.gbnf: bad"},
		{Error{Pos: Pos{Line: 1, Col: 2}, Msg: "bad"}, "1:2: bad"},
		{Error{Msg: "bad"}, "bad"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.e.Error())
	}
	e := &Error{Msg: "too big", Err: ErrTooLarge}
	assert.ErrorIs(t, fmt.Errorf("wrapped: %w", e), ErrTooLarge)
}

// mixed is a grammar that exercises what Compile rewrites: an unused
// rule that matches no string (pruned, with a warning), inlined rules, a
// hoisted bounded repetition, a subtree shared by two parents.
func mixed() *Grammar {
	shared := Class('a', 'z')
	return &Grammar{Start: "root", File: "mixed", Warnings: []string{"mixed:9:1: a front end's warning"}, Rules: []Rule{
		{Name: "root", Pos: Pos{Line: 1, Col: 1}, Body: Seq(Ref("word"), Lit(" "), Repeat(Seq(Ref("word"), Lit(",")), 0, 20), shared, shared)},
		{Name: "word", Pos: Pos{Line: 2, Col: 1}, Body: Repeat(Alt(shared, Lit("é"), Ref("word")), 1, 3)},
		{Name: "loop", Pos: Pos{Line: 3, Col: 1}, Body: Seq(Lit("x"), Ref("loop"))},
	}}
}

// deepCopy copies g's rules and nodes, keeping which nodes are shared.
func deepCopy(g *Grammar) *Grammar {
	seen := map[*Node]*Node{}
	var cp func(n *Node) *Node
	cp = func(n *Node) *Node {
		if c, ok := seen[n]; ok {
			return c
		}
		c := *n
		if n.Leaf != nil {
			l := *n.Leaf
			l.Runes = append([]rune(nil), l.Runes...)
			l.Bytes = append([]byte(nil), l.Bytes...)
			l.Tokens.Tokens = append([]TokenRef(nil), l.Tokens.Tokens...)
			c.Leaf = &l
		}
		c.Subs = nil
		for _, s := range n.Subs {
			c.Subs = append(c.Subs, cp(s))
		}
		seen[n] = &c
		return &c
	}
	out := *g
	out.Rules = nil
	for _, r := range g.Rules {
		r.Body = cp(r.Body)
		out.Rules = append(out.Rules, r)
	}
	out.Warnings = append([]string(nil), g.Warnings...)
	return &out
}

func TestCompileLeavesInputUnchanged(t *testing.T) {
	g := mixed()
	before := deepCopy(g)
	p1, err := Compile(g)
	require.NoError(t, err)
	assert.True(t, reflect.DeepEqual(before, g), "Compile changed its input")
	p2, err := Compile(g)
	require.NoError(t, err)
	assert.True(t, reflect.DeepEqual(before, g), "Compile changed its input")
	assert.Equal(t, p1.String(), p2.String())
	assert.Equal(t, []string{"mixed:9:1: a front end's warning", "mixed:3:1: rule loop matches no string and is never used"}, p1.Warnings)
	assert.Equal(t, p1.Warnings, p2.Warnings, "compiling twice gives the warnings once")
	assert.Equal(t, []string{"mixed:9:1: a front end's warning"}, g.Warnings)
}

func TestCompileConcurrently(t *testing.T) {
	g := mixed()
	want, err := Compile(g)
	require.NoError(t, err)
	done := make(chan string)
	for range 4 {
		go func() {
			p, err := Compile(g)
			if err != nil {
				done <- err.Error()
				return
			}
			done <- p.String()
		}()
	}
	for range 4 {
		assert.Equal(t, want.String(), <-done)
	}
}

// compileErr compiles g and returns its error as a *Error.
func compileErr(t *testing.T, g *Grammar) *Error {
	t.Helper()
	_, err := Compile(g)
	require.Error(t, err)
	var e *Error
	require.True(t, errors.As(err, &e), "%T: %v", err, err)
	return e
}

func TestCompileErrors(t *testing.T) {
	at := Pos{Line: 4, Col: 9, Offset: 40}
	refAt := &Node{Op: OpRef, Name: "nowhere", Leaf: &Leaf{Pos: at}}
	e := compileErr(t, &Grammar{Start: "root", File: "f.gbnf", Rules: []Rule{{Name: "root", Body: Seq(Lit("a"), refAt)}}})
	assert.Equal(t, "f.gbnf:4:9: undefined rule nowhere", e.Error())
	assert.Equal(t, at, e.Pos)

	// Without positions (a grammar built in Go), the rule is named.
	e = compileErr(t, &Grammar{Start: "root", Rules: []Rule{{Name: "root", Body: Seq(Lit("a"), Ref("nowhere"))}}})
	assert.Equal(t, "rule root: undefined rule nowhere", e.Error())

	e = compileErr(t, &Grammar{Start: "main", File: "f.gbnf", Rules: []Rule{{Name: "root", Body: Lit("a")}}})
	assert.Equal(t, `f.gbnf: no start rule "main"`, e.Error())

	e = compileErr(t, &Grammar{Start: "root", File: "f.gbnf", Rules: []Rule{{Name: "root", Pos: Pos{Line: 1, Col: 1}, Body: Seq(Lit("a"), Ref("root"))}}})
	assert.Equal(t, "f.gbnf:1:1: start rule root matches no string: each of its alternatives recurses without end", e.Error())

	// Malformed trees are errors, not panics.
	for _, body := range []*Node{nil, {Op: OpRepeat}, {Op: OpClass, Leaf: &Leaf{Runes: []rune{1}}}, {Op: Op(99)}, Seq(Lit("a"), nil), Repeat(Lit("a"), 0, -2)} {
		compileErr(t, &Grammar{Start: "root", Rules: []Rule{{Name: "root", Body: body}}})
	}
}

func TestCompileTooLarge(t *testing.T) {
	bigLit := &Node{Op: OpLit, Leaf: &Leaf{Pos: Pos{Line: 2, Col: 5}, Runes: []rune(strings.Repeat("x", 5<<20))}}
	enum := make([]*Node, 300000)
	for i := range enum {
		enum[i] = &Node{Op: OpBytes, Leaf: &Leaf{Bytes: fmt.Appendf(nil, "value%d", i)}}
	}
	tests := []struct {
		name string
		g    *Grammar
		want string
	}{
		{"literal", &Grammar{Start: "root", File: "big.gbnf", Rules: []Rule{{Name: "root", Body: Seq(Lit("{"), bigLit)}}},
			"big.gbnf:2:5: grammar too large: a literal of 5242880 characters would take about 20971520 instructions to compile, more than the limit of 1048576"},
		{"repetition", &Grammar{Start: "root", Rules: []Rule{{Name: "root", Body: Seq(Lit("["), Repeat(Lit("ab"), 1000000, -1))}}},
			"rule root: grammar too large: a repetition {1000000,} of a body of about 8 instructions would take about 2000011 instructions to compile, more than the limit of 1048576"},
		{"alternation", &Grammar{Start: "root", Rules: []Rule{{Name: "value", Body: Alt(enum...)}, {Name: "root", Body: Ref("value")}}},
			"rule value: grammar too large: an alternation of 300000 branches would take about"},
		{"rules", &Grammar{Start: "root", Rules: []Rule{
			{Name: "root", Body: Seq(Ref("a"), Ref("b"))},
			{Name: "a", Body: &Node{Op: OpBytes, Leaf: &Leaf{Bytes: make([]byte, 600000)}}},
			{Name: "b", Body: &Node{Op: OpBytes, Leaf: &Leaf{Bytes: make([]byte, 700000)}}},
		}}, "grammar too large: its 3 rules would take about 1300003 instructions to compile, more than the limit of 1048576 (the largest, rule b, about 700000)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := compileErr(t, tt.g)
			assert.ErrorIs(t, e, ErrTooLarge)
			assert.Contains(t, e.Error(), tt.want)
		})
	}
}

// TestCompileInliningWithinBudget checks that inlining never takes a
// grammar that fits MaxInst past it: a rule of 250 bytes used at 2,000
// places in a grammar of about 555,000 instructions would be copied
// into each (500,000 more), which fits twice the grammar's size but not
// MaxInst, so it stays called and the grammar compiles. (It failed
// compiling before the budget was capped.)
func TestCompileInliningWithinBudget(t *testing.T) {
	uses := make([]*Node, 0, 2*2000+1)
	uses = append(uses, Ref("filler"))
	for i := range 2000 {
		uses = append(uses, Ref("word"), &Node{Op: OpBytes, Leaf: &Leaf{Bytes: []byte{byte(i)}}}) // a continuation of its own
	}
	g := &Grammar{Start: "root", Rules: []Rule{
		{Name: "root", Body: Seq(uses...)},
		{Name: "word", Body: &Node{Op: OpBytes, Leaf: &Leaf{Bytes: bytes.Repeat([]byte("w"), 250)}}},
		{Name: "filler", Body: &Node{Op: OpBytes, Leaf: &Leaf{Bytes: bytes.Repeat([]byte("f"), 550000)}}},
	}}
	p, err := Compile(g)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(p.Inst), MaxInst)
	names := make([]string, len(p.Rules))
	for i, r := range p.Rules {
		names[i] = r.Name
	}
	assert.Contains(t, names, "word", "the rule used 2,000 times stays called")
}

// TestCalledRulesStayCalls checks Rule.Called: a rule referenced twice
// is inlined (no program rule of its own, no call), and marked Called it
// keeps its program rule and both references call it.
func TestCalledRulesStayCalls(t *testing.T) {
	grammar := func(called bool) *Grammar {
		return &Grammar{Start: "root", Rules: []Rule{
			{Name: "root", Body: Seq(Lit("x"), Ref("word"), Lit("y"), Ref("word"), Lit("z"))},
			{Name: "word", Body: Lit("abc"), Called: called},
		}}
	}
	calls := func(p *Prog) int {
		n := 0
		for _, in := range p.Inst {
			if in.Op == InstCall && p.Rules[in.Arg].Name == "word" {
				n++
			}
		}
		return n
	}
	p, err := Compile(grammar(false))
	require.NoError(t, err)
	assert.Len(t, p.Rules, 1, p.String())
	assert.Zero(t, calls(p), p.String())
	p, err = Compile(grammar(true))
	require.NoError(t, err)
	assert.Len(t, p.Rules, 2, p.String())
	assert.Equal(t, 2, calls(p), p.String())
}

// nest returns a node nested depth deep, each level made by wrap.
func nest(depth int, wrap func(*Node) *Node) *Node {
	n := Lit("a")
	for range depth - 1 {
		n = wrap(n)
	}
	return n
}

// TestInliningStaysWithinMaxDepth checks that inlining never nests a
// tree past MaxDepth: 20 rules, each 600 deep with the next rule's
// reference at the bottom, would nest 12,000 deep inlined; such a
// grammar is past inlineBudget, so its rules stay called and it
// compiles. Five such rules (3,000 deep, 9,000 instructions as inline
// estimates them, each copy counted beside its rule) are within it and
// are all inlined. The depth is of sequences of one item, so that the
// size of the grammar is close to its depth. (boundInlining, which
// calls a rule whose inlining would nest too deep, is the guard should
// inlineBudget ever pass MaxDepth.)
func TestInliningStaysWithinMaxDepth(t *testing.T) {
	chain := func(rules int) *Grammar {
		g := &Grammar{Start: "r0"}
		for i := range rules {
			leaf := Lit("z")
			if i < rules-1 {
				leaf = Ref(fmt.Sprint("r", i+1))
			}
			n := leaf
			for range 599 {
				n = &Node{Op: OpSeq, Subs: []*Node{n}}
			}
			g.Rules = append(g.Rules, Rule{Name: fmt.Sprint("r", i), Body: n})
		}
		return g
	}
	p, err := Compile(chain(20))
	require.NoError(t, err)
	assert.Len(t, p.Rules, 20, "12,000 deep, past inlineBudget: every rule called")
	p, err = Compile(chain(5))
	require.NoError(t, err)
	assert.Len(t, p.Rules, 1, "3,000 deep: all inlined")
}

func TestCompileDeepTrees(t *testing.T) {
	wraps := map[string]func(*Node) *Node{
		"seq":    func(n *Node) *Node { return Seq(n, Lit("b")) },
		"alt":    func(n *Node) *Node { return Alt(n, Lit("b")) },
		"repeat": func(n *Node) *Node { return Repeat(n, 0, 1) },
	}
	for name, wrap := range wraps {
		t.Run(name, func(t *testing.T) {
			p, err := Compile(&Grammar{Start: "root", Rules: []Rule{{Name: "root", Body: nest(MaxDepth, wrap)}}})
			require.NoError(t, err, "MaxDepth deep compiles")
			assert.NotEmpty(t, p.Inst)
			for _, depth := range []int{MaxDepth + 1, 100000} {
				e := compileErr(t, &Grammar{Start: "root", Rules: []Rule{{Name: "root", Body: nest(depth, wrap)}}})
				assert.ErrorIs(t, e, ErrTooDeep)
				assert.Contains(t, e.Error(), "rule root: the grammar nests more than 10000 deep")
			}
		})
	}
	// A tree that contains itself is refused, not walked forever.
	loop := Seq(Lit("a"))
	loop.Subs = append(loop.Subs, loop)
	assert.ErrorIs(t, compileErr(t, &Grammar{Start: "root", Rules: []Rule{{Name: "root", Body: loop}}}), ErrTooDeep)
}

// TestCompileLongRuleChain compiles a chain of rules that inlining would
// nest deeper than MaxDepth: some of them are called instead.
func TestCompileLongRuleChain(t *testing.T) {
	const n = 100000
	g := &Grammar{Start: "r0"}
	for i := range n {
		body := Seq(Lit("a"), Ref(fmt.Sprintf("r%d", i+1)))
		if i == n-1 {
			body = Lit("z")
		}
		g.Rules = append(g.Rules, Rule{Name: fmt.Sprintf("r%d", i), Body: body})
	}
	start := time.Now()
	p, err := Compile(g)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 20*time.Second)
	assert.Greater(t, len(p.Rules), 1)
}

// TestCompileSharedSubtrees checks that a tree whose subtrees are shared
// by many parents (as JSON Schema's lowering makes) is walked once per
// node, not once per path: sixty levels of Seq(x, x) have 2⁶⁰ paths.
func TestCompileSharedSubtrees(t *testing.T) {
	n := Lit("ab")
	for range 60 {
		n = Alt(Seq(n, Lit(",")), Repeat(n, 0, 1))
	}
	start := time.Now()
	e := compileErr(t, &Grammar{Start: "root", Rules: []Rule{{Name: "root", Body: n}}})
	assert.ErrorIs(t, e, ErrTooLarge)
	assert.Less(t, time.Since(start), 5*time.Second)

	// Shared and small enough: compiles, as the same tree unshared does.
	m := Class('0', '9')
	for range 6 {
		m = Seq(m, Alt(m, Lit("-")))
	}
	p, err := Compile(&Grammar{Start: "root", Rules: []Rule{{Name: "root", Body: m}}})
	require.NoError(t, err)
	q, err := Compile(deepCopy(&Grammar{Start: "root", Rules: []Rule{{Name: "root", Body: m}}}))
	require.NoError(t, err)
	assert.Equal(t, q.String(), p.String())
}

// TestNullableLongChain compiles a long sequence of optional items: a
// chain of splits that the nullable pass follows without recursion.
func TestNullableLongChain(t *testing.T) {
	items := make([]*Node, 200000)
	for i := range items {
		items[i] = Repeat(Lit("a"), 0, 1)
	}
	p, err := Compile(&Grammar{Start: "root", Rules: []Rule{{Name: "root", Body: Alt(Seq(items...), Seq(Ref("root"), Lit("b")))}}})
	require.NoError(t, err)
	assert.True(t, p.Rules[p.Start].Nullable)
}

// TestNullableThroughLaterCalls finds a rule nullable only on the
// pass after its callee is: the pass must not take the calls' table,
// whose memory it reuses, for its own marks. In root ::= r1 r1 the
// table holds 3 at the second call (the first, at 3 - 1, goes on
// there), and 3 is the generation the second pass examines root at.
func TestNullableThroughLaterCalls(t *testing.T) {
	r1 := Alt(Seq(Lit("a"), Ref("r1"), Lit("b")), &Node{Op: OpEmpty})
	p, err := Compile(&Grammar{Start: "root", Rules: []Rule{
		{Name: "root", Body: Seq(Ref("r1"), Ref("r1"))},
		{Name: "r1", Body: r1},
	}})
	require.NoError(t, err)
	require.Len(t, p.Rules, 2, p.String()) // r1 is called, not inlined
	for _, r := range p.Rules {
		assert.True(t, r.Nullable, "rule %s", r.Name)
	}
}

func TestProgStringBytes(t *testing.T) {
	p, err := Compile(Choice("é", "\xff"))
	require.NoError(t, err)
	s := p.String()
	assert.Contains(t, s, `byte '\xc3'`)
	assert.Contains(t, s, `byte '\xff'`)
	assert.NotContains(t, s, "Ã")
	assert.Equal(t, `'a'`, quoteByte('a'))
	assert.Equal(t, `'\n'`, quoteByte('\n'))
	assert.Equal(t, `'\x00'`, quoteByte(0))
}

// TestUnproductiveBranchesPruned checks that a branch that matches
// nothing (an empty alternation in it) compiles to no code, whether or
// not every rule is productive.
func TestUnproductiveBranchesPruned(t *testing.T) {
	never := Alt() // matches nothing
	for _, extra := range []Rule{
		{Name: "x", Body: Lit("x")},
		{Name: "x", Body: Seq(Lit("x"), Ref("x"))}, // unproductive
	} {
		g := &Grammar{Start: "s", Rules: []Rule{
			{Name: "s", Body: Alt(Lit("a"), Seq(Lit("bcdefgh"), never), Ref("x"))},
			extra,
		}}
		p, err := Compile(g)
		require.NoError(t, err)
		for _, in := range p.Inst {
			assert.False(t, in.Op == InstByte && in.Lo <= 'b' && 'b' <= in.Hi, "the branch after \"b\" matches nothing:\n%s", p)
		}
	}
}

// TestBoundInliningByDepth checks boundInlining on its own, as compile
// would call it had inline chosen to inline every rule of a chain: 20
// rules, each 600 deep with the next rule's reference at the bottom,
// would nest 12,000 deep, past MaxDepth, so one of them is called
// instead; with each reference at the top, nothing stacks and all stay
// inlined. (inline itself never gets there while inlineBudget is at
// most MaxDepth: see TestInliningStaysWithinMaxDepth.)
func TestBoundInliningByDepth(t *testing.T) {
	chain := func(top bool) *compiler {
		g := &Grammar{Start: "r0"}
		for i := range 20 {
			leaf := Lit("z")
			if i < 19 {
				leaf = Ref(fmt.Sprint("r", i+1))
			}
			n := leaf
			if top {
				n = Lit("a")
			}
			for range 599 {
				n = Seq(n, Lit("b"))
			}
			if top {
				n = Seq(leaf, n)
			}
			g.Rules = append(g.Rules, Rule{Name: fmt.Sprint("r", i), Body: n})
		}
		c := scanned(t, g)
		c.inlined = make([]bool, len(g.Rules))
		for i := 1; i < len(g.Rules); i++ {
			c.inlined[i] = true // every rule but the start
		}
		return c
	}
	called := func(c *compiler) int {
		n := 0
		for _, in := range c.inlined[1:] {
			if !in {
				n++
			}
		}
		return n
	}
	c := chain(false)
	c.boundInlining()
	assert.Equal(t, 1, called(c), "references at the bottom: one rule called instead")
	c = chain(true)
	c.boundInlining()
	assert.Equal(t, 0, called(c), "references at the top: all stay inlined")
}

// scanned is a compiler of g that has scanned every rule, as Compile's
// first walk does: the references, heights and sizes known, each rule
// productive as scan judged it, nothing inlined yet.
func scanned(t *testing.T, g *Grammar) *compiler {
	t.Helper()
	c := &compiler{g: g, index: newRuleIndex(len(g.Rules)), prog: &Prog{}}
	for i, r := range g.Rules {
		require.True(t, c.index.add(r.Name, i))
	}
	c.productive = make([]bool, len(g.Rules))
	c.heights = make([]int, len(g.Rules))
	c.repeats = make([]bool, len(g.Rules))
	c.refs.at = make([]int, len(g.Rules)+1)
	for i := range g.Rules {
		c.refs.at[i] = len(c.refs.to)
		_, productive, err := c.scan(i)
		require.NoError(t, err)
		c.productive[i] = productive
	}
	c.refs.at[len(g.Rules)] = len(c.refs.to)
	return c
}
