package jsonschema

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/internal/earley"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNameSet checks that a list of names finds each name's first place
// the same way looked through (short) and by its map (long).
func TestNameSet(t *testing.T) {
	for _, n := range []int{3, shortNames, shortNames + 1, 100} {
		var names []string
		for i := range n {
			names = append(names, fmt.Sprintf("n%d", i%(n-1))) // the last repeats the first
		}
		x := newNameSet(names)
		assert.Equal(t, n > shortNames, x.at != nil, "%d names: indexed", n)
		for i := range n - 1 {
			assert.Equal(t, i, x.index(names[i]), "%d names: %s", n, names[i])
		}
		assert.Equal(t, 0, x.index(names[n-1]), "%d names: a repeated name's first place", n)
		assert.Equal(t, -1, x.index("absent"), "%d names", n)
	}
}

// TestPropIndex checks Schema.prop on a long Props, whose index is built
// at the first lookup: a repeated name gives its first schema, and names
// appended after the index was built are found.
func TestPropIndex(t *testing.T) {
	s := &Schema{}
	for i := range 2 * shortNames {
		s.Props = append(s.Props, Prop{fmt.Sprintf("p%d", i), &Schema{Ptr: fmt.Sprintf("#/%d", i)}})
	}
	s.Props = append(s.Props, Prop{"p0", &Schema{Ptr: "#/again"}})
	assert.Equal(t, "#/5", s.prop("p5").Ptr)
	assert.Equal(t, "#/0", s.prop("p0").Ptr, "a repeated name: its first schema")
	assert.Nil(t, s.prop("late"))
	s.Props = append(s.Props, Prop{"late", &Schema{Ptr: "#/late"}})
	assert.Equal(t, "#/late", s.prop("late").Ptr, "appended after the index was built")
	short := &Schema{Props: []Prop{{"a", &Schema{Ptr: "#/a"}}}}
	assert.Equal(t, "#/a", short.prop("a").Ptr)
	assert.Nil(t, short.propAt, "a short list is looked through")
}

// TestCanonicalCharClass checks the ASCII class of canonicalChar, made
// in one pass, against the ranges it excludes, negated: every printable
// ASCII character but the quote and the backslash (DEL included), less
// the excepted ones, for each single exception and a few sets.
func TestCanonicalCharClass(t *testing.T) {
	want := func(except []rune) []rune {
		excluded := []rune{0, 0x1f, '"', '"', '\\', '\\', 0x80, utf8.MaxRune}
		for _, r := range except {
			excluded = append(excluded, r, r)
		}
		return grammar.NegateRanges(grammar.NormalizeRanges(excluded))
	}
	sets := [][]rune{nil, {' '}, {'~'}, {0x7e, 0x21}, []rune("abcxyz"), []rune(" !#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}~")}
	for r := rune(0x20); r < 0x7f; r++ {
		if r != '"' && r != '\\' {
			sets = append(sets, []rune{r})
		}
	}
	for _, except := range sets {
		c := newCompiler(Options{}, nil, draftOf(map[string]any{}))
		n := c.buildCanonicalChar(except)
		require.Equal(t, grammar.OpAlt, n.Op)
		assert.Equal(t, want(except), n.Subs[0].Runes(), "except %q", string(except))
	}
}

// TestCanonicalEscape checks the escapes a key's character may take
// (the rule _canonesc): exactly escapeRune's for the quote, the
// backslash and the control characters. It lists the rule's whole
// language, trying every byte after every prefix the parser takes, and
// fails if a prefix runs longer than the longest escape (the language
// would not be those 34 strings).
func TestCanonicalEscape(t *testing.T) {
	c := newCompiler(Options{}, nil, draftOf(map[string]any{}))
	p, err := grammar.Compile(&grammar.Grammar{Start: "root", Rules: []grammar.Rule{{Name: "root", Body: c.canonicalEscape()}}})
	require.NoError(t, err)
	// takes reports whether the parser takes s as a prefix, and whether
	// s may end there.
	takes := func(s string) (prefix, whole bool) {
		ps := earley.NewParser(p)
		for i := range len(s) {
			if !ps.Push(s[i]) {
				return false, false
			}
		}
		return true, ps.CanEnd()
	}
	canonical := map[string]bool{}
	for _, r := range append([]rune{'"', '\\'}, controlRunes()...) {
		canonical[escapeRune(r)] = true
	}
	require.Len(t, canonical, 34)
	longest := len(`\u0000`)
	language := map[string]bool{}
	prefixes := []string{""}
	for len(prefixes) > 0 {
		s := prefixes[len(prefixes)-1]
		prefixes = prefixes[:len(prefixes)-1]
		require.LessOrEqual(t, len(s), longest, "the parser takes %q, longer than any canonical escape", s)
		for b := range 256 {
			next := s + string([]byte{byte(b)})
			if prefix, whole := takes(next); prefix {
				prefixes = append(prefixes, next)
				if whole {
					language[next] = true
				}
			}
		}
	}
	assert.Equal(t, canonical, language)
}

// TestObjectMembersCalled checks which rules of an object whose members
// come in any order stay calls (grammar.Rule.Called): with more than one
// state, the tracked members and the rule of the others (untracked
// members and additional ones), each then one program rule that the
// states call instead of a copy in each; an untracked member, referred
// to once, and everything of an object of one state, are inlined. The
// language is the same: any order, each member once.
func TestObjectMembersCalled(t *testing.T) {
	const threeMembers = `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"},"c":{"type":"boolean"}},"required":["a","b"],"additionalProperties":false}`
	props := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `,"p%d":{"type":"integer"}`, i)
		}
		return b.String()[1:]
	}
	for _, tc := range []struct {
		name, schema string
		called       int
	}{
		{"three tracked members", threeMembers, 3},
		{"one tracked member, the others' rule", `{"type":"object","properties":{` + props(anyOrderMax+1) + `},"required":["p0"]}`, 2},
		{"maxProperties counting untracked members", `{"type":"object","properties":{` + props(anyOrderMax+1) + `},"maxProperties":2}`, 1},
		{"one state", `{"type":"object","properties":{` + props(anyOrderMax+1) + `}}`, 0},
	} {
		g, err := Compile([]byte(tc.schema), Options{})
		require.NoError(t, err, tc.name)
		var called []string
		for _, r := range g.Rules {
			if r.Called {
				called = append(called, r.Name)
			}
		}
		assert.Len(t, called, tc.called, "%s:\n%s", tc.name, g)
		p, err := grammar.Compile(g)
		require.NoError(t, err, tc.name)
		calls := map[string]int{}
		for _, in := range p.Inst {
			if in.Op == grammar.InstCall {
				calls[p.Rules[in.Arg].Name]++
			}
		}
		for _, name := range called {
			assert.Greater(t, calls[name], 1, "%s: %s is called from several states:\n%s", tc.name, name, p)
		}
	}
	g, err := Compile([]byte(threeMembers), Options{})
	require.NoError(t, err)
	p, err := grammar.Compile(g)
	require.NoError(t, err)
	for _, text := range []string{`{"a":"x","b":1}`, `{"b":1,"a":"x"}`, `{"c":true,"b":1,"a":"x"}`} {
		assert.True(t, acceptsText(p, text), text)
	}
	for _, text := range []string{`{"a":"x"}`, `{"a":"x","b":1,"a":"y"}`, `{"a":"x","b":1,"d":2}`} {
		assert.False(t, acceptsText(p, text), text)
	}
}

// TestKeyDeviateRules: in a schema past calledDeviatesFrom bytes, the
// character that leaves a key trie is a rule of its own (one per set of
// characters that go on), and inline in a smaller one; the language is
// the same.
func TestKeyDeviateRules(t *testing.T) {
	const object = `"type": "object", "properties": {"name": {"type": "string"}, "namespace": {"type": "integer"}, "labels": {"type": "boolean"}}`
	small := `{` + object + `}`
	large := `{"description": "` + strings.Repeat("x", calledDeviatesFrom) + `", ` + object + `}`
	gs, err := Compile([]byte(small), Options{})
	require.NoError(t, err)
	gl, err := Compile([]byte(large), Options{})
	require.NoError(t, err)
	// The trie of labels, name and namespace goes on by ten sets of
	// characters, a rule each: {l, n}, a, b, c, e, l, m, p, s and none
	// (where a name ends).
	assert.Equal(t, len(gs.Rules)+10, len(gl.Rules), "small:\n%s\nlarge:\n%s", gs, gl)
	ps, err := grammar.Compile(gs)
	require.NoError(t, err)
	pl, err := grammar.Compile(gl)
	require.NoError(t, err)
	for _, text := range []string{`{"name": "a"}`, `{"names": 1}`, `{"name": 1}`, `{"namespac": []}`, `{"namespace": "x"}`, `{"x\u00e9": null}`, `{"n\"": 1}`, `{"labels": true, "label": 2}`} {
		assert.Equal(t, acceptsText(ps, text), acceptsText(pl, text), text)
	}
}

// TestPatternPropertyValueOnce: what follows a patterned key, its value,
// is compiled once, not at every state of the key's automaton that can
// end it. ^[a-z]{1,200}$ has 200 such states; a copy of this value (300
// characters unrolled) at each made over 200,000 instructions.
func TestPatternPropertyValueOnce(t *testing.T) {
	g, err := Compile([]byte(`{"type": "object", "patternProperties": {"^[a-z]{1,200}$": {"type": "string", "maxLength": 300}}, "additionalProperties": false}`), Options{})
	require.NoError(t, err)
	p, err := grammar.Compile(g)
	require.NoError(t, err)
	assert.Less(t, len(p.Inst), 20000)
	key := func(n int) string { return `"` + strings.Repeat("k", n) + `"` }
	value := func(n int) string { return `"` + strings.Repeat("v", n) + `"` }
	for _, c := range []struct {
		text string
		want bool
	}{
		{`{` + key(1) + `: ` + value(0) + `}`, true},
		{`{` + key(200) + `: ` + value(300) + `, ` + key(7) + `: "x"}`, true},
		{`{` + key(201) + `: ` + value(1) + `}`, false},
		{`{` + key(0) + `: ` + value(1) + `}`, false},
		{`{` + key(5) + `: ` + value(301) + `}`, false},
		{`{` + key(5) + `: 1}`, false},
	} {
		assert.Equal(t, c.want, acceptsText(p, c.text), c.text[:min(len(c.text), 40)])
	}
}
