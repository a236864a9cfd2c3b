package jsonschema

import (
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dfaPatterns are patterns of patternProperties and pattern as schemas
// write them.
var dfaPatterns = []string{
	`^[a-z]+$`, `.*`, `^.*$`, `^x-`, `b$`, `^\d+$`, `[0-9a-fA-F]+`, `^(consumer_(key|secret)|access_token_(key|secret))$`,
	`^[a-zA-Z0-9*_-]+$`, `^/`, `^[^/]`, `^$`, `a|^b|c$`, `(?i)^ab`, `^\S+$`, `\s`, `^[\w\.\d\_]+$`, `^(?:\S+\s+){0,3}\S+$`,
	`^é+`, `^.{2,4}$`, `x*`, `^(a|ab)(c|bcd)(d*)$`, `[\x{10000}-\x{10FFFF}]`, `^[A-Z]{2}$`,
}

// dfaKeys are keys to try the automata on.
var dfaKeys = []string{"", "a", "ab", "abc", "x-", "x-y", "X-", "b", "ab\n", "\n", "12", "1a", "ff", "zz", "/a", "a/", "consumer_key",
	"access_token_secret", "a b", "a  b c d e", "é", "éé", "AB", "Ab", "aB", "\U0001F600", "ac", "abcd", "abbcdd", "a\tb", "\x00", "\"", "\\"}

// TestRegexDFA checks regexDFA, in a search and in whole-string matching,
// against Go's regexp (the validator's reading) on the keys, complete and
// minimized too.
func TestRegexDFA(t *testing.T) {
	for _, pat := range dfaPatterns {
		for _, search := range []bool{true, false} {
			d, err := regexDFA(pat, search)
			require.NoError(t, err, pat)
			full := "^(?:" + pat + ")$"
			if search {
				full = pat
			}
			re := regexp.MustCompile(full)
			for _, variant := range []*dfa{d, d.complete(), d.minimize(), d.complete().minimize()} {
				for _, k := range dfaKeys {
					assert.Equal(t, re.MatchString(k), variant.matchString(k) != 0, "pattern %q (search %v) on %q", pat, search, k)
				}
			}
		}
	}
}

// TestRegexDFARefusals checks what the automata cannot do.
func TestRegexDFARefusals(t *testing.T) {
	for _, pat := range []string{`\bx`, `(?m)^a$`, `a\B`} {
		_, err := regexDFA(pat, true)
		assert.Error(t, err, pat)
	}
	_, err := regexDFA(strings.Repeat(`[ab]`, 20)+`a[ab]{12}`, true) // 2^13 states to remember
	assert.ErrorIs(t, err, errDFATooLarge)
}

// TestProductRegions checks a product's labels: the keys of each region
// (which patterns match, not a listed name).
func TestProductRegions(t *testing.T) {
	pats := []string{`^a`, `b$`}
	names := []string{"ab", "a"}
	var comps []*dfa
	for _, p := range pats {
		d, err := regexDFA(p, true)
		require.NoError(t, err)
		comps = append(comps, d.complete())
	}
	listed := namesDFA(names).complete()
	comps = append(comps, listed)
	d, err := product(comps, func(tu []int32) int32 {
		if listed.label[tu[2]] != 0 {
			return 0
		}
		return 1 + comps[0].label[tu[0]] + 2*comps[1].label[tu[1]]
	})
	require.NoError(t, err)
	d = d.minimize()
	for _, k := range dfaKeys {
		want := int32(1)
		if strings.HasPrefix(k, "a") {
			want++
		}
		if strings.HasSuffix(k, "b") {
			want += 2
		}
		if k == "ab" || k == "a" {
			want = 0
		}
		assert.Equal(t, want, d.matchString(k), "%q", k)
	}
}

// FuzzKeyDFA checks the key automaton (a pattern's search DFA, its
// completion, its minimization, and its complement as patternProperties
// uses it) against Go's regexp on random keys.
func FuzzKeyDFA(f *testing.F) {
	for i, p := range dfaPatterns {
		f.Add(p, dfaKeys[i%len(dfaKeys)])
	}
	f.Fuzz(func(t *testing.T, pat, key string) {
		re, err := regexp.Compile(pat)
		if err != nil || !utf8.ValidString(key) {
			return
		}
		d, err := regexDFA(pat, true)
		if err != nil {
			return // refused: word boundaries, too many states
		}
		want := re.MatchString(key)
		c := d.complete()
		comp, err := product([]*dfa{c}, func(tu []int32) int32 {
			if c.label[tu[0]] == 0 {
				return 1
			}
			return 0
		})
		if err != nil {
			return
		}
		for _, x := range []*dfa{d, c, comp} {
			if x.size() > 300 {
				continue // Moore's refinement is quadratic
			}
			if got, want := x.minimize().size(), mooreSize(x); got != want {
				t.Fatalf("pattern %q: minimize kept %d states, Moore's refinement %d", pat, got, want)
			}
		}
		for name, got := range map[string]bool{
			"dfa": d.matchString(key) != 0, "complete": c.matchString(key) != 0,
			"minimized": d.minimize().matchString(key) != 0, "complement": comp.minimize().matchString(key) == 0,
		} {
			if got != want {
				t.Fatalf("pattern %q on %q: %s says %v, regexp %v", pat, key, name, got, want)
			}
		}
	})
}

// mooreSize is the number of states of d's minimal automaton without its
// dead state (but for the start, kept even when dead), by Moore's refinement: the reference minimize's Hopcroft
// refinement is checked against.
func mooreSize(d *dfa) int {
	n := d.size()
	var bounds []rune
	for _, es := range d.edges {
		for _, e := range es {
			bounds = append(bounds, e.lo, e.hi+1)
		}
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	target := func(q int, r rune) int { // n: the dead state
		if q < n {
			for _, e := range d.edges[q] {
				if e.lo <= r && r <= e.hi {
					return int(e.to)
				}
			}
		}
		return n
	}
	block := make([]int, n+1)
	for q := range n {
		block[q] = int(d.label[q]) // the dead state, block[n], is unlabelled: 0
	}
	for count := -1; ; {
		ids := map[string]int{}
		next := make([]int, n+1)
		for q := range n + 1 {
			sig := fmt.Sprint(block[q])
			for i := 0; i+1 < len(bounds); i++ {
				sig += "," + fmt.Sprint(block[target(q, bounds[i])])
			}
			id, ok := ids[sig]
			if !ok {
				id = len(ids)
				ids[sig] = id
			}
			next[q] = id
		}
		block = next
		if len(ids) == count {
			if block[0] == block[n] {
				return count // the start stays, as the only dead state kept
			}
			return count - 1 // the dead state's block left out
		}
		count = len(ids)
	}
}

// TestRegexDFARefusesSpelledOutPatterns: a short pattern whose counted
// repetitions spell out far more characters than a DFA of maxDFAStates
// could hold is refused before syntax.Compile spells them out.
func TestRegexDFARefusesSpelledOutPatterns(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := regexDFA(strings.Repeat(`\pL{1000}`, 1800), true)
	runtime.ReadMemStats(&after)
	assert.ErrorIs(t, err, errDFATooLarge)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(48<<20), "allocated %d MB (syntax.Parse itself takes about 23: each \\pL is 5 KB of ranges)", (after.TotalAlloc-before.TotalAlloc)>>20)
}

// TestPatternRepetitionsAreNotCopied: a string pattern whose counted
// repetitions share one part (regex.Lower lowers it once) is encoded in
// JSON once too, and a pattern no program could hold is refused as a
// limit; both in a few MB, where the JSON
// encoding had copied \pL's classes to gigabytes.
func TestPatternRepetitionsAreNotCopied(t *testing.T) {
	for _, c := range []struct {
		pattern string
		ok      bool
	}{
		{"^(?:" + strings.Repeat(`\\pL{1000}`, 20) + ")$", false},
		{`^(?:[a-zé]{30}){30}$`, true},
		{"^(?:" + strings.Repeat(`\\pL{1000}`, 1200) + ")$", false},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Compile([]byte(`{"type": "string", "pattern": "`+c.pattern+`"}`), Options{})
		runtime.ReadMemStats(&after)
		if c.ok {
			assert.NoError(t, err)
		} else {
			var e *Error
			require.ErrorAs(t, err, &e, "%.30s…", c.pattern)
			assert.Equal(t, limitGrammar, e.Limit, "%v", err)
		}
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "%.30s… allocated %d MB", c.pattern, (after.TotalAlloc-before.TotalAlloc)>>20)
	}
	// Where the validator's metaschema checks the schema (draft 2019-09,
	// or a $schema reins does not know), in an unused definition, and as
	// a patternProperties key (whose error does not quote it).
	huge := "^(?:" + strings.Repeat(`\\pL{1000}`, 1200) + ")$"
	for _, schema := range []string{
		`{"$schema": "https://json-schema.org/draft/2019-09/schema", "$defs": {"x": {"type": "string", "pattern": "` + huge + `"}}, "type": "string"}`,
		`{"$schema": "https://example.com/my-draft", "$defs": {"x": {"pattern": "` + huge + `"}}, "type": "string"}`,
		`{"type": "object", "patternProperties": {"` + huge + `": {}}}`,
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Compile([]byte(schema), Options{})
		runtime.ReadMemStats(&after)
		var e *Error
		require.ErrorAs(t, err, &e, "%.60s…", schema)
		assert.Equal(t, limitGrammar, e.Limit, "%.300v", err)
		assert.Less(t, len(err.Error()), 300, "the error does not quote the pattern")
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "%.60s… allocated %d MB", schema, (after.TotalAlloc-before.TotalAlloc)>>20)
	}
}
