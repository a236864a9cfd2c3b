package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/internal/gguf"
	"github.com/reins-go/reins/internal/shared"
)

// The hostile-input suite runs the command in a child process (this
// test binary, re-executed as the CLI) under a memory limit and a time
// limit, and checks that hostile input gets a clear error: an exit
// status of a verdict or an error (0, 1, 3), never a signal, a Go crash
// (2) or a recovered panic (70), a message that names the problem, and
// bounded time and memory. Large inputs are generated here, not stored.

// asCLI, when set in the environment, makes the test binary run the
// command line instead of the tests; asCLIMem is its address-space limit
// in bytes.
const (
	asCLI    = "REINS_TEST_AS_CLI"
	asCLIMem = "REINS_TEST_AS_CLI_MEM"
)

func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		if n, err := strconv.ParseUint(os.Getenv(asCLIMem), 10, 64); err == nil && n > 0 {
			lim := syscall.Rlimit{Cur: n, Max: n}
			if err := syscall.Setrlimit(syscall.RLIMIT_AS, &lim); err != nil {
				fmt.Fprintln(os.Stderr, "setrlimit:", err)
				os.Exit(99)
			}
		}
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// hostileCase is one hostile input through the command line.
type hostileCase struct {
	name  string
	args  []string
	stdin func() ([]byte, error) // standard input, when the case has one
	codes []int                  // the exit statuses that are right
	want  string                 // a part of stderr (or, with code 0 or 1 of check, stdout) that names the problem
	never string                 // a part of the output that must not appear (a leaked file's content)
	limit time.Duration          // the most time it may take
	mem   uint64                 // the most memory (peak RSS, bytes) it may take
}

// runHostile runs c in a child process and checks its outcome; it
// returns the time and the peak RSS, for the figures.
func runHostile(t *testing.T, c hostileCase) (time.Duration, uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), c.limit+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], c.args...)
	cmd.Env = append(os.Environ(), asCLI+"=1", asCLIMem+"="+strconv.FormatUint(8<<30, 10), "XDG_CACHE_HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if c.stdin != nil {
		in, err := c.stdin()
		require.NoError(t, err)
		cmd.Stdin = bytes.NewReader(in)
	}
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	var rss uint64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = uint64(ru.Maxrss) * 1024
		}
	}
	out := stdout.String() + stderr.String()
	short := out
	if len(short) > 600 {
		short = short[:600] + "..."
	}
	var exit *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("%s: killed by signal %v after %v: %s", c.name, ws.Signal(), took, short)
		}
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", c.name, err)
	}
	assert.Contains(t, c.codes, code, "%s: exit status %d: %s", c.name, code, short)
	assert.NotContains(t, out, "goroutine ", "%s: a Go crash or panic: %s", c.name, short)
	if c.want != "" {
		assert.Contains(t, out, c.want, "%s", c.name)
	}
	if c.never != "" {
		assert.NotContains(t, out, c.never, "%s: leaked", c.name)
	}
	assert.Less(t, took, c.limit, "%s took %v", c.name, took)
	if c.mem > 0 {
		assert.Less(t, rss, c.mem, "%s: peak RSS %d MB", c.name, rss>>20)
	}
	t.Logf("%-40s exit %d, %8v, peak RSS %4d MB", c.name, code, took.Round(time.Millisecond), rss>>20)
	return took, rss
}

// writeFile writes data into dir/name and returns the path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return p
}

// sweep is true when REINS_SWEEP asks for the largest inputs.
func sweep() bool { return shared.Sweep() }

func TestHostileInput(t *testing.T) {
	if testing.Short() {
		t.Skip("hostile-input suite: not in -short")
	}
	dir := t.TempDir()
	const (
		quick = 20 * time.Second // a clear error should come at once; this allows a busy machine
		mb    = 1 << 20
	)
	nested := func(n int, open, close string) []byte {
		return []byte(strings.Repeat(open, n) + strings.Repeat(close, n))
	}
	checkMB := 20
	if sweep() {
		checkMB = 50
	}
	bigJSON := func() ([]byte, error) {
		var b bytes.Buffer
		b.WriteString(`{"items": [`)
		for i := 0; b.Len() < checkMB*mb; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, `{"id": %d, "name": "item %d", "tags": ["a", "b"], "ok": true}`, i, i)
		}
		b.WriteString("]}")
		return b.Bytes(), nil
	}
	fifo := filepath.Join(dir, "fifo.json")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	schemaRef := func(name, ref string) string {
		return writeFile(t, dir, name, []byte(`{"type": "object", "properties": {"a": {"$ref": "`+ref+`"}}}`))
	}
	var dag strings.Builder
	dag.WriteString(`{"$ref": "#/$defs/d0", "$defs": {`)
	for i := range 60 {
		fmt.Fprintf(&dag, `"d%d": {"anyOf": [{"$ref": "#/$defs/d%d"}, {"$ref": "#/$defs/d%d"}]}, `, i, i+1, i+1)
	}
	dag.WriteString(`"d60": {"type": "string"}}}`)
	dagSchema := dag.String()
	deepArrays := strings.Repeat(`{"type": "array", "items": `, 30) + `{"type": "integer"}` + strings.Repeat("}", 30)
	deepObjects := strings.Repeat(`{"type": "object", "properties": {"a": `, 1000) + `{}` + strings.Repeat("}}", 1000)
	var enum strings.Builder
	enum.WriteString(`{"enum": [`)
	for i := range 200000 {
		if i > 0 {
			enum.WriteString(",")
		}
		fmt.Fprintf(&enum, `"v%d"`, i)
	}
	enum.WriteString("]}")
	vocabFile := shared.Path(t, "vocab/ggml-vocab-llama-bpe.gguf")

	cases := []hostileCase{
		// Grammars.
		{name: "gbnf 200,000 nested parentheses", args: []string{"check", "--grammar", writeFile(t, dir, "deep.gbnf", append([]byte("root ::= "), nested(200000, "(", ")")...))},
			stdin: func() ([]byte, error) { return nil, nil }, codes: []int{3}, want: "MaxNesting", limit: quick, mem: 512 * mb},
		{name: "gbnf 5 MB literal", args: []string{"check", "--grammar", writeFile(t, dir, "lit.gbnf", []byte(`root ::= "`+strings.Repeat("x", 5*mb)+`"`))},
			stdin: func() ([]byte, error) { return []byte("x"), nil }, codes: []int{3}, want: "grammar too large", limit: quick, mem: 1024 * mb},
		{name: "gbnf huge repetition", args: []string{"check", "--grammar", writeFile(t, dir, "rep.gbnf", []byte(`root ::= ("ab"{1,1000}){1,1000}`))},
			stdin: func() ([]byte, error) { return []byte("ab"), nil }, codes: []int{0}, want: "accepted", limit: quick, mem: 1024 * mb},
		{name: "ambiguous grammar, 4,000 bytes", args: []string{"check", "--grammar", writeFile(t, dir, "amb.gbnf", []byte("root ::= x\nx ::= x x | \"a\" | \"\"\n"))},
			stdin: func() ([]byte, error) { return bytes.Repeat([]byte("a"), 4000), nil }, codes: []int{1}, want: "no verdict", limit: quick, mem: 1024 * mb},
		{name: "regex 10,000 nested groups", args: []string{"check", "--regex", string(nested(10000, "(", ")")) + "a"},
			stdin: func() ([]byte, error) { return []byte("a"), nil }, codes: []int{3}, limit: quick, mem: 512 * mb},
		{name: "regex repetition of repetition", args: []string{"check", "--regex", "(a{1000}){1000}"},
			stdin: func() ([]byte, error) { return []byte("a"), nil }, codes: []int{3}, limit: quick, mem: 512 * mb},
		{name: fmt.Sprintf("check %d MB of JSON on stdin", checkMB), args: []string{"check", "--grammar", shared.Path(t, "gbnf/json.gbnf")},
			stdin: bigJSON, codes: []int{0}, want: "accepted", limit: 120 * time.Second, mem: 256 * mb},
		{name: "check 5,000,000 nested arrays on stdin", args: []string{"check", "--json-value"},
			stdin: func() ([]byte, error) { return bytes.Repeat([]byte("["), 5_000_000), nil }, codes: []int{1}, want: "no verdict", limit: 120 * time.Second, mem: 1024 * mb},
		{name: "check empty regex", args: []string{"check", "--regex", ""}, stdin: func() ([]byte, error) { return nil, nil }, codes: []int{3}, want: "--regex is empty", limit: quick},
		// Schemas.
		{name: "schema: arrays nested 30 deep", args: []string{"check", "--schema", writeFile(t, dir, "arrays.json", []byte(deepArrays))},
			stdin: func() ([]byte, error) { return nested(30, "[", "]"), nil }, codes: []int{0}, want: "accepted", limit: quick, mem: 1024 * mb},
		{name: "schema: objects nested 1,000 deep", args: []string{"check", "--schema", writeFile(t, dir, "objects.json", []byte(deepObjects))},
			stdin: func() ([]byte, error) { return []byte("{}"), nil }, codes: []int{3}, want: "MaxDepth", limit: quick, mem: 512 * mb},
		{name: "schema: a bound of 2,000,000 digits", args: []string{"check", "--schema", writeFile(t, dir, "digits.json", []byte(`{"type": "integer", "minimum": 1`+strings.Repeat("0", 2000000)+`}`))},
			stdin: func() ([]byte, error) { return []byte("1"), nil }, codes: []int{3}, limit: quick, mem: 512 * mb},
		{name: "schema: a 5 MB const", args: []string{"check", "--schema", writeFile(t, dir, "const.json", []byte(`{"const": "`+strings.Repeat("x", 5*mb)+`"}`))},
			stdin: func() ([]byte, error) { return []byte(`"x"`), nil }, codes: []int{3}, want: "MaxSchemaBytes", limit: quick, mem: 1024 * mb},
		{name: "schema: 200,000 enum values", args: []string{"check", "--schema", writeFile(t, dir, "enum.json", []byte(enum.String()))},
			stdin: func() ([]byte, error) { return []byte(`"v7"`), nil }, codes: []int{3}, want: "MaxEnumValues", limit: quick, mem: 1024 * mb},
		{name: "schema: anyOfs of two references to the next, 60 deep (the validator would take exponential time)", args: []string{"check", "--schema", writeFile(t, dir, "dag.json", []byte(dagSchema))},
			stdin: func() ([]byte, error) { return []byte(`"a"`), nil }, codes: []int{3}, want: "MaxFanOut", limit: quick, mem: 256 * mb},
		{name: "schema: $ref to /dev/zero", args: []string{"check", "--schema", schemaRef("zero.json", "file:///dev/zero")},
			stdin: func() ([]byte, error) { return []byte("{}"), nil }, codes: []int{3}, want: "/dev/zero", limit: quick, mem: 256 * mb},
		{name: "schema: $ref to /dev/urandom", args: []string{"check", "--schema", schemaRef("random.json", "file:///dev/urandom")},
			stdin: func() ([]byte, error) { return []byte("{}"), nil }, codes: []int{3}, want: "/dev/urandom", limit: quick, mem: 256 * mb},
		{name: "schema: $ref to a FIFO", args: []string{"check", "--schema", schemaRef("fifo-ref.json", "fifo.json")},
			stdin: func() ([]byte, error) { return []byte("{}"), nil }, codes: []int{3}, want: "fifo.json", limit: quick, mem: 256 * mb},
		{name: "schema: $ref to /etc/passwd", args: []string{"check", "--schema", schemaRef("passwd.json", "file:///etc/passwd")},
			stdin: func() ([]byte, error) { return []byte("{}"), nil }, codes: []int{3}, want: "/etc/passwd", never: "root:", limit: quick, mem: 256 * mb},
		{name: "schema file is /dev/zero", args: []string{"check", "--schema", "/dev/zero"},
			stdin: func() ([]byte, error) { return []byte("{}"), nil }, codes: []int{3}, want: "not a regular file", limit: quick, mem: 256 * mb},
		{name: "grammar file is a FIFO", args: []string{"check", "--grammar", fifo},
			stdin: func() ([]byte, error) { return nil, nil }, codes: []int{3}, want: "not a regular file", limit: quick, mem: 256 * mb},
		{name: "extract: the schema is a FIFO", args: []string{"extract", "--schema", fifo, "../../testdata/extract/docs"},
			codes: []int{3}, want: "not a regular file (a named pipe)", limit: quick, mem: 256 * mb},
		{name: "extract: a document is a FIFO", args: []string{"extract", "--schema", "../../testdata/extract/person.schema.json", fifo},
			codes: []int{1}, want: "not a regular file (a named pipe)", limit: quick, mem: 512 * mb},
		{name: "extract: the instructions are a FIFO", args: []string{"extract", "--schema", "../../testdata/extract/person.schema.json", "--instructions", fifo, "../../testdata/extract/docs"},
			codes: []int{3}, want: "not a regular file (a named pipe)", limit: quick, mem: 256 * mb},
		{name: "run: the template is a FIFO", args: []string{"run", fifo},
			codes: []int{3}, want: "not a regular file (a named pipe)", limit: quick, mem: 256 * mb},
		{name: "run: a template's file is a FIFO", args: []string{"run", writeFile(t, dir, "reads-fifo.tmpl", []byte(`{{gen "x" grammar="fifo.json"}}`))},
			codes: []int{3}, want: "not a regular file (a named pipe)", limit: quick, mem: 256 * mb},
		{name: "view: the input is a FIFO", args: []string{"view", fifo},
			codes: []int{1}, want: "not a regular file (a named pipe)", limit: quick, mem: 256 * mb},
		{name: "view: a log-probability above 0", args: []string{"view", "--out", "-", writeFile(t, dir, "pos.json", []byte(`{"logprobs":{"content":[{"token":"a","logprob":-1,"bytes":[97]},{"token":"b","logprob":1e308,"bytes":[98]}]}}`))},
			codes: []int{3}, want: "logprobs.content[1].logprob: 1e+308: want a log-probability, at most 0", limit: quick, mem: 256 * mb},
		{name: "view: a number out of range", args: []string{"view", "--out", "-", writeFile(t, dir, "inf.json", []byte("{\"tokens\": [\n {\"token\": \"a\", \"logprob\": 1e400}]}"))},
			codes: []int{3}, want: "the value ending at line 2, column 32: tokens.logprob: JSON number 1e400 is out of range", limit: quick, mem: 256 * mb},
		{name: "view: not JSON", args: []string{"view", "--out", "-", writeFile(t, dir, "syn.json", []byte("{\"tokens\": [\n  x]}"))},
			codes: []int{3}, want: "line 2, column 3: not JSON: invalid character 'x'", limit: quick, mem: 256 * mb},
		{name: "view: choices without logprobs", args: []string{"view", "--out", "-", writeFile(t, dir, "nolp.json", []byte(`{"choices": [{"text": "hi"}, {}]}`))},
			codes: []int{3}, want: "no choice holds logprobs.content", limit: quick, mem: 256 * mb},
		{name: "view: two shapes at once", args: []string{"view", "--out", "-", writeFile(t, dir, "two.json", []byte(`{"tokens": [], "segments": []}`))},
			codes: []int{3}, want: "it holds segments and tokens", limit: quick, mem: 256 * mb},
		{name: "view: a byte order mark", args: []string{"view", "--out", "-", writeFile(t, dir, "bom.json", []byte("\uFEFF"+`{"tokens": [{"token": "a", "bytes": [97], "logprob": -1}]}`))},
			codes: []int{0}, limit: quick, mem: 256 * mb},
		{name: "view: bytes that are not a list", args: []string{"view", "--out", "-", writeFile(t, dir, "b64.json", []byte(`{"tokens": [{"token": "a", "logprob": -1, "bytes": "YQ=="}]}`))},
			codes: []int{3}, want: `bytes "YQ==": want a JSON array of numbers from 0 to 255`, limit: quick, mem: 256 * mb},
		{name: "view: a capture past the text", args: []string{"view", "--out", "-", writeFile(t, dir, "cap.json", []byte(`{"segments": [{"text": "abc"}], "captures": [{"name": "x", "start": 1, "end": 9, "prob": 0.5}]}`))},
			codes: []int{3}, want: `captures[0] ("x"): bytes 1 to 9: want a span of the page's 3 bytes of text`, limit: quick, mem: 256 * mb},
		{name: "mask: an ambiguous grammar along 2,000 tokens", args: []string{"mask", "--grammar", writeFile(t, dir, "amb-mask.gbnf", []byte("root ::= x\nx ::= x x | \"a\" | \" \" | \"\"\n")), "--vocab", vocabFile, strings.Repeat("a ", 1000)},
			codes: []int{1}, want: "no verdict", limit: 60 * time.Second, mem: 1024 * mb},
		{name: "mask: invalid UTF-8 judged by its bytes", args: []string{"mask", "--regex", "é+", "--vocab", vocabFile, "\xc3"},
			codes: []int{0}, want: "REFUSED", limit: 60 * time.Second, mem: 1024 * mb},
		// Flags.
		{name: "--ctx 1", args: []string{"generate", "--ctx", "1", "x"}, codes: []int{0}, limit: quick, mem: 1024 * mb},
		{name: "--threads 100000", args: []string{"generate", "--threads", "100000", "x"}, codes: []int{3}, want: "--threads", limit: quick},
		{name: "--max-tokens 10000000000", args: []string{"generate", "--max-tokens", "10000000000", "x"}, codes: []int{3}, want: "--max-tokens", limit: quick},
		{name: "--n 1000", args: []string{"generate", "--n", "1000", "--max-tokens", "2", "x"}, codes: []int{0}, limit: 60 * time.Second, mem: 1024 * mb},
		{name: "--n 1024 --top-logprobs 265 --max-tokens 100000", args: []string{"generate", "--n", "1024", "--top-logprobs", "265", "--max-tokens", "100000", "--json", "x"}, codes: []int{3}, want: "token records to keep", limit: quick, mem: 512 * mb},
		{name: "score an empty text", args: []string{"score", ""}, codes: []int{3}, want: "TEXT is empty", limit: quick},
		{name: "generate from an empty prompt", args: []string{"generate", "--heal", "--regex", "a", ""}, codes: []int{3}, want: "PROMPT is empty", limit: quick},
		{name: "--top-logprobs 10000000", args: []string{"generate", "--top-logprobs", "10000000", "x"}, codes: []int{3}, want: "--top-logprobs 10000000", limit: quick},
		// Models.
		{name: "model: the small GGUF these cases break", args: []string{"generate", "--max-tokens", "2", "--model", writeGGUF(t, dir, "good.gguf", nil), "abc"}, codes: []int{0}, limit: quick, mem: 512 * mb},
		{name: "model: a prompt of no tokens", args: []string{"generate", "--model", writeGGUF(t, dir, "good2.gguf", nil), "xyz"}, codes: []int{1}, want: "no tokens", limit: quick, mem: 512 * mb},
		{name: "model /dev/zero", args: []string{"generate", "--model", "/dev/zero", "x"}, codes: []int{1}, limit: quick, mem: 256 * mb},
		{name: "model: a GGUF of no tokens", args: []string{"generate", "--model", writeGGUF(t, dir, "notokens.gguf", map[string]any{"tokenizer.ggml.tokens": []string{}}), "x"}, codes: []int{1}, want: "notokens.gguf", limit: quick, mem: 512 * mb},
		{name: "model: block_count 0", args: []string{"generate", "--model", writeGGUF(t, dir, "noblocks.gguf", map[string]any{"llama.block_count": uint32(0)}), "x"}, codes: []int{1}, want: "block_count", limit: quick, mem: 512 * mb},
		{name: "model: NaN epsilon", args: []string{"generate", "--model", writeGGUF(t, dir, "nan.gguf", map[string]any{"llama.attention.layer_norm_rms_epsilon": float32(nan())}), "x"}, codes: []int{1}, want: "epsilon", limit: quick, mem: 512 * mb},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runHostile(t, c) })
	}
}

func nan() float64 { var z float64; return z / z }

// writeGGUF writes a small llama GGUF, the built-in model's shape, with
// the given metadata keys replaced, and returns its path.
func writeGGUF(t *testing.T, dir, name string, override map[string]any) string {
	t.Helper()
	const embd, vocab = 8, 4
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "llama.context_length", Value: uint32(64)},
		{Key: "llama.embedding_length", Value: uint32(embd)},
		{Key: "llama.block_count", Value: uint32(1)},
		{Key: "llama.feed_forward_length", Value: uint32(8)},
		{Key: "llama.attention.head_count", Value: uint32(2)},
		{Key: "llama.attention.head_count_kv", Value: uint32(2)},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: float32(1e-5)},
		{Key: "llama.rope.dimension_count", Value: uint32(embd / 2)},
		{Key: "tokenizer.ggml.model", Value: "gpt2"},
		{Key: "tokenizer.ggml.tokens", Value: []string{"a", "b", "c", "d"}},
		{Key: "tokenizer.ggml.token_type", Value: []int32{1, 1, 1, 1}},
		{Key: "tokenizer.ggml.merges", Value: []string{}},
		{Key: "tokenizer.ggml.bos_token_id", Value: uint32(0)},
		{Key: "tokenizer.ggml.eos_token_id", Value: uint32(1)},
	}
	for i, kv := range kvs {
		if v, ok := override[kv.Key]; ok {
			kvs[i].Value = v
		}
	}
	tensor := func(name string, shape ...uint64) gguf.Tensor {
		n := uint64(1)
		for _, s := range shape {
			n *= s
		}
		return gguf.Tensor{Name: name, Shape: shape, Data: make([]float32, n)}
	}
	tensors := []gguf.Tensor{
		tensor("token_embd.weight", embd, vocab), tensor("output_norm.weight", embd),
		tensor("blk.0.attn_norm.weight", embd), tensor("blk.0.attn_q.weight", embd, embd), tensor("blk.0.attn_k.weight", embd, embd),
		tensor("blk.0.attn_v.weight", embd, embd), tensor("blk.0.attn_output.weight", embd, embd), tensor("blk.0.ffn_norm.weight", embd),
		tensor("blk.0.ffn_gate.weight", embd, 8), tensor("blk.0.ffn_up.weight", embd, 8), tensor("blk.0.ffn_down.weight", 8, embd),
	}
	f, err := os.Create(filepath.Join(dir, name))
	require.NoError(t, err)
	require.NoError(t, gguf.Write(f, kvs, tensors))
	require.NoError(t, f.Close())
	return f.Name()
}
