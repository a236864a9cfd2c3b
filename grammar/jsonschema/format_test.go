package jsonschema

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/grammar"
)

// sampleRegexp writes a random string of the language of re.
func sampleRegexp(r *rand.Rand, re *syntax.Regexp, b *strings.Builder) {
	repeat := func(min, max int) {
		if max < 0 {
			max = min + 3
		}
		for range min + r.IntN(max-min+1) {
			sampleRegexp(r, re.Sub[0], b)
		}
	}
	switch re.Op {
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
	case syntax.OpCharClass:
		i := 2 * r.IntN(len(re.Rune)/2)
		b.WriteRune(re.Rune[i] + rune(r.IntN(int(re.Rune[i+1]-re.Rune[i])+1)))
	case syntax.OpCapture:
		sampleRegexp(r, re.Sub[0], b)
	case syntax.OpConcat:
		for _, s := range re.Sub {
			sampleRegexp(r, s, b)
		}
	case syntax.OpAlternate:
		sampleRegexp(r, re.Sub[r.IntN(len(re.Sub))], b)
	case syntax.OpStar:
		repeat(0, -1)
	case syntax.OpPlus:
		repeat(1, -1)
	case syntax.OpQuest:
		repeat(0, 1)
	case syntax.OpRepeat:
		repeat(re.Min, re.Max)
	case syntax.OpEmptyMatch:
	default:
		panic("sampleRegexp: " + re.Op.String())
	}
}

// TestFormatsWithinValidator samples every compiled format and checks
// that the validator asserts each sample valid: the formats are narrower
// than the validator, never wider.
func TestFormatsWithinValidator(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for name, re := range formats {
		t.Run(name, func(t *testing.T) {
			v, err := NewValidator([]byte(`{"format": "`+name+`"}`), Options{})
			require.NoError(t, err)
			tree, err := syntax.Parse(re, syntax.Perl)
			require.NoError(t, err)
			for range 3000 {
				var b strings.Builder
				sampleRegexp(r, tree, &b)
				text, _ := json.Marshal(b.String())
				assert.NoError(t, v.Validate(text), "sample %s", text)
			}
		})
	}
}

// TestIPv6 checks the ipv6 format on the forms RFC 4291 lists.
func TestIPv6(t *testing.T) {
	schema := `{"type": "string", "format": "ipv6"}`
	g, err := Compile([]byte(schema), Options{})
	require.NoError(t, err)
	p, err := grammar.Compile(g)
	require.NoError(t, err)
	full := regexp.MustCompile(`^` + formats["ipv6"] + `$`)
	for _, s := range []string{"::", "::1", "1::", "fe80::1:2", "::ffff:1.2.3.4", "1:2:3:4:5:6:7:8",
		"1:2:3:4:5:6:1.2.3.4", "1::8", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "ABCD:ef01::", "1::2:3:4:5:6:7"} {
		require.NoError(t, Validate([]byte(schema), []byte(`"`+s+`"`)), "test case wrong: %s", s)
		assert.True(t, acceptsText(p, `"`+s+`"`), "valid %s refused", s)
		assert.True(t, full.MatchString(s), s)
	}
	for _, s := range []string{"", ":", ":::", "1::2::3", "12345::", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7",
		"::1.2.3", "::01.2.3.4", "g::", "1.2.3.4", "::1.2.3.4:1", "1:2:3:4:5:6:7:1.2.3.4"} {
		require.Error(t, Validate([]byte(schema), []byte(`"`+s+`"`)), "test case wrong: %s", s)
		assert.False(t, acceptsText(p, `"`+s+`"`), "invalid %s accepted", s)
	}
}

// TestFormatAnnotation checks Options.FormatAnnotation: the grammar and
// the validator both take format as an annotation, in every draft,
// while the keywords beside it still apply; by default both assert it.
func TestFormatAnnotation(t *testing.T) {
	cases := []struct {
		schema string
		// annotation lists instances valid with FormatAnnotation and
		// invalid by default; both lists those valid either way,
		// neither those invalid either way.
		annotation, both, neither []string
	}{
		{schema: `{"type": "string", "format": "email"}`, annotation: []string{`"2962"`}, both: []string{`"a@example.com"`}, neither: []string{`2962`}},
		{schema: `{"type": "string", "format": "date"}`, annotation: []string{`"06/19/1963"`, `"1963-02-30"`}, both: []string{`"1963-06-19"`}},
		{schema: `{"format": "ipv4"}`, annotation: []string{`"127.0.0.0.1"`}, both: []string{`"127.0.0.1"`, `12`, `{}`}},
		{schema: `{"type": "string", "format": "email", "pattern": "^[0-9a-z@.]+$"}`, annotation: []string{`"2962"`}, both: []string{`"a@example.com"`}, neither: []string{`"A@example.com"`, `"a b"`}},
		{schema: `{"type": "string", "format": "date", "maxLength": 10}`, annotation: []string{`"06/19/1963"`, `"1/2"`}, both: []string{`"1963-06-19"`}, neither: []string{`"06/19/19631"`, `"1963-06-19 "`}},
		{schema: `{"enum": ["2962", "a@example.com", 1], "format": "email"}`, annotation: []string{`"2962"`}, both: []string{`"a@example.com"`, `1`}, neither: []string{`"b@example.com"`}},
		{schema: `{"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}}, "required": ["when"]}`,
			annotation: []string{`{"when":"yesterday"}`}, both: []string{`{"when":"1963-06-19T08:30:06Z"}`}, neither: []string{`{}`, `{"when":1}`}},
	}
	for _, draft := range []string{"https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-04/schema#"} {
		for _, tc := range cases {
			schema := []byte(`{"$schema": "` + draft + `", ` + tc.schema[1:])
			for _, annotate := range []bool{false, true} {
				opts := Options{FormatAnnotation: annotate}
				g, err := Compile(schema, opts)
				require.NoError(t, err, "%s annotation %v", schema, annotate)
				p, err := grammar.Compile(g)
				require.NoError(t, err)
				v, err := NewValidator(schema, opts)
				require.NoError(t, err)
				check := func(instances []string, valid bool) {
					for _, x := range instances {
						assert.Equal(t, valid, v.Validate([]byte(x)) == nil, "validator, %s, annotation %v: %s", schema, annotate, x)
						assert.Equal(t, valid, acceptsText(p, x), "grammar, %s, annotation %v: %s", schema, annotate, x)
					}
				}
				check(tc.annotation, annotate)
				check(tc.both, true)
				check(tc.neither, false)
			}
		}
	}
	// A format reins cannot compile is refused by default and an
	// annotation with the option.
	schema := []byte(`{"type": "string", "format": "regex"}`)
	_, err := Compile(schema, Options{})
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "format", e.Keyword)
	g, err := Compile(schema, Options{FormatAnnotation: true})
	require.NoError(t, err)
	p, err := grammar.Compile(g)
	require.NoError(t, err)
	v, err := NewValidator(schema, Options{FormatAnnotation: true})
	require.NoError(t, err)
	assert.True(t, acceptsText(p, `"["`))
	assert.NoError(t, v.Validate([]byte(`"["`)))
}

// TestFormatDFAsShared: the formats' automata are built once and shared
// by every compilation; compiling schemas that intersect them with
// patterns, length bounds and excluded values leaves each as a fresh
// build of its expression, and a second compilation of a schema gives
// the same grammar as the first.
func TestFormatDFAsShared(t *testing.T) {
	for name := range formats {
		schema := `{"type": "string", "format": "` + name + `", "pattern": "1", "minLength": 3, "not": {"enum": ["11.1.1.1"]}}`
		_, first, err := CompileProg([]byte(schema), Options{})
		require.NoError(t, err, name)
		_, again, err := CompileProg([]byte(schema), Options{})
		require.NoError(t, err, name)
		assert.Equal(t, first.Inst, again.Inst, "%s: a second compilation differs", name)
		shared, err := builtFormats[name].dfa()
		require.NoError(t, err, name)
		fresh, err := regexDFA(formats[name], false)
		require.NoError(t, err, name)
		assert.Equal(t, fresh.String(), shared.String(), "%s: the shared automaton changed", name)
	}
}

// TestFormatGrammarsCopied: the formats' grammars are built once and
// shared, and each compilation takes a copy, so that a caller who
// changes the grammar it got back changes nothing for the next one.
func TestFormatGrammarsCopied(t *testing.T) {
	for name := range formats {
		schema := []byte(`{"type": "string", "format": "` + name + `"}`)
		g, first, err := CompileProg(schema, Options{})
		require.NoError(t, err, name)
		seen := map[*grammar.Node]bool{}
		var spoil func(n *grammar.Node)
		spoil = func(n *grammar.Node) {
			if seen[n] {
				return
			}
			seen[n] = true
			for _, s := range n.Subs {
				spoil(s)
			}
			for i := range n.Runes() {
				n.Runes()[i] = 'x'
			}
			for i := range n.Bytes() {
				n.Bytes()[i] = 'x'
			}
			if n.Op == grammar.OpRepeat {
				n.Min, n.Max = 7, 7
			}
		}
		for _, r := range g.Rules {
			spoil(r.Body)
		}
		_, again, err := CompileProg(schema, Options{})
		require.NoError(t, err, name)
		assert.Equal(t, first.Inst, again.Inst, "%s: a caller's change to its grammar reached the next compilation", name)
	}
}

// TestFormatCopiedOncePerCompile: a compile copies a format's grammar
// once, for the rule every string of that format shares, however many
// strings of it differ in bounds that do not cut it (each copy's nodes
// count toward maxGrammarNodes: a copy per string refused this).
func TestFormatCopiedOncePerCompile(t *testing.T) {
	var props []string
	for i := range 1000 {
		props = append(props, fmt.Sprintf(`"p%d": {"type": "string", "format": "ipv6", "maxLength": %d}`, i, 100+i))
	}
	_, _, err := CompileProg([]byte(`{"type": "object", "properties": {`+strings.Join(props, ", ")+`}}`), Options{})
	require.NoError(t, err)
}
