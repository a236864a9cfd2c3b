package regex

import (
	"errors"
	"math/rand/v2"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/internal/earley"
)

var patterns = []string{
	`[a-z]+@[a-z]+\.(com|org)`,
	`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`,
	`^(?i)hello( world)?$`,
	`\d{3}-\d{4}`,
	`(ab|a)*b?`,
	`[^"\\]*`,
	`\p{Greek}+ [日本]{2}`,
	`.{0,3}x`,
	`\A(yes|no|maybe)\z`,
	`(a|b){2,4}c*`,
	``,
}

func matcher(t *testing.T, re string) *grammar.Prog {
	g, err := Parse(re)
	require.NoError(t, err)
	p, err := grammar.Compile(g)
	require.NoError(t, err)
	return p
}

func accepts(p *grammar.Prog, s string) (prefix, whole bool) {
	ps := earley.NewParser(p)
	for i := 0; i < len(s); i++ {
		if !ps.Push(s[i]) {
			return false, false
		}
	}
	return true, ps.CanEnd()
}

// TestRandomWalksMatchGoRegexp walks the parser at random through
// allowed bytes; every string it can end on must match ^(?:re)$ in Go's
// regexp (soundness), and the test strings Go accepts must be accepted
// (completeness).
func TestRandomWalksMatchGoRegexp(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2))
	for _, pat := range patterns {
		t.Run(pat, func(t *testing.T) {
			p := matcher(t, pat)
			goRE := regexp.MustCompile(`^(?:` + pat + `)$`)
			for range 300 {
				ps := earley.NewParser(p)
				var s []byte
				for len(s) < 40 {
					if ps.CanEnd() {
						require.True(t, goRE.Match(s), "walk ended on %q, which Go's regexp rejects", s)
						if r.IntN(4) == 0 {
							break
						}
					}
					next, _ := ps.Next()
					var opts []byte
					for c := 0; c < 256; c++ {
						if next[c>>6]&(1<<(c&63)) != 0 {
							opts = append(opts, byte(c))
						}
					}
					if len(opts) == 0 {
						break
					}
					c := opts[r.IntN(len(opts))]
					require.True(t, ps.Push(c))
					s = append(s, c)
				}
			}
		})
	}
}

func TestExamples(t *testing.T) {
	tests := []struct {
		re  string
		yes []string
		no  []string
	}{
		{`[a-z]+@[a-z]+\.(com|org)`, []string{"a@b.com", "xyz@q.org"}, []string{"a@b.net", "@b.com", "a@b.com "}},
		{`^(?i)hello( world)?$`, []string{"hello", "HeLLo WORLD"}, []string{"hello!", " hello"}},
		{`\d{3}-\d{4}`, []string{"555-1234"}, []string{"55-1234", "5555-1234"}},
		{`\p{Greek}+ [日本]{2}`, []string{"αβγ 日本", "Ω 本本"}, []string{"abc 日本", "α 日"}},
		{`.{0,3}x`, []string{"x", "abcx", "☃☃☃x"}, []string{"abcdx", "\nx"}},
	}
	for _, tt := range tests {
		p := matcher(t, tt.re)
		goRE := regexp.MustCompile(`^(?:` + tt.re + `)$`)
		for _, s := range tt.yes {
			require.True(t, goRE.MatchString(s), "bad test: %q %q", tt.re, s)
			_, w := accepts(p, s)
			assert.True(t, w, "%s should accept %q", tt.re, s)
		}
		for _, s := range tt.no {
			require.False(t, goRE.MatchString(s), "bad test: %q %q", tt.re, s)
			_, w := accepts(p, s)
			assert.False(t, w, "%s should refuse %q", tt.re, s)
		}
	}
}

// TestSearchMatchesGoRegexp checks Lower's search mode, anchors in
// alternations included, against Go's unanchored MatchString on every
// string of up to 4 letters from a small alphabet.
func TestSearchMatchesGoRegexp(t *testing.T) {
	var strs []string
	var gen func(prefix string)
	gen = func(prefix string) {
		strs = append(strs, prefix)
		if len(prefix) < 4 {
			for _, c := range "abx" {
				gen(prefix + string(c))
			}
		}
	}
	gen("")
	for _, re := range []string{`a`, `^a`, `a$`, `^a$`, `^a$|^b`, `^(?:ab$|x)`, `x|^b$`, `(^a|b$)`, `^(a|bx)$`, `^$`, `b+|^x`, `^a(?:b$|x)`} {
		n, err := Lower(re, true)
		require.NoError(t, err, re)
		p, err := grammar.Compile(&grammar.Grammar{Start: "root", Rules: []grammar.Rule{{Name: "root", Body: n}}})
		require.NoError(t, err, re)
		goRE := regexp.MustCompile(re)
		for _, s := range strs {
			_, w := accepts(p, s)
			require.Equal(t, goRE.MatchString(s), w, "%s on %q", re, s)
		}
	}
}

func TestUnsupported(t *testing.T) {
	for re, want := range map[string]string{
		`a\bb`:               "word boundary",
		`a^b`:                "anchor",
		`(a`:                 "missing closing )",
		`a$b`:                "anchor",
		`[^\x00-\x{10FFFF}]`: "matches nothing",
	} {
		_, err := Parse(re)
		require.Error(t, err, re)
		assert.Contains(t, err.Error(), want, re)
	}
}

// TestErrorsAreTyped checks that errors are *grammar.Error of the file
// "regex", at the offending text.
func TestErrorsAreTyped(t *testing.T) {
	tests := []struct {
		re   string
		want string
	}{
		{"(a", "regex:1:1: missing closing ): `(a`"},
		{"(a)(b", "regex:1:4: missing closing ): `(a)(b`"},
		{"ab)", "regex:1:3: unexpected ): `ab)`"},
		{`x[(]a)`, "regex:1:6: unexpected ): `x[(]a)`"},
		{`\Qa)\E)`, "regex:1:7: unexpected ): `\\Qa)\\E)`"},
		{"é[b", "regex:1:2: missing closing ]: `[b`"},
		{"x*+*", "regex:1:2: invalid nested repetition operator: `*+`"},
		{`a\q`, "regex:1:2: invalid escape sequence: `\\q`"},
		{"(?:a{1000}){1000}", "regex:1:12: invalid repeat count: `{1000}` (counts are at most 1000, and nested counts multiply to at most 1000, as in Go's regexp)"},
		{"a\n(b", "regex:2:1: missing closing ): `a\n(b`"},
		{"ab\xff", `regex:1:3: invalid UTF-8: byte \xff`},
		{"a^b", "regex:1:2: anchor ^ is only supported at the start or end of the expression"},
		{"^a|^b", "regex:1:4: anchor ^ is only supported at the start or end of the expression"},
		{`日本\bc`, `regex:1:3: word boundary \b is not supported: a grammar cannot express it`},
		{`a[^\x00-\x{10FFFF}]`, `regex:1:2: character class [^\x00-\x{10FFFF}] matches nothing`},
	}
	for _, tt := range tests {
		_, err := Parse(tt.re)
		var e *grammar.Error
		require.True(t, errors.As(err, &e), "%q: %T %v", tt.re, err, err)
		assert.Equal(t, "regex", e.File)
		assert.Equal(t, tt.want, err.Error(), tt.re)
	}
	// Nesting and size past regexp/syntax's limits.
	_, err := Parse(strings.Repeat("(", 1001) + strings.Repeat(")", 1001))
	assert.ErrorIs(t, err, grammar.ErrTooDeep)
	assert.ErrorContains(t, err, "regex:1:1001: expression nests too deeply")
	_, err = Parse(strings.Repeat(`\pL{1000}`, 4000))
	assert.ErrorIs(t, err, grammar.ErrTooLarge)
	assert.ErrorContains(t, err, "expression too large")
}

func FuzzParse(f *testing.F) {
	for _, p := range patterns {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, re string) {
		g, err := Parse(re)
		if err != nil {
			var e *grammar.Error
			if !errors.As(err, &e) || e.File != "regex" || strings.Contains(err.Error(), "internal error") {
				t.Fatalf("%q: error %T: %v", re, err, err)
			}
			if e.Pos.Line > 0 && (int(e.Pos.Offset) > len(re) || e.Pos.Col < 1) {
				t.Fatalf("%q: position %+v outside the expression", re, e.Pos)
			}
			return
		}
		p, err := grammar.Compile(g)
		if err != nil {
			var e *grammar.Error
			if !errors.As(err, &e) {
				t.Fatalf("%q: compile error %T: %v", re, err, err)
			}
			return
		}
		goRE, err := regexp.Compile(`^(?:` + re + `)$`)
		if err != nil {
			return
		}
		// Strings Go accepts must be accepted.
		for _, s := range []string{"", "a", "ab", "0", "aaa", "\n"} {
			if goRE.MatchString(s) {
				if _, w := accepts(p, s); !w {
					t.Fatalf("%q: Go matches %q, the grammar does not", re, s)
				}
			}
		}
	})
}

// FuzzSearch checks search mode (JSON Schema's unanchored patterns)
// against Go's MatchString on a few strings, both ways.
func FuzzSearch(f *testing.F) {
	for _, p := range []string{`^a$|^b`, `^(?:ab$|x)`, `x|^b$`, `a+b*`, `^$`, `[a-c]{2}$`} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, re string) {
		n, err := Lower(re, true)
		if err != nil {
			return
		}
		p, err := grammar.Compile(&grammar.Grammar{Start: "root", Rules: []grammar.Rule{{Name: "root", Body: n}}})
		if err != nil {
			return
		}
		goRE, err := regexp.Compile(re)
		if err != nil {
			return
		}
		for _, s := range []string{"", "a", "ab", "ba", "x", "abc", "\n", "aab"} {
			if _, w := accepts(p, s); w != goRE.MatchString(s) {
				t.Fatalf("%q on %q: grammar %v, Go %v", re, s, w, goRE.MatchString(s))
			}
		}
	})
}

// TestRepetitionsAreNotCopied: a short pattern of counted repetitions
// (\pL{1000} repeated, a few KB) lowers each repeated part once; past
// what any program could hold it is refused before it is spelled out.
// Either way in a few MB, where it had taken gigabytes before the
// grammar's size was checked.
func TestRepetitionsAreNotCopied(t *testing.T) {
	for _, c := range []struct {
		re      string
		refused bool // by Lower, before Simplify; else by grammar.Compile
	}{
		{strings.Repeat(`\pL{1000}`, 200), false},
		{strings.Repeat(`\pL{1000}`, 1800), true},
		{strings.Repeat(`a{1000}`, 2300), true},
		{strings.Repeat(`(?:ab|[c-z]){500}`, 1100), true},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g, err := Parse(c.re)
		if err == nil {
			_, err = grammar.Compile(g)
		}
		runtime.ReadMemStats(&after)
		require.Error(t, err, "%.30s…", c.re)
		assert.ErrorIs(t, err, grammar.ErrTooLarge)
		if c.refused {
			assert.Nil(t, g, "refused by Lower")
			assert.Contains(t, err.Error(), "spelled out")
		}
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "%.30s… allocated %d MB", c.re, (after.TotalAlloc-before.TotalAlloc)>>20)
	}
	// x{0} spells nothing: 1,100 of them around a{1000} compile.
	re := strings.Repeat(`(?:a{1000}){0}b`, 1100)
	g, err := Parse(re)
	require.NoError(t, err)
	_, err = grammar.Compile(g)
	require.NoError(t, err)
}
