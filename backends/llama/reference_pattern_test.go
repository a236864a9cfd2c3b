package llama

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ollama/ollama/llama"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/internal/fixture"
	"github.com/reins-go/reins/internal/shared"
)

// childPatternEnv makes the test binary a child that hands a schema of
// one string with this pattern straight to llama.cpp's
// json_schema_to_grammar, with no Go check.
const childPatternEnv = "REINS_LLAMA_CHILD_PATTERN"

func childPatternMain(pattern string) int {
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{}) // no core files
	schema, err := json.Marshal(map[string]string{"type": "string", "pattern": pattern})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	llama.SchemaToGrammar(schema)
	return 0
}

// patternCases are patterns with what llama.cpp's json_schema_to_grammar
// does on them: "" returns (a grammar or an error), "crash" kills the
// process, "hang" never returns.
var patternCases = []struct{ pattern, fails string }{
	{`^a{2}$`, ""},
	{`^\S+$`, ""},
	{`^(a)+$`, ""},
	{`^$`, ""},
	{`(?:a)`, ""},            // not anchored: refused unread
	{`^a|*$`, ""},            // '*' repeats the '|'
	{`^({x}a)$`, ""},         // a count stoi cannot read ends the group early
	{`^{x}$`, ""},            // the same at the top
	{`^{99999999999}a$`, ""}, // out of int's range: the conversion throws
	{`^a{1,2,3}$`, ""},       // three numbers: an error, after "a"
	{`^[\]]$`, ""},
	{`^\]\}$`, ""},
	{`^ {2}$`, ""},
	{`^a{ 3}$`, ""},
	{`^(?:a)$`, "crash"},
	{`^\d{1,15}(?:\.\d{1,5})?$`, "crash"}, // from MaskBench's Github_ultra o21135
	{`^*a$`, "crash"},
	{`^a(*b)$`, "crash"},
	{`^{2}a$`, "crash"},
	{`^{,}a$`, "crash"},
	{`^a(+)$`, "crash"},
	{`^a]$`, "hang"},
	{`^a}$`, "hang"},
	{`^[]]$`, "hang"},
	{"^" + strings.Repeat("(", MaxReferenceNesting) + "a" + strings.Repeat(")", MaxReferenceNesting) + "$", ""},
	{"^" + strings.Repeat("(", 30_000) + "a" + strings.Repeat(")", 30_000) + "$", "crash"},
}

// TestReferencePatternFaultsAgreeWithLlamaCpp runs llama.cpp's converter
// on each pattern in a child process, and checks that it crashes or
// hangs exactly where referencePatternFault says it would.
func TestReferencePatternFaultsAgreeWithLlamaCpp(t *testing.T) {
	for i, c := range patternCases {
		name := fmt.Sprintf("%d:%.24s", i, c.pattern)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := referencePatternFault(c.pattern)
			if c.fails == "" {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
			// A child that returns does so in milliseconds; one that hangs
			// spins until killed, so it is killed soon.
			limit := time.Minute
			if c.fails == "hang" {
				limit = 2 * time.Second
			}
			r := runChildWithin(t, limit, childPatternEnv+"="+c.pattern)
			switch c.fails {
			case "":
				assert.False(t, r.crashed(), "llama.cpp: %v\n%s", r, r.output)
			case "crash":
				assert.NotZero(t, r.signal, "llama.cpp: %v", r)
			case "hang":
				assert.True(t, r.timedOut, "llama.cpp: %v", r)
			}
		})
	}
}

// TestSchemaToGrammarRefusesPatternFaults: a schema with a pattern
// llama.cpp's converter would crash on is refused with an error naming
// the pattern by JSON pointer, and the first such schema MaskBench met
// no longer takes the process down.
func TestSchemaToGrammarRefusesPatternFaults(t *testing.T) {
	_, err := SchemaToGrammar([]byte(`{"type":"object","properties":{"b":{"type":"string","pattern":"^b$"},"a/~":{"anyOf":[{"type":"string"},{"type":"string","pattern":"^x(?:y)$"}]}}}`))
	assert.EqualError(t, err, `llama.cpp's json_schema_to_grammar cannot take the schema at /properties/a~1~0/anyOf/1/pattern "^x(?:y)$": '?' repeats nothing (llama.cpp's scanner reads past an empty sequence and crashes), at "?:y)$"`)
	_, err = SchemaToGrammar([]byte(`{"type":"string","pattern":"^[a-z]]$"}`))
	assert.ErrorContains(t, err, `a lone ']' (llama.cpp's scanner never moves past it), at "]$"`)
	g, err := SchemaToGrammar([]byte(`{"type":"string","pattern":"^(a|b)+[c-d]{2,3}$"}`))
	require.NoError(t, err)
	assert.Contains(t, g, "root ::=")
	// llama.cpp's JSON parser skips a byte order mark, Go's refuses it:
	// the check skips it too, and refuses what it cannot read.
	bom := "\xEF\xBB\xBF"
	_, err = SchemaToGrammar([]byte(bom + `{"type":"string","pattern":"^(?:a)$"}`))
	assert.ErrorContains(t, err, `schema at /pattern "^(?:a)$": '?' repeats nothing`)
	g, err = SchemaToGrammar([]byte(bom + `{"type":"string","pattern":"^a$"}`))
	require.NoError(t, err)
	assert.Contains(t, g, "root ::=")
	_, err = SchemaToGrammar([]byte(`{"pattern":"^(?:a)$"} trailing`))
	assert.ErrorContains(t, err, "'?' repeats nothing", "the first value is checked")
	_, err = SchemaToGrammar([]byte(`{"type":"string",`))
	assert.ErrorContains(t, err, "cannot take the schema: not JSON whose patterns reins can check: unexpected EOF")

	data, err := os.ReadFile(shared.Path(t, "maskbench-dev/Github_ultra---o21135.json"))
	require.NoError(t, err)
	var file struct{ Schema json.RawMessage }
	require.NoError(t, json.Unmarshal(data, &file))
	_, err = SchemaToGrammar(file.Schema)
	assert.ErrorContains(t, err, `schema at /properties/deprovisioningTime/pattern "^(?:\\S+\\s+){0,19}\\S+$": '?' repeats nothing`)
}

// FuzzReferencePattern hands llama.cpp's converter every pattern
// referencePatternFault passes; the fuzzer reports a crash, and a
// conversion that does not return within ten seconds fails.
//
//	go test ./backends/llama -run '^$' -fuzz FuzzReferencePattern -fuzztime 5m
func FuzzReferencePattern(f *testing.F) {
	for _, c := range patternCases {
		if len(c.pattern) < 1000 {
			f.Add(c.pattern)
		}
	}
	f.Fuzz(func(t *testing.T, pattern string) {
		if referencePatternFault(pattern) != nil {
			return
		}
		schema, err := json.Marshal(map[string]string{"type": "string", "pattern": pattern})
		require.NoError(t, err)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = SchemaToGrammar(schema)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("llama.cpp's converter did not return on %q", pattern)
		}
	})
}

// FuzzReferenceSchema hands llama.cpp's converter and grammar engine
// every schema SchemaToGrammar passes, and computes one mask: the
// fuzzer reports a crash, and a conversion or mask that does not
// return within ten seconds fails.
//
//	go test ./backends/llama -run '^$' -fuzz FuzzReferenceSchema -fuzztime 5m
func FuzzReferenceSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","pattern":"^[a-z]{2,5}$"},"b":{"type":"integer","minimum":-5,"maximum":1000}},"required":["a"]}`,
		`{"type":"array","items":{"enum":["x",1,null,true]},"minItems":1,"maxItems":3}`,
		`{"anyOf":[{"type":"number","exclusiveMinimum":0},{"type":"string","format":"date-time"}]}`,
		`{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`,
		`{"type":"object","additionalProperties":{"type":"boolean"},"minProperties":1}`,
		`{"type":"string","minLength":3,"maxLength":7}`,
		`{"const":{"a":[1,2,{"b":"c"}]}}`,
	} {
		f.Add([]byte(s))
	}
	r := NewReferenceVocab(fixture.New().Vocab())
	mask := make([]uint32, (r.n+31)/32)
	f.Fuzz(func(t *testing.T, schema []byte) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			src, err := SchemaToGrammar(schema)
			if err != nil {
				return
			}
			g, err := r.Grammar(src)
			if err != nil {
				return
			}
			g.FillMask(mask)
			g.Close()
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("llama.cpp did not return on %q", schema)
		}
	})
}
