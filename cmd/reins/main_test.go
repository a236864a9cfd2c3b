package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/grammar/jsonschema"
	"github.com/reins-go/reins/internal/fixture"
	"github.com/reins-go/reins/internal/shared"
)

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCLIStdin(t, "", args...)
}

// runCLIStdin runs the command with stdin as its standard input.
func runCLIStdin(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	var o, e bytes.Buffer
	code = run(args, strings.NewReader(stdin), &o, &e)
	return o.String(), e.String(), code
}

func TestGenerateJSONShape(t *testing.T) {
	out, errOut, code := runCLI(t, "generate", "--max-tokens", "6", "--top-logprobs", "3", "--json", "The cat")
	require.Equal(t, 0, code, errOut)
	var got struct {
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
		Logprobs     struct {
			Content []struct {
				Token       string  `json:"token"`
				Logprob     float64 `json:"logprob"`
				Bytes       []int   `json:"bytes"`
				TopLogprobs []struct {
					Token   string  `json:"token"`
					Logprob float64 `json:"logprob"`
					Bytes   []int   `json:"bytes"`
				} `json:"top_logprobs"`
			} `json:"content"`
		} `json:"logprobs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Len(t, got.Logprobs.Content, 6)
	fx := fixture.New()
	prev := fixture.Raw('t')
	var text strings.Builder
	for _, c := range got.Logprobs.Content {
		require.Len(t, c.TopLogprobs, 3)
		assert.Equal(t, c.Token, c.TopLogprobs[0].Token, "greedy")
		var b []byte
		for _, x := range c.Bytes {
			b = append(b, byte(x))
		}
		assert.Equal(t, c.Token, string(b))
		// The fixture's table gives the logprob of this token after prev.
		id := -1
		for i, p := range fx.Pieces {
			if p == fixtureSpelling(c.Token) {
				id = i
			}
		}
		require.GreaterOrEqual(t, id, 0, "token %q", c.Token)
		assert.InDelta(t, fx.Table[prev][id], c.Logprob, 1e-4)
		prev = id
		text.WriteString(c.Token)
	}
	assert.Equal(t, text.String(), got.Text)
	assert.Equal(t, "length", got.FinishReason)
}

// fixtureSpelling spells raw token text as the fixture's byte-level pieces.
func fixtureSpelling(s string) string { return strings.ReplaceAll(s, " ", "Ġ") }

func TestGenerateBranchesJSON(t *testing.T) {
	out, errOut, code := runCLI(t, "generate", "--n", "3", "--temperature", "1", "--seed", "2", "--max-tokens", "5", "--json", "Once")
	require.Equal(t, 0, code, errOut)
	var got struct {
		Choices []struct {
			Index int    `json:"index"`
			Text  string `json:"text"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Len(t, got.Choices, 3)
	for i, c := range got.Choices {
		assert.Equal(t, i, c.Index)
	}
}

func TestGenerateSeedIsDeterministic(t *testing.T) {
	a, _, code := runCLI(t, "generate", "--temperature", "1", "--seed", "9", "--max-tokens", "20", "The")
	require.Equal(t, 0, code)
	b, _, _ := runCLI(t, "generate", "The", "--temperature", "1", "--seed", "9", "--max-tokens", "20")
	assert.Equal(t, a, b, "same seed, same text; flags may follow the prompt")
}

func TestScoreTableAndJSON(t *testing.T) {
	out, errOut, code := runCLI(t, "score", "The cat sat")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "token")
	assert.Contains(t, out, "best alternative")
	assert.Contains(t, out, "sum")
	out, _, code = runCLI(t, "score", "--json", "The cat sat")
	require.Equal(t, 0, code)
	var res struct {
		Tokens []struct {
			Logprob float64 `json:"logprob"`
		} `json:"tokens"`
		Sum float64 `json:"sum"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	var sum float64
	for _, tk := range res.Tokens {
		sum += tk.Logprob
	}
	assert.InDelta(t, sum, res.Sum, 1e-9)
	assert.False(t, math.IsNaN(res.Sum))
}

func TestStoriesModel(t *testing.T) {
	p := shared.Path(t, "models/stories260K.gguf")
	out, errOut, code := runCLI(t, "generate", "--model", p, "--max-tokens", "30", "Once upon a time")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "there was")
	assert.Empty(t, errOut, "llama.cpp's log is quiet unless --verbose")
}

func TestCLIErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{nil, 3, "Usage"},
		{[]string{"frobnicate"}, 3, `unknown command "frobnicate"`},
		{[]string{"generate"}, 3, "one PROMPT argument, got 0"},
		{[]string{"generate", "--top-logprobs", "-1", "x"}, 3, "--top-logprobs -1"},
		{[]string{"generate", "--n", "0", "x"}, 3, "--n 0"},
		{[]string{"generate", "--n", "100000", "x"}, 3, "--n 100000"},
		{[]string{"generate", "--max-tokens", "10000000000", "x"}, 3, "--max-tokens 10000000000"},
		{[]string{"generate", "--temperature", "-2", "x"}, 3, "--temperature -2"},
		{[]string{"generate", "--top-p", "2", "x"}, 3, "--top-p 2"},
		{[]string{"generate", "--ctx", "-1", "x"}, 3, "--ctx -1"},
		{[]string{"generate", "--threads", "100000", "x"}, 3, "--threads 100000"},
		{[]string{"generate", "--bogus", "x"}, 3, "flag provided but not defined: -bogus"},
		{[]string{"generate", "--regex", "", "x"}, 3, "--regex is empty"},
		{[]string{"generate", "--grammar", "", "x"}, 3, "--grammar is empty"},
		{[]string{"generate", "--schema", "", "x"}, 3, "--schema is empty"},
		{[]string{"generate", "--regex", "a", "--json-value", "x"}, 3, "give one of"},
		{[]string{"choose", "x"}, 3, "choose needs options"},
		{[]string{"choose", "--option", "a", "--option", "a", "x"}, 3, `--option "a": an option different from --option #0`},
		{[]string{"choose", "--option", "a", "--option", "", "x"}, 3, `--option "": a non-empty option`},
		{[]string{"choose", "--option", "a", "--top-logprobs", "-1", "x"}, 3, "--top-logprobs -1"},
		{[]string{"generate", "--prefill", "x", "--heal", "a"}, 3, "--prefill"},
		{[]string{"generate", "--regex", "[0-9]+", "--prefill", "x", "a"}, 3, "--prefill"},
		{[]string{"generate", "--backend", "ollama", "--model", "m", "--heal", "a"}, 3, "--heal is for a model in process"},
		{[]string{"choose", "--backend", "openai", "--model", "m", "--heal", "--option", "a", "x"}, 3, "--heal is for a model in process"},
		{[]string{"run", "--backend", "ollama", "--model", "m", "--chat-continue", "last", "t.tmpl"}, 3, "flag provided but not defined: -chat-continue"},
		{[]string{"generate", "--model", "/no/such/model.gguf", "x"}, 1, "no such file"},
		{[]string{"generate", "--model", "ollama:nosuchmodel", "x"}, 1, "nosuchmodel:latest not found"},
		{[]string{"generate", ""}, 3, "PROMPT is empty"},
		{[]string{"generate", "--ctx", "256", strings.Repeat("ab ", 300)}, 1, "the context holds 256"},
		{[]string{"score", ""}, 3, "TEXT is empty"},
		{[]string{"score", "a", "b"}, 3, "one TEXT argument, got 2"},
		{[]string{"score", "--top-logprobs", "100000000", "x"}, 3, "--top-logprobs 100000000"},
		{[]string{"bench-grammar", "--grammar", "", "x.json"}, 3, "--grammar is empty"},
		{[]string{"run", "--top-logprobs", "100000000", "--var", "animal=dog", "../../testdata/programs/quiz.tmpl"}, 3, "--top-logprobs 100000000"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Setenv("OLLAMA_MODELS", t.TempDir())
			_, errOut, code := runCLI(t, tt.args...)
			assert.Equal(t, tt.code, code)
			assert.Contains(t, errOut, tt.want)
			assert.NotContains(t, errOut, "reins: reins:", "the command's name once")
		})
	}
}

func TestCheckCommand(t *testing.T) {
	gf := t.TempDir() + "/g.gbnf"
	require.NoError(t, os.WriteFile(gf, []byte("root ::= \"{\" [a-z]+ \"}\"\n"), 0o644))
	bad := t.TempDir() + "/bad.gbnf"
	require.NoError(t, os.WriteFile(bad, []byte("root ::= nope\n"), 0o644))
	tests := []struct {
		args  []string
		stdin string
		code  int
		out   string
	}{
		{[]string{"check", "--grammar", gf}, "{abc}", 0, "accepted"},
		{[]string{"check", "--grammar", gf}, "{ab1}", 1, "rejected at byte 3 (line 1, column 4): '1' is not allowed; expected 'a'-'z', '}'"},
		{[]string{"check", "--grammar", gf}, "{ab", 1, "ends too early"},
		{[]string{"check", "--regex", `\d+(\.\d+)?`}, "3.14", 0, "accepted"},
		{[]string{"check", "--regex", `\d+`}, "12\n3", 1, "line 1, column 3"},
		{[]string{"check", "--grammar", bad}, "x", 3, ""},
		{[]string{"check", "--regex", `a\b`}, "x", 3, ""},
		{[]string{"check"}, "x", 3, ""},
		{[]string{"check", "--regex", ""}, "x", 3, ""},
		{[]string{"check", "--schema", ""}, "x", 3, ""},
		{[]string{"check", "--regex", "é+"}, "é\xff", 1, `\xff is not allowed`},
		{[]string{"check", "--json-value"}, `{"a": [1, 2], "b": "` + strings.Repeat("long ", 20) + `"}`, 0, "accepted"},
		{[]string{"check", "--json-value", "--max-whitespace", "0"}, `{"a": [1, 2]}`, 1, "not allowed"},
	}
	for _, tt := range tests {
		out, errOut, code := runCLIStdin(t, tt.stdin, tt.args...)
		assert.Equal(t, tt.code, code, "%v: %s", tt.args, errOut)
		assert.Contains(t, out, tt.out)
	}
}

// TestFormatAnnotation: --format-annotation takes format as an
// annotation in check and generate; without it a string keeps to its
// format, and a format reins cannot compile is refused.
func TestFormatAnnotation(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(dir+"/date.json", []byte(`{"$schema": "http://json-schema.org/draft-07/schema#", "type": "string", "format": "date"}`), 0o644))
	out, errOut, code := runCLIStdin(t, `"06/19/1963"`, "check", "--schema", dir+"/date.json")
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, out, "not allowed")
	out, errOut, code = runCLIStdin(t, `"06/19/1963"`, "check", "--schema", dir+"/date.json", "--format-annotation")
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "accepted")
	out, errOut, code = runCLIStdin(t, `1963`, "check", "--schema", dir+"/date.json", "--format-annotation")
	assert.Equal(t, 1, code, "the type still holds: %s", errOut)
	assert.Contains(t, out, "not allowed")

	require.NoError(t, os.WriteFile(dir+"/regex.json", []byte(`{"type": "string", "format": "regex", "maxLength": 3}`), 0o644))
	_, errOut, code = runCLI(t, "generate", "--schema", dir+"/regex.json", "x")
	assert.Equal(t, 3, code)
	assert.Contains(t, errOut, "format")
	out, errOut, code = runCLI(t, "generate", "--schema", dir+"/regex.json", "--format-annotation", "--json", "--max-tokens", "20", "x")
	require.Equal(t, 0, code, errOut)
	var got struct {
		Value string `json:"value"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	assert.LessOrEqual(t, utf8.RuneCountInString(got.Value), 3, "maxLength still holds: %s", out)
}

func TestGenerateWithGrammarAndRegex(t *testing.T) {
	gf := t.TempDir() + "/g.gbnf"
	require.NoError(t, os.WriteFile(gf, []byte("root ::= \"The \" (\"cat\" | \"dog\") \" sat.\"\n"), 0o644))
	for seed := range 5 {
		out, errOut, code := runCLI(t, "generate", "--grammar", gf, "--temperature", "1", "--seed", strconv.Itoa(seed), "x")
		require.Equal(t, 0, code, errOut)
		assert.Regexp(t, `^The (cat|dog) sat\.\n$`, out)
		out, errOut, code = runCLI(t, "generate", "--regex", `[0-9]{3}-[a-z]{2}`, "--temperature", "1", "--seed", strconv.Itoa(seed), "x")
		require.Equal(t, 0, code, errOut)
		assert.Regexp(t, `^[0-9]{3}-[a-z]{2}\n$`, out)
	}
}

func TestMaskCommand(t *testing.T) {
	v := shared.Path(t, "vocab/ggml-vocab-llama-bpe.gguf")
	g := shared.Path(t, "gbnf/json.gbnf")
	out, errOut, code := runCLI(t, "mask", "--grammar", g, "--vocab", v, `{"a": 1}`)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "allowed")
	assert.NotContains(t, out, "REFUSED")
	out, _, code = runCLI(t, "mask", "--grammar", g, "--vocab", v, `{"a": x}`)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "REFUSED")
}

func TestMaskbenchCommand(t *testing.T) {
	dir := shared.Path(t, "maskbench-dev")
	files := []string{dir + "/Glaiveai2K---analyze_health_data_ecfa5553.json", dir + "/BFCL_simple_1.json"}
	out, errOut, code := runCLI(t, append([]string{"maskbench", "--vocab", shared.Path(t, "vocab/ggml-vocab-llama-bpe.gguf")}, files...)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "TBM")
	assert.Contains(t, out, "TTFM")
	assert.Contains(t, out, "schemas 2")
	assert.Contains(t, out, "first mask")
	assert.Contains(t, out, "MaskBench's rule:                     passing 2 (100.0%)")
	assert.Contains(t, out, "reins' rule (end allowed when valid): passing 2 (100.0%)")
	assert.Contains(t, out, "invalidation errors 0 (0.0%)")
	// A compile that outlasts --timeout counts as a timeout.
	out, errOut, code = runCLI(t, "maskbench", "--timeout", "1ns", "--vocab", shared.Path(t, "vocab/ggml-vocab-llama-bpe.gguf"), files[0])
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "timeouts 1 (100.0%)")
	if os.Getenv("GOGC") == "" {
		assert.Contains(t, out, "GOGC 200", "the default GC target")
	}
	// --gogc sets the GC target for the run only.
	before := gcPercent()
	out, errOut, code = runCLI(t, append([]string{"maskbench", "--gogc", "150", "--vocab", shared.Path(t, "vocab/ggml-vocab-llama-bpe.gguf")}, files[:1]...)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "GOGC 150")
	assert.Equal(t, before, gcPercent(), "restored after the run")
	// Out of range: usage errors, before any schema runs.
	for _, bad := range [][]string{{"--gogc", "-5"}, {"--timeout", "0s"}, {"--timeout", "-1s"}} {
		_, errOut, code = runCLI(t, append(append([]string{"maskbench"}, bad...), files[0])...)
		assert.Equal(t, 3, code, "%v: %s", bad, errOut)
		assert.Contains(t, errOut, bad[0], "the error names the flag")
	}
}

// TestMaskbenchBothEngines runs reins and llama.cpp on the same file in
// one run and checks each gets its table, with the ratio of medians.
func TestMaskbenchBothEngines(t *testing.T) {
	f := t.TempDir() + "/one.json"
	mb := `{"schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": false},
	        "tests": [{"data": {"a": 1}, "valid": true}, {"data": {"a": "x"}, "valid": false}]}`
	require.NoError(t, os.WriteFile(f, []byte(mb), 0o644))
	out, errOut, code := runCLI(t, "maskbench", "--engine", "reins,llamacpp", "--vocab", shared.Path(t, "vocab/ggml-vocab-llama-bpe.gguf"), f)
	require.Equal(t, 0, code, errOut)
	reinsPart, llamaPart, ok := strings.Cut(out, "engine llamacpp")
	require.True(t, ok, out)
	assert.Contains(t, reinsPart, "passing 1 (100.0%)")
	assert.Contains(t, llamaPart, "schemas 1")
	assert.Contains(t, llamaPart, "TBM p50: llamacpp / reins =")
	_, errOut, code = runCLI(t, "maskbench", "--engine", "xgrammar", f)
	assert.Equal(t, 3, code, errOut)
}

func TestGenerateWithSchema(t *testing.T) {
	sf := t.TempDir() + "/s.json"
	schema := `{"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}, "n": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["name", "n"], "additionalProperties": false}`
	require.NoError(t, os.WriteFile(sf, []byte(schema), 0o644))
	for seed := range 4 {
		out, errOut, code := runCLI(t, "generate", "--schema", sf, "--temperature", "1", "--seed", strconv.Itoa(seed), "--max-tokens", "120", "x")
		require.Equal(t, 0, code, errOut)
		text := strings.TrimSpace(out)
		require.NoError(t, jsonschema.Validate([]byte(schema), []byte(text)), "output %q", text)
	}
	// JSON mode: an output that ended by itself is JSON.
	stopped := 0
	for seed := range 8 {
		out, errOut, code := runCLI(t, "generate", "--json-value", "--json", "--temperature", "1", "--seed", strconv.Itoa(seed), "--max-tokens", "80", "x")
		require.Equal(t, 0, code, errOut)
		var got struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &got))
		if got.FinishReason == "stop" {
			stopped++
			assert.True(t, json.Valid([]byte(got.Text)), "%q", got.Text)
		}
	}
	assert.Positive(t, stopped, "some outputs end by themselves")
}

// TestGenerateSchemaFilesAndRelax checks that a schema's $ref to a file
// beside it is read, that --json carries the parsed value, and that an
// output breaking a --relax keyword fails with an error that says so.
func TestGenerateSchemaFilesAndRelax(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(dir+"/defs", 0o755))
	require.NoError(t, os.WriteFile(dir+"/defs/n.json", []byte(`{"type": "integer", "minimum": 5, "maximum": 7}`), 0o644))
	require.NoError(t, os.WriteFile(dir+"/s.json", []byte(`{"type": "array", "items": {"$ref": "defs/n.json"}, "minItems": 1, "maxItems": 2}`), 0o644))
	out, errOut, code := runCLI(t, "generate", "--schema", dir+"/s.json", "--json", "--max-tokens", "40", "x")
	require.Equal(t, 0, code, errOut)
	var got struct {
		Text  string `json:"text"`
		Value []int  `json:"value"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.NotEmpty(t, got.Value, out)
	for _, n := range got.Value {
		assert.True(t, n >= 5 && n <= 7, "%d from %s", n, got.Text)
	}
	// A network reference is refused, naming it.
	require.NoError(t, os.WriteFile(dir+"/net.json", []byte(`{"$ref": "https://example.com/s.json"}`), 0o644))
	_, errOut, code = runCLI(t, "generate", "--schema", dir+"/net.json", "x")
	assert.Equal(t, 3, code)
	assert.Contains(t, errOut, "https://example.com/s.json")

	require.NoError(t, os.WriteFile(dir+"/u.json", []byte(`{"type": "array", "items": {"enum": [1]}, "minItems": 2, "maxItems": 2, "uniqueItems": true}`), 0o644))
	_, errOut, code = runCLI(t, "generate", "--schema", dir+"/u.json", "x")
	assert.Equal(t, 3, code)
	assert.Contains(t, errOut, "uniqueItems")
	out, errOut, code = runCLI(t, "generate", "--schema", dir+"/u.json", "--relax", "uniqueItems", "--max-tokens", "20", "x")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "which --relax left out of the grammar")
	assert.Empty(t, out, "an invalid output never reaches stdout")
}

// TestGeneratePrefillAndHeal: --prefill is printed first and the
// output continues it; --heal takes the prompt's last token back, and
// the JSON says what each did.
func TestGeneratePrefillAndHeal(t *testing.T) {
	out, errOut, code := runCLI(t, "generate", "--max-tokens", "4", "--prefill", " the", "The cat sat on")
	require.Equal(t, 0, code, errOut)
	want, _, code := runCLI(t, "generate", "--max-tokens", "4", "The cat sat on the")
	require.Equal(t, 0, code)
	assert.Equal(t, " the"+want, out, "the prefill, then what follows prompt+prefill")

	out, errOut, code = runCLI(t, "generate", "--json", "--max-tokens", "4", "--regex", "[0-9]{3}", "--prefill", "4", "x")
	require.Equal(t, 0, code, errOut)
	var c struct {
		Text, Prefill string
	}
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	assert.Equal(t, "4", c.Prefill)
	assert.Regexp(t, "^[0-9]{2}$", c.Text)

	out, errOut, code = runCLI(t, "generate", "--json", "--max-tokens", "3", "--heal", "The cat sat on ")
	require.Equal(t, 0, code, errOut)
	var h struct {
		Healed   string
		Logprobs struct{ Content []struct{ Token string } }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &h))
	assert.Equal(t, " ", h.Healed)
	require.NotEmpty(t, h.Logprobs.Content)
	assert.Equal(t, " the", h.Logprobs.Content[0].Token, "the first token spans the healed space")

	// A generation refused before it starts prints nothing, prefill
	// included.
	out, errOut, code = runCLI(t, "generate", "--ctx", "256", "--prefill", "PREFILL", strings.Repeat("ab ", 300))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "the context holds 256")
	assert.Empty(t, out)

	out, errOut, code = runCLI(t, "choose", "--json", "--heal", "--option", "the mat", "--option", "a mat", "The cat sat on ")
	require.Equal(t, 0, code, errOut)
	var sel struct{ Healed string }
	require.NoError(t, json.Unmarshal([]byte(out), &sel))
	assert.Equal(t, " ", sel.Healed, "choose --json says what --heal took back")
}

// TestChooseTokens: choose --json lists each option's tokens, with
// --top-logprobs alternatives each.
func TestChooseTokens(t *testing.T) {
	out, errOut, code := runCLI(t, "choose", "--json", "--top-logprobs", "2", "--option", " sat", "--option", " ran", "The cat")
	require.Equal(t, 0, code, errOut)
	var sel struct {
		Options []struct {
			Text    string
			Logprob float64
			Tokens  []struct {
				Token       string
				Logprob     float64
				TopLogprobs []any `json:"top_logprobs"`
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &sel))
	require.Len(t, sel.Options, 2)
	for _, o := range sel.Options {
		var spelled string
		var sum float64
		for _, tok := range o.Tokens {
			spelled += tok.Token
			sum += tok.Logprob
			assert.Len(t, tok.TopLogprobs, 2)
		}
		assert.Equal(t, o.Text, spelled)
		assert.InDelta(t, o.Logprob, sum, 1e-9)
	}
}

// TestChooseTableAndScoreContext: choose lists every option most
// probable first with the chosen one marked, its probabilities those of
// choose --json; score --context scores exactly the text given (its
// tokens spell it, and their sum is the library's score of it in that
// context); an unfinished generation exits 1, says so on stderr and
// prints nothing.
func TestChooseTableAndScoreContext(t *testing.T) {
	args := []string{"--option", " ran", "--option", " xyz", "--option", " sat", "The cat"}
	out, errOut, code := runCLI(t, append([]string{"choose"}, args...)...)
	require.Equal(t, 0, code, errOut)
	js, _, code := runCLI(t, append([]string{"choose", "--json"}, args...)...)
	require.Equal(t, 0, code)
	var sel struct {
		Choice  string
		Options []struct {
			Text string
			Prob float64
		}
	}
	require.NoError(t, json.Unmarshal([]byte(js), &sel))
	lines := strings.Split(strings.TrimSpace(out), "\n")[1:]
	require.Len(t, lines, 3, out)
	for i, l := range lines {
		o := sel.Options[i]
		if i > 0 {
			assert.GreaterOrEqual(t, sel.Options[i-1].Prob, o.Prob, "most probable first")
		}
		assert.Contains(t, l, fmt.Sprintf("%q", o.Text), "row %d", i)
		assert.Equal(t, o.Text == sel.Choice, strings.HasPrefix(l, "*"), "row %d: %q", i, l)
	}
	assert.Equal(t, " sat", sel.Choice)

	out, errOut, code = runCLI(t, "score", "--json", "--context", "The cat", " sat on")
	require.Equal(t, 0, code, errOut)
	var sc struct {
		Tokens []struct{ Bytes []byte }
		Sum    float64
	}
	require.NoError(t, json.Unmarshal([]byte(out), &sc))
	var spelled []byte
	for _, tok := range sc.Tokens {
		spelled = append(spelled, tok.Bytes...)
	}
	assert.Equal(t, " sat on", string(spelled), "the tokens spell the text, not the context's end")
	want, err := reins.Builtin().Score(context.Background(), " sat on", reins.ScoreOptions{Context: "The cat"})
	require.NoError(t, err)
	assert.InDelta(t, want.Sum, sc.Sum, 1e-6)

	out, errOut, code = runCLI(t, "generate", "--regex", "[a-z]{30}", "--max-tokens", "3", "The cat")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "unfinished")
	assert.Empty(t, out)
}
