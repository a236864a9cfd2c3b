package gbnf

import (
	"os"
	"path/filepath"
	"testing"

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
		{"root ::= \"\\uD800\"", "not a Unicode scalar value"},
		{"", "no rules"},
		{"root ::= x\nx ::= \"a\" x", "matches no string"},
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
			return
		}
		again, err := Parse("formatted", Format(g))
		if err != nil {
			t.Fatalf("formatted grammar does not parse: %v\n%s", err, Format(g))
		}
		if g.String() != again.String() {
			t.Fatalf("parse → print → parse changed the tree:\n%s\n%s", g, again)
		}
		if p, err := grammar.Compile(g); err == nil {
			ps := earley.NewParser(p)
			for i := 0; i < len(src) && i < 64; i++ {
				ps.Push(src[i])
			}
		}
	})
}
