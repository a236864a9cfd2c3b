package earley

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/gbnf"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsonishGrammar is JSON with the string character as a rule of its
// own, strings of at most 5 characters as object keys, whitespace
// bounded, and single-quoted strings without x: calls, bounded
// repetitions and recursion all at once.
func jsonishGrammar() *grammar.Grammar {
	ws := grammar.Repeat(grammar.Class(' ', ' ', '\n', '\n'), 0, 3)
	str := grammar.Seq(grammar.Lit(`"`), grammar.Repeat(grammar.Ref("char"), 0, -1), grammar.Lit(`"`))
	key := grammar.Seq(grammar.Lit(`"`), grammar.Repeat(grammar.Ref("char"), 1, 5), grammar.Lit(`"`))
	member := grammar.Seq(key, ws, grammar.Lit(":"), ws, grammar.Ref("value"))
	return &grammar.Grammar{Start: "root", Rules: []grammar.Rule{
		{Name: "root", Body: grammar.Seq(ws, grammar.Ref("value"), ws)},
		{Name: "value", Body: grammar.Alt(grammar.Lit("null"), grammar.Repeat(grammar.Class('0', '9'), 1, -1), str,
			grammar.Seq(grammar.Lit("'"), grammar.Repeat(grammar.Class(' ', '&', '(', 'w', 'y', 0x10FFFF), 0, -1), grammar.Lit("'")), // no x
			grammar.Seq(grammar.Lit("{"), ws, grammar.Repeat(grammar.Seq(member, grammar.Repeat(grammar.Seq(ws, grammar.Lit(","), ws, member), 0, -1)), 0, 1), ws, grammar.Lit("}")),
			grammar.Seq(grammar.Lit("["), ws, grammar.Repeat(grammar.Seq(grammar.Ref("value"), grammar.Repeat(grammar.Seq(grammar.Lit(","), ws, grammar.Ref("value")), 0, -1)), 0, 1), grammar.Lit("]")))},
		{Name: "char", Body: grammar.Alt(grammar.Class(' ', '!', '#', '[', ']', 0x10FFFF), grammar.Seq(grammar.Lit(`\`), grammar.Class('"', '"', '\\', '\\', 'n', 'n')))},
	}}
}

// TestLocalDFAAgreesWithParser checks the local automaton against the
// parser it abstracts, from many steps of valid sentences: a text the
// automaton accepts without taint the parser accepts, a text it refuses
// without taint the parser refuses at the same byte, and the parser
// never accepts a byte the automaton refuses before any taint.
func TestLocalDFAAgreesWithParser(t *testing.T) {
	prog, err := grammar.Compile(jsonishGrammar())
	require.NoError(t, err)
	sentences := []string{
		`{"a": [1,2, "x\"y"], "bcd":{"e":null}}`,
		`["héllo", {"k":"v"}, [[]], 123]`,
		`"a long string with spaces"`,
	}
	alphabet := []byte(`{}[],:" \n0123456789abcdenul\` + "\xc3\xa9")
	rng := rand.New(rand.NewPCG(1, 2))
	d := NewLocalDFA(prog)
	for _, sent := range sentences {
		for cut := 0; cut <= len(sent); cut++ {
			ps := NewParser(prog)
			for i := 0; i < cut; i++ {
				require.True(t, ps.Push(sent[i]), "%q at %d", sent, i)
			}
			s0 := d.Start(ps)
			for range 40 {
				text := make([]byte, 1+rng.IntN(8))
				for i := range text {
					text[i] = alphabet[rng.IntN(len(alphabet))]
				}
				s, tainted := s0, false
				parserOK, depth := true, 0
				for i, b := range text {
					next, taint := d.Step(s, b)
					pushed := parserOK && ps.Push(b)
					if pushed {
						depth++
					}
					if !pushed && parserOK {
						parserOK = false
						require.True(t, next < 0 || tainted || taint, "%q then %q: parser refuses byte %d, the automaton does not", sent[:cut], text, i)
					}
					if next < 0 {
						if !tainted {
							require.False(t, pushed, "%q then %q: automaton refuses byte %d untainted, the parser accepts", sent[:cut], text, i)
						}
						break
					}
					tainted = tainted || taint
					s = next
				}
				ps.Pop(depth)
				require.Equal(t, cut, ps.Len())
			}
		}
	}
}

// plainASCII is the ASCII of JSON string text that needs no escape, as
// decode's slices use it: 0x20 to 0x7F but '"' and '\\'.
func plainASCII() [2]uint64 {
	var plain [2]uint64
	for c := 0x20; c < 0x80; c++ {
		if c != '"' && c != '\\' {
			plain[c/64] |= 1 << (c % 64)
		}
	}
	return plain
}

// TestAbsorbs checks plain-text absorption: true inside an unbounded
// string, and then any plain text is accepted by the parser; bounded to
// the room left in a bounded key; false where some plain text is refused.
func TestAbsorbs(t *testing.T) {
	prog, err := grammar.Compile(jsonishGrammar())
	require.NoError(t, err)
	plain := plainASCII()
	tests := []struct {
		prefix   string
		maxChars int
		want     bool
	}{
		{`"`, -1, true},           // inside a string
		{`"abc`, 16, true},        // still inside
		{`{"`, -1, false},         // a key holds at most 5 characters
		{`{"`, 5, true},           // but 5 fit
		{`{"ab`, 5, false},        // 3 left
		{`{"ab`, 3, true},         // exactly
		{`[`, -1, false},          // a value: letters are refused
		{`{"a":"x`, -1, true},     // a string value inside an object
		{`{"a":"x\`, -1, false},   // an escape takes only "\n
		{`["\u`, -1, false},       // not an escape this grammar knows: refused before
		{`{"a": 1`, -1, false},    // a number
		{`"é`, 8, true},           // after a multi-byte character
		{`"` + "\xc3", -1, false}, // inside one
		{`{"a":"b"}`, -1, false},  // after the end: only whitespace
		{`{"a":"bb", "c":"`, 8, true},
		{`'`, -1, false}, // x is refused in the middle of a range
		{`'abc`, 4, false},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	pool := []rune("ab ~{}é中\U0001F600,:")
	for _, tt := range tests {
		ps := NewParser(prog)
		ok := true
		for i := 0; i < len(tt.prefix) && ok; i++ {
			ok = ps.Push(tt.prefix[i])
		}
		if !ok { // the prefix itself is refused: nothing to absorb
			require.False(t, tt.want, tt.prefix)
			continue
		}
		d := NewLocalDFA(prog)
		got := d.Absorbs(d.Start(ps), plain, tt.maxChars)
		require.Equal(t, tt.want, got, "%q within %d", tt.prefix, tt.maxChars)
		if !got {
			continue
		}
		n := tt.maxChars
		if n < 0 {
			n = 30
		}
		for range 200 {
			text := make([]rune, 1+rng.IntN(n))
			for i := range text {
				text[i] = pool[rng.IntN(len(pool))]
			}
			b := []byte(string(text))
			require.True(t, utf8.Valid(b))
			pushed := 0
			for _, c := range b {
				if !ps.Push(c) {
					break
				}
				pushed++
			}
			ps.Pop(pushed)
			require.Equal(t, len(b), pushed, "%q then %q: absorbed, yet the parser refuses", tt.prefix, string(text))
		}
	}
}

// TestAbsorbsManyNames checks absorption at the start of a key that is
// one of 500 names or any other (a JSON object with many properties and
// additionalProperties): every plain text is a name's prefix or another
// key, so it is absorbed, which the proof finds after a step per prefix
// of the names, more than a thousand.
func TestAbsorbsManyNames(t *testing.T) {
	var src strings.Builder
	src.WriteString(`root ::= "\"" (`)
	rng := rand.New(rand.NewPCG(7, 8))
	for range 500 {
		name := make([]byte, 6)
		for i := range name {
			name[i] = byte('a' + rng.IntN(26))
		}
		fmt.Fprintf(&src, `"%s" | `, name)
	}
	src.WriteString(`[^"\\]*) "\""`)
	g, err := gbnf.Parse("t.gbnf", src.String())
	require.NoError(t, err)
	prog, err := grammar.Compile(g)
	require.NoError(t, err)
	ps := NewParser(prog)
	require.True(t, ps.Push('"'))
	d := NewLocalDFA(prog)
	assert.True(t, d.Absorbs(d.Start(ps), plainASCII(), -1))
	assert.Greater(t, d.States(), 1024, "states the proof took: one per prefix of the names")
	for range 100 { // and the parser does accept such text
		text := make([]byte, 1+rng.IntN(10))
		for i := range text {
			text[i] = byte('a' + rng.IntN(26))
		}
		for i, c := range text {
			require.True(t, ps.Push(c), "%q refused at %d", text, i)
		}
		ps.Pop(len(text))
	}
}

// TestAbsorbsRemembers checks that what one DFA remembers of earlier
// Absorbs calls (states proven to absorb any text) changes no answer:
// many states, asked in random order of one automaton, answer as each
// does alone in a fresh one.
func TestAbsorbsRemembers(t *testing.T) {
	prog, err := grammar.Compile(jsonishGrammar())
	require.NoError(t, err)
	plain := plainASCII()
	sentences := []string{`{"a": "xyz", "bcd": ["p q", {"e": "héllo"}]}`, `["a b c d e f", 'no ecks', "\n"]`}
	type query struct {
		prefix   string
		maxChars int
	}
	var queries []query
	for _, s := range sentences {
		for cut := range len(s) + 1 {
			for _, n := range []int{-1, 16, 3} {
				queries = append(queries, query{s[:cut], n})
			}
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	rng.Shuffle(len(queries), func(i, j int) { queries[i], queries[j] = queries[j], queries[i] })
	shared := NewLocalDFA(prog)
	trues := 0
	for _, q := range queries {
		ps := NewParser(prog)
		for i := 0; i < len(q.prefix); i++ {
			require.True(t, ps.Push(q.prefix[i]))
		}
		fresh := NewLocalDFA(prog)
		want := fresh.Absorbs(fresh.Start(ps), plain, q.maxChars)
		got, refused := shared.AbsorbsOrRefuses(shared.Start(ps), plain, q.maxChars)
		assert.Equal(t, want, got, "%q within %d", q.prefix, q.maxChars)
		if refused > 0 {
			// Some text of that many characters is refused: no bound from
			// there on is absorbed, and a bound just below may be.
			for _, n := range []int{refused, refused + 7, -1} {
				fresh := NewLocalDFA(prog)
				assert.False(t, fresh.Absorbs(fresh.Start(ps), plain, n), "%q: refused at %d, yet absorbs %d", q.prefix, refused, n)
			}
		}
		if want {
			trues++
		}
	}
	assert.Positive(t, trues)
}

// TestAbsorbsOrRefusesLength checks the length reported with a refusal
// on a bounded key: after `{"ab` three more characters fit, a fourth is
// refused.
func TestAbsorbsOrRefusesLength(t *testing.T) {
	prog, err := grammar.Compile(jsonishGrammar())
	require.NoError(t, err)
	plain := plainASCII()
	ps := NewParser(prog)
	for _, b := range []byte(`{"ab`) {
		require.True(t, ps.Push(b))
	}
	d := NewLocalDFA(prog)
	ok, refused := d.AbsorbsOrRefuses(d.Start(ps), plain, -1)
	assert.False(t, ok)
	assert.Equal(t, 4, refused)
	ok, refused = d.AbsorbsOrRefuses(d.Start(ps), plain, 3)
	assert.True(t, ok)
	assert.Zero(t, refused)
}
