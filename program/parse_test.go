package program

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseCases are templates and the dump of what they parse to. They
// seed the fuzzer too.
var parseCases = []struct{ src, dump string }{
	{"Hello", `text{"Hello"}` + "\n"},
	{`Q: {{gen "a" regex="[0-9]+" max_tokens=8 temperature=0.7}}!{{gen "b" stop="\n"}}`,
		`text{"Q: "}` + "\n" + `gen{a regex="[0-9]+" max_tokens=8 temperature=0.7}` + "\n" + `text{"!"}` + "\n" + `gen{b stop="\n"}` + "\n"},
	{`{{select "s" options=["yes", "no", "maybe",]}}`, `select{s ["yes" "no" "maybe"]}` + "\n"},
	{`{{gen "j" json=true}}{{gen "f" json=false top_k=3 top_p=0.9 min_p=0.05}}`, "gen{j json=true}\ngen{f top_k=3 top_p=0.9 min_p=0.05}\n"},
	{`a{{x}}b`, "text{\"a\"}\nvar{x}\ntext{\"b\"}\n"},
	{`{{"{{"}} and { single`, `text{"{{ and { single"}` + "\n"},
	{"{{! a comment }}\nText\n", `text{"Text\n"}` + "\n"},
	{"{{!-- a }} comment --}}x", `text{"x"}` + "\n"},
	{`{{gen "s" stop=["\n", "END"]}}`, `gen{s stop="\n" stop="END"}` + "\n"},
	{"{{#each items}}\n- {{this}} ({{@index}}): {{gen \"x\" regex=\"[a-z]+\"}}\n{{/each}}\n",
		`each{items text{"- "} var{this} text{" ("} var{@index} text{"): "} gen{x regex="[a-z]+"} text{"\n"}}` + "\n"},
	{"{{#system}}\nBe brief.\n{{/system}}\n{{#user}}Hi{{/user}}\n{{#assistant}}{{gen \"a\" max_tokens=4}}{{/assistant}}\n",
		"role{system text{\"Be brief.\"}}\nrole{user text{\"Hi\"}}\nrole{assistant gen{a max_tokens=4}}\n"},
	{"{ }{x", `text{"{ }{x"}` + "\n"},
	{"", ""},
}

func TestParse(t *testing.T) {
	for _, c := range parseCases {
		p, err := Parse("t", c.src, nil)
		require.NoError(t, err, "%q", c.src)
		assert.Equal(t, c.dump, p.String(), "%q", c.src)
		// Format writes a template that parses to the same program.
		out, err := Format(p.Nodes())
		require.NoError(t, err)
		q, err := Parse("t", out, nil)
		require.NoError(t, err, "formatted: %q", out)
		assert.Equal(t, p.String(), q.String(), "formatted: %q", out)
	}
}

// TestParseErrors: each mistake is an *Error of its kind, at the
// position of the mistake.
func TestParseErrors(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ok.gbnf"), []byte(`root ::= "a"`), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	outside := filepath.Join(t.TempDir(), "secret.json")
	require.NoError(t, os.WriteFile(outside, []byte(`{}`), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link.json")))
	cases := []struct {
		src  string
		kind ErrorKind
		pos  string // line:col
		msg  string
	}{
		{`x {{gen "a" regex="a" schema="s.json"}}`, KindArgument, "1:23", `gen "a" has two constraints: regex (at t:1:13) and schema`},
		{"x\n{{!-- never closed", KindSyntax, "2:1", "a comment is not closed ({{!-- wants --}})"},
		{"{{!-- }} {{!-- }}", KindSyntax, "1:1", "a comment is not closed ({{!-- wants --}})"},
		{`{{gen "a" stop="abc}}`, KindSyntax, "1:16", "a string is not closed"},
		{`{{gen "a" {{gen "b"}}`, KindSyntax, "1:11", "a tag is not closed before the next one begins"},
		{`{{gen "a" max_tokens=2 ~}}`, KindSyntax, "1:24", `'~' cannot appear inside a tag`},
		{`{{gen "a" json=true regex="a"}}`, KindArgument, "1:21", "two constraints"},
		{"\n  {{select \"s\" options=[]}}", KindArgument, "2:24", `select "s" has no options`},
		{`{{select "s"}}`, KindArgument, "1:1", `select "s" has no options`},
		{`{{select "s" options=["a", "b", "a"]}}`, KindArgument, "1:22", `option 3 "a" repeats option 1`},
		{`{{select "s" options=["a", ""]}}`, KindArgument, "1:22", "option 2 is empty"},
		{`{{gen "a" schema="missing.json"}}`, KindFile, "1:18", `schema file "missing.json": no such file`},
		{`{{gen "a" grammar="../ok.gbnf"}}`, KindFile, "1:19", "inside the template's folder"},
		{`{{gen "a" grammar="/etc/passwd"}}`, KindFile, "1:19", "inside the template's folder"},
		{`{{gen "a" schema="link.json"}}`, KindFile, "1:18", "link.json"},
		{`{{gen "a" grammar="sub"}}`, KindFile, "1:19", "not a regular file"},
		{`{{gen "a" regex="("}}`, KindConstraint, "1:17", `gen "a": regex`},
		{`{{gen "a" stop="x" regex="a"}}`, KindArgument, "1:1", "both a constraint"},
		{`{{gen "a" max_tokens=0}}`, KindArgument, "1:22", "max_tokens=0"},
		{`{{gen "a" temperature=-1}}`, KindArgument, "1:23", "temperature=-1"},
		{`{{gen "a" regx="a"}}`, KindArgument, "1:11", `gen has no argument "regx"`},
		{`{{gen "a" max_tokens=3 max_tokens=4}}`, KindArgument, "1:24", "repeats max_tokens"},
		{`{{gen a}}`, KindSyntax, "1:1", "capture's name as a quoted string"},
		{`{{gen "1a"}}`, KindName, "1:7", `capture name "1a"`},
		{`{{gen "a"}} {{gen "a"}}`, KindName, "1:13", `capture "a" is already captured at t:1:1`},
		{"ab\n{{gen \"a\"", KindSyntax, "2:10", "ends inside a tag"},
		{"{{#each}}{{/each}}", KindSyntax, "1:1", "name of a list variable"},
		{"{{#each xs}}", KindSyntax, "1:1", "never closed"},
		{"{{#user}}{{/each}}", KindSyntax, "1:10", "does not close {{#user}} (opened at t:1:1)"},
		{"{{/user}}", KindSyntax, "1:1", "closes no block"},
		{"{{#foo}}{{/foo}}", KindSyntax, "1:1", "unknown block"},
		{"{{#user}}{{#assistant}}x{{/assistant}}{{/user}}", KindSyntax, "1:10", "roles do not nest"},
		{"hello {{#user}}x{{/user}}", KindSyntax, "1:1", "outside a role block"},
		{"{{foo bar=1}}", KindSyntax, "1:1", `unknown tag "foo"`},
		{`{{"a\q"}}`, KindSyntax, "1:1", "bad string"},
		{"a \xff b", KindSyntax, "1:3", "not valid UTF-8"},
	}
	for _, c := range cases {
		_, err := Parse("t", c.src, &ParseOptions{Dir: dir})
		var pe *Error
		require.True(t, errors.As(err, &pe), "%q: %v", c.src, err)
		assert.Equal(t, c.kind, pe.Kind, "%q: %v", c.src, err)
		assert.Equal(t, "t:"+c.pos, pe.Pos.String(), "%q: %v", c.src, err)
		assert.Contains(t, err.Error(), c.msg, "%q", c.src)
	}
}

func TestParseFileReadsBesideTheTemplate(t *testing.T) {
	p, err := ParseFile(filepath.Join("..", "testdata", "programs", "quiz.tmpl"))
	require.NoError(t, err)
	assert.Contains(t, p.String(), `gen{summary schema="summary.schema.json"}`)
	assert.NotContains(t, p.String(), "comment", "the standalone comment line is gone")
	_, err = Parse("s", `{{gen "a" schema="x.json"}}`, nil)
	assert.ErrorContains(t, err, "reads no files")
}

func TestBuilderErrorsNameTheNode(t *testing.T) {
	b := NewBuilder().Text("a").Select("s")
	_, err := b.Program()
	var pe *Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "builder: node 2", pe.Pos.String())
	assert.Equal(t, KindArgument, pe.Kind)

	_, err = NewBuilder().Gen("g", GenOptions{Regex: "a", JSON: true}).Program()
	assert.ErrorContains(t, err, "2 constraints (regex, json)")

	p, err := NewBuilder().Role("user", func(b *Builder) { b.Text("Hi") }).
		Role("assistant", func(b *Builder) { b.Gen("a", GenOptions{MaxTokens: 3}) }).Program()
	require.NoError(t, err)
	assert.Equal(t, "role{user text{\"Hi\"}}\nrole{assistant gen{a max_tokens=3}}\n", p.String())
	assert.True(t, p.Roles())
}

func TestTemplateBounds(t *testing.T) {
	_, err := Parse("t", strings.Repeat("x", MaxTemplateBytes+1), nil)
	var pe *Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, KindLimit, pe.Kind)
	_, err = Parse("t", strings.Repeat("{{#each x}}", MaxNesting+1), nil)
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, KindLimit, pe.Kind)
	var b strings.Builder
	for i := range MaxHoles + 1 {
		b.WriteString(`{{gen "g` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + "_" + itoa(i) + `" max_tokens=1}}`)
	}
	_, err = Parse("t", b.String(), nil)
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, KindLimit, pe.Kind, "%v", err)
}

// TestPrescan: lists nested past MaxNesting in a tag are refused at the
// bracket that passes it, before the parser (which recurses once per
// list, and overflowed the Go stack at 200,000), and brackets in text,
// comments and strings do not count; a {{!-- nothing closes is refused
// before the lexer searches for its close again and again.
func TestPrescan(t *testing.T) {
	deep := func(n int) string {
		return "x\n {{select \"s\" options=[" + strings.Repeat("[", n) + strings.Repeat("]", n) + "]}}"
	}
	var pe *Error
	_, err := Parse("t", deep(200_000), nil)
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, KindLimit, pe.Kind)
	assert.EqualError(t, err, "t:2:39: lists nest deeper than MaxNesting (16)")
	_, err = Parse("t", deep(MaxNesting-1), nil)
	require.ErrorAs(t, err, &pe)
	assert.NotEqual(t, KindLimit, pe.Kind, "within the bound, the parser's own verdict: %v", err)
	many := strings.Repeat("[", 100)
	_, err = Parse("t", many+`{{!-- `+many+` --}}{{! `+many+` }}{{"`+many+`"}}{{gen "g" stop=["`+many+`"] max_tokens=2}}`, nil)
	require.NoError(t, err)
	off, _, _ := prescan(`{{! [[[[[[[[[[[[[[[[[[ }} {{"\"[[[[[[[[[[[[[[[[[["}}`)
	assert.Equal(t, -1, off)
	// A {{!-- that nothing closes: the lexer looked for --}} to the end at
	// each, a megabyte of them half an hour; refused at the first.
	_, err = Parse("t", strings.Repeat("{{!-- }}", MaxTemplateBytes/8), nil)
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "t:1:1", pe.Pos.String())
	_, err = Parse("t", "{{! short }} {{!-- long --}} {{!-- }} closed later --}}", nil)
	assert.NoError(t, err)
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var s []byte
	for ; i > 0; i /= 10 {
		s = append([]byte{byte('0' + i%10)}, s...)
	}
	return string(s)
}

// FuzzParse: no template panics the parser; one that parses formats to
// a template that parses to the same program; every error is an *Error.
func FuzzParse(f *testing.F) {
	for _, c := range parseCases {
		f.Add(c.src)
	}
	f.Add(`{{gen "a" regex="[0-9]{1,3}" stop=["x"]}}{{#each l}}{{#user}}{{this}}{{/user}}{{/each}}`)
	f.Add(`{{select "s" options=[` + strings.Repeat("[", 40) + `]}}`)
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Parse("f", src, nil)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("%q: error %T is not an *Error: %v", src, err, err)
			}
			return
		}
		out, err := Format(p.Nodes())
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		q, err := Parse("f", out, nil)
		if err != nil {
			t.Fatalf("%q formats to %q, which does not parse: %v", src, out, err)
		}
		if p.String() != q.String() {
			t.Fatalf("%q formats to %q:\n%s\nparses to\n%s", src, out, p, q)
		}
	})
}
