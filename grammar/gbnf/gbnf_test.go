package gbnf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/internal/earley"
	"github.com/reins-go/reins/internal/shared"
)

func TestSharedGrammarsParseAndCompile(t *testing.T) {
	dir := shared.Path(t, "gbnf")
	files, err := filepath.Glob(filepath.Join(dir, "*.gbnf"))
	require.NoError(t, err)
	require.Len(t, files, 8)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			g, err := Parse(filepath.Base(f), string(src))
			require.NoError(t, err)
			_, err = grammar.Compile(g)
			require.NoError(t, err)
			// Parse → print → parse is stable.
			again, err := Parse("formatted", Format(g))
			require.NoError(t, err, Format(g))
			assert.Equal(t, g.String(), again.String())
		})
	}
}

func TestParseTree(t *testing.T) {
	tests := []struct{ src, dump string }{
		{`root ::= "a" | b
b ::= [a-z]{2,3} "\x41" ( "c" | ) *`, "root ::= alt{lit{a}|ref{b}}\nb ::= seq{rep{2,3 class{a-z}} lit{A} rep{0,-1 alt{lit{c}|empty{}}}}\n"},
		{"root ::= [^\"\\\\] . \"\\u00e9\\U0001F600\"", "root ::= seq{class{\\x00-!#-[]-\\U0010ffff} class{\\x00-\\U0010ffff} lit{\\u00e9\\U0001f600}}\n"},
		{"# comment\nroot ::=\n  x+ # trailing\n  | \"y\"?\nx ::= \"x\"{3,}", "root ::= alt{rep{1,-1 ref{x}}|rep{0,1 lit{y}}}\nx ::= rep{3,-1 lit{x}}\n"},
		{"root ::= <[42]> !<|eot_id|> \"\"", "root ::= seq{token{<[42]>} !token{<|eot_id|>} empty{}}\n"},
		{"root ::= [a\\-z\\]]", "root ::= class{\\-]az}\n"},
	}
	for _, tt := range tests {
		g, err := Parse("t.gbnf", tt.src)
		require.NoError(t, err, tt.src)
		assert.Equal(t, tt.dump, g.String(), tt.src)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"root ::= foo", "t.gbnf:1:10: undefined rule foo"},
		{"rot ::= \"a\"", `no "root" rule`},
		{"root ::= \"a\"\nroot ::= \"b\"", "t.gbnf:2:1: rule root is defined twice"},
		{"root ::= []", "empty character class"},
		{"root ::= [z-a]", "reversed"},
		{"root ::= \"\\q\"", `t.gbnf:1:11: unknown escape "\\q"`},
		{"root ::= \"\\x4\"", "needs 2 hex digits"},
		{"root ::= \"abc", "t.gbnf:1:10"},
		{"root ::= (\"a\"", "t.gbnf:1:"},
		{"root ::= \"a\"{3,1}", "maximum is below the minimum"},
		{"root ::= \"a\"{99999}", "exceeds the limit"},
		{"root ::= \"a\"{99999999999999999999999}", "repetition {99999999999999999999999} exceeds the limit of 2000 (MaxRepeat)"},
		{"root ::= \"\\uD800\"", "not a Unicode scalar value"},
		{"", "no rules"},
		{"root ::= x\nx ::= \"a\" x", "matches no string"},
		{"root ::= <[>", "t.gbnf:1:10: malformed token terminal <[>"},
		{"root ::= <[-3]>", "t.gbnf:1:10: token id in <[-3]>: want a number ≥ 0"},
		{"root ::= <[x]>", "token id in <[x]>"},
	}
	for _, tt := range tests {
		g, err := Parse("t.gbnf", tt.src)
		if err == nil {
			_, err = grammar.Compile(g)
		}
		require.Error(t, err, tt.src)
		assert.Contains(t, err.Error(), tt.want, tt.src)
	}
}

// TestErrorsAreTyped checks that every error is a *grammar.Error with
// the file, and the position of what is wrong (columns in characters,
// offsets in bytes).
func TestErrorsAreTyped(t *testing.T) {
	tests := []struct {
		src       string
		line, col int
		offset    int
		msg       string
	}{
		{"root ::= foo", 1, 10, 9, "undefined rule foo"},
		{"root ::= \"é\\q\"", 1, 12, 12, `unknown escape "\\q"`},
		{"root ::= [é\\q]", 1, 12, 12, `unknown escape "\\q"`},
		{"root ::= [a-bé-a]", 1, 14, 13, `character class [a-bé-a]: range 'é'-'a' is reversed`},
		{"root ::= \"a\"\n  | é", 2, 5, 17, "unexpected character 'é'"},
		{"root ::= \"a\xff\"", 1, 12, 11, `invalid UTF-8 byte \xff`},
		{"root ::= \xff", 1, 10, 9, `invalid UTF-8 byte \xff`},
		{"root ::= (\"a\"", 1, 14, 13, `unexpected token "<EOF>" (expected ")")`},
		{"root ::= \"a\"\nroot ::= \"b\"", 2, 1, 13, "rule root is defined twice (first at 1:1)"},
		{"root ::= \"a\"{3,1}", 1, 13, 12, "repetition {3,1}: the maximum is below the minimum"},
		{"root ::= x\nx ::= \"a\" x", 1, 1, 0, "start rule root matches no string"},
	}
	for _, tt := range tests {
		g, err := Parse("t.gbnf", tt.src)
		if err == nil {
			_, err = grammar.Compile(g)
		}
		var e *grammar.Error
		require.True(t, errors.As(err, &e), "%q: %T %v", tt.src, err, err)
		assert.Equal(t, "t.gbnf", e.File, tt.src)
		assert.Equal(t, grammar.Pos{Line: int32(tt.line), Col: int32(tt.col), Offset: int32(tt.offset)}, e.Pos, "%q: %v", tt.src, err)
		assert.Contains(t, e.Msg, tt.msg, tt.src)
		assert.True(t, strings.HasPrefix(err.Error(), fmt.Sprintf("t.gbnf:%d:%d: ", tt.line, tt.col)), err.Error())
	}
	_, err := Parse("t.gbnf", "")
	var e *grammar.Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, "t.gbnf: the grammar has no rules", err.Error())
}

// TestNesting checks that nesting past MaxNesting is an error with its
// position, quickly and without exhausting the stack, and that nesting
// up to it parses.
func TestNesting(t *testing.T) {
	deep := func(n int) string {
		return "root ::= " + strings.Repeat("(", n) + `"a"` + strings.Repeat(")", n)
	}
	g, err := Parse("t.gbnf", deep(MaxNesting-1))
	require.NoError(t, err)
	_, err = grammar.Compile(g)
	require.NoError(t, err)

	for _, n := range []int{MaxNesting + 1, 200000} {
		start := time.Now()
		_, err := Parse("deep.gbnf", deep(n))
		require.Error(t, err)
		assert.ErrorIs(t, err, grammar.ErrTooDeep)
		assert.Equal(t, "deep.gbnf:1:1010: parentheses nested more than 1000 deep (MaxNesting)", err.Error())
		assert.Less(t, time.Since(start), 5*time.Second)
	}
	// Repetitions nest too.
	_, err = Parse("t.gbnf", `root ::= "a"`+strings.Repeat("*", 200000))
	assert.ErrorIs(t, err, grammar.ErrTooDeep)
	assert.ErrorContains(t, err, "t.gbnf:1:1012: groups and repetitions nest more than 1000 deep")
	_, err = Parse("t.gbnf", `root ::= "a"`+strings.Repeat("*", MaxNesting-1))
	assert.NoError(t, err)
}

// TestLongRuleChain parses and compiles a chain of 20,000 rules, each
// using the next: no pass may recurse along it.
func TestLongRuleChain(t *testing.T) {
	var b strings.Builder
	b.WriteString("root ::= r0\n")
	const n = 20000
	for i := range n {
		fmt.Fprintf(&b, "r%d ::= \"a\" r%d\n", i, i+1)
	}
	fmt.Fprintf(&b, "r%d ::= \"z\"\n", n)
	g, err := Parse("chain.gbnf", b.String())
	require.NoError(t, err)
	_, err = grammar.Compile(g)
	require.NoError(t, err)
}

// TestFormatBytes checks that Format spells raw bytes that are UTF-8 as
// their characters, so that the formatted grammar matches the same text.
func TestFormatBytes(t *testing.T) {
	g := grammar.Choice("café", "日本")
	again, err := Parse("formatted", Format(g))
	require.NoError(t, err, Format(g))
	assert.Equal(t, "root ::= alt{lit{caf\\u00e9}|lit{\\u65e5\\u672c}}\n", again.String())
}

func TestUnusedRuleWarning(t *testing.T) {
	g, err := Parse("t.gbnf", "root ::= \"a\"\nspare ::= \"b\"")
	require.NoError(t, err)
	require.Len(t, g.Warnings, 1)
	assert.Equal(t, "t.gbnf:2:1: rule spare is never used", g.Warnings[0])
}

func FuzzParse(f *testing.F) {
	f.Add("root ::= \"a\" | b\nb ::= [a-z]{2,3} ( \"c\" | ) *")
	f.Add("root ::= [^\"\\\\] . <[3]> !<|x|> x\nx ::= x \"a\" | \"\"")
	if d := shared.Dir(); d != "" {
		files, _ := filepath.Glob(filepath.Join(d, "gbnf", "*.gbnf"))
		for _, p := range files {
			if src, err := os.ReadFile(p); err == nil {
				f.Add(string(src))
			}
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		g, err := Parse("fuzz", src)
		if err != nil {
			var e *grammar.Error
			if !errors.As(err, &e) || e.File != "fuzz" {
				t.Fatalf("error %T is not a *grammar.Error of the file: %v", err, err)
			}
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("%v", err)
			}
			return
		}
		again, err := Parse("formatted", Format(g))
		if err != nil {
			t.Fatalf("formatted grammar does not parse: %v\n%s", err, Format(g))
		}
		if g.String() != again.String() {
			t.Fatalf("parse → print → parse changed the tree:\n%s\n%s", g, again)
		}
		p, err := grammar.Compile(g)
		if err != nil {
			var e *grammar.Error
			if !errors.As(err, &e) || strings.Contains(err.Error(), "internal error") {
				t.Fatalf("compile error %T: %v", err, err)
			}
			return
		}
		ps := earley.NewParser(p)
		for i := 0; i < len(src) && i < 64; i++ {
			ps.Push(src[i])
		}
		_ = ps.Expected()
	})
}

// TestSourceBound: a source past MaxSourceBytes is refused before it is
// parsed, with its size and the limit.
func TestSourceBound(t *testing.T) {
	src := "root ::= " + strings.Repeat(`"a" `, MaxSourceBytes/4)
	_, err := Parse("big.gbnf", src)
	require.Error(t, err)
	assert.Equal(t, fmt.Sprintf("big.gbnf: grammar too large: %d bytes of source, more than the limit of %d (MaxSourceBytes)", len(src), MaxSourceBytes), err.Error())
	fits := "root ::= " + strings.Repeat(`"a" `, (MaxSourceBytes-9)/4)
	require.LessOrEqual(t, len(fits), MaxSourceBytes)
	_, err = Parse("ok.gbnf", fits)
	var ge *grammar.Error
	if errors.As(err, &ge) {
		assert.NotContains(t, ge.Msg, "MaxSourceBytes", "a source within the bound is parsed")
	}
}

// TestFormatEmptyTokenSet: a token node with no tokens, or built without
// its set (only the grammar API makes either, and Compile refuses both),
// formats without a panic as a terminal that Parse refuses, not as
// nothing, which would read back as another grammar ("a" {2,3}).
func TestFormatEmptyTokenSet(t *testing.T) {
	for _, tok := range []*grammar.Node{{Op: grammar.OpToken}, {Op: grammar.OpToken, Leaf: &grammar.Leaf{}}} {
		g := &grammar.Grammar{Start: "root", Rules: []grammar.Rule{{Name: "root", Body: grammar.Seq(grammar.Lit("a"), grammar.Repeat(tok, 2, 3))}}}
		text := Format(g)
		assert.Contains(t, text, "<[]>")
		_, err := Parse("formatted", text)
		assert.Error(t, err, text)
	}
}
