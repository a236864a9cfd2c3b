package llama

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	ollamallama "github.com/ollama/ollama/llama"
	"github.com/ollama/ollama/ml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/gguf"
	"github.com/reins-go/reins/internal/shared"
)

// A child process loads one GGUF file in llama.cpp, so that an abort
// kills the child and not the test. The test binary re-executes itself
// with these variables set; TestMain runs childMain instead of the
// tests.
const (
	childEnv          = "REINS_LLAMA_CHILD_LOAD"      // the file to load
	childUncheckedEnv = "REINS_LLAMA_CHILD_UNCHECKED" // "1": straight to llama.cpp, no Go checks
	childOptionsEnv   = "REINS_LLAMA_CHILD_OPTIONS"   // Load's options, as JSON
	childLimit        = 8 << 30                       // the child's address space (RLIMIT_AS)
	childTimeout      = 2 * time.Minute
)

// childText is tokenized by the child: every byte value, words, and
// the special-token spellings llama.cpp looks for.
var childText = func() string {
	var b strings.Builder
	b.WriteString("Once upon a time, <s></s><|endoftext|> the cat sat. ")
	for c := range 256 {
		b.WriteByte(byte(c))
	}
	b.WriteString(" é ☃ 日本 \n\t end")
	return b.String()
}()

// childMain is the child: it loads path (checked by Load, or straight
// in llama.cpp), tokenizes childText, and evaluates and generates a few
// tokens. Exit status 0: all ran; 3: refused with an error (printed).
// Anything llama.cpp aborts on kills it by a signal.
func childMain(path string) int {
	lim := syscall.Rlimit{Cur: childLimit, Max: childLimit}
	_ = syscall.Setrlimit(syscall.RLIMIT_AS, &lim)
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{}) // no core files
	var err error
	if os.Getenv(childUncheckedEnv) == "1" {
		err = exerciseUnchecked(path)
	} else {
		err = exerciseChecked(path)
	}
	// Peak memory of this process since its exec (rusage's maxrss would
	// count the parent's memory, inherited across fork and exec).
	if st, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			if strings.HasPrefix(l, "VmHWM:") {
				fmt.Fprintln(os.Stderr, "child-"+l)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "refused:", err)
		return 3
	}
	return 0
}

// exerciseChecked runs a file through LoadTokenizer and Load and uses
// what loads.
func exerciseChecked(path string) error {
	tok, terr := LoadTokenizer(path)
	if terr == nil {
		for _, special := range []bool{false, true} {
			if _, err := tok.Tokenize(childText, special); err != nil {
				return err
			}
		}
		tok.Close()
	}
	opts := Options{ContextSize: 64, Sequences: 2, Threads: 1, BatchSize: 16}
	if o := os.Getenv(childOptionsEnv); o != "" {
		if err := json.Unmarshal([]byte(o), &opts); err != nil {
			return err
		}
	}
	m, err := Load(path, opts)
	if err != nil {
		return errors.Join(terr, err)
	}
	defer m.Close()
	for id := range min(m.Vocab().Len(), 2000) {
		m.model.TokenToPiece(id)
	}
	ctx := context.Background()
	if _, err := decode.Complete(ctx, m, childText[:40], decode.Options{MaxTokens: 4, TopLogprobs: 3}); err != nil {
		return err
	}
	if _, err := decode.CompleteN(ctx, m, "Once upon", 2, decode.Options{MaxTokens: 3, Sampling: decode.SamplingOptions{Temperature: 1}}); err != nil {
		return err
	}
	_, err = decode.Score(ctx, m, " the cat", decode.ScoreOptions{Context: childText[:20]})
	return err
}

// exerciseUnchecked does what exerciseChecked does with none of reins'
// checks: the file goes to llama.cpp as it is.
func exerciseUnchecked(path string) error {
	backendInit.Do(ollamallama.BackendInit)
	model, err := ollamallama.LoadModelFromFile(path, ollamallama.ModelParams{UseMmap: true, Progress: func(float32) {}})
	if err != nil {
		return err
	}
	toks, err := model.Tokenize(childText, true, false)
	if err != nil {
		return err
	}
	for id := range min(model.NumVocab(), 2000) {
		model.TokenToPiece(id)
	}
	lctx, err := ollamallama.NewContextWithModel(model, ollamallama.NewContextParams(256, 16, 1, 1, ml.FlashAttentionDisabled, ""))
	if err != nil {
		return err
	}
	batch, err := ollamallama.NewBatch(16, 1, 0)
	if err != nil {
		return err
	}
	for i, t := range toks[:min(len(toks), 8)] {
		batch.Add(t, nil, i, true, 0)
	}
	return lctx.Decode(batch)
}

// childResult is how a child ended.
type childResult struct {
	code     int // exit status, -1 when killed
	signal   syscall.Signal
	timedOut bool
	output   string
	elapsed  time.Duration
	maxRSS   int64 // peak resident memory, bytes (0: the child died first)
}

func (r childResult) crashed() bool { return r.signal != 0 || r.timedOut }

func (r childResult) String() string {
	switch {
	case r.timedOut:
		return "hung (killed after " + r.elapsed.Round(time.Second).String() + ")"
	case r.signal != 0:
		return "killed by " + r.signal.String()
	}
	return fmt.Sprintf("exit %d", r.code)
}

// runChild loads path in a child process.
func runChild(t testing.TB, path string, unchecked bool) childResult {
	t.Helper()
	return runChildEnv(t, path, unchecked)
}

// runChildEnv is runChild with more environment variables for the child.
func runChildEnv(t testing.TB, path string, unchecked bool, env ...string) childResult {
	t.Helper()
	env = append(env, childEnv+"="+path)
	if unchecked {
		env = append(env, childUncheckedEnv+"=1")
	}
	return runChildWithin(t, childTimeout, env...)
}

// runChildWithin runs the test binary as a child with the environment
// variables env (which choose what TestMain runs), killing it as hung
// after timeout.
func runChildWithin(t testing.TB, timeout time.Duration, env ...string) childResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	// No gdb on abort (ggml starts one to print a backtrace), and a crash
	// in C or Go kills the child by its signal instead of exiting 2.
	cmd.Env = append(os.Environ(), "GGML_NO_BACKTRACE=1", "GOTRACEBACK=crash")
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	r := childResult{output: out.String(), elapsed: time.Since(start)}
	if _, rest, ok := strings.Cut(r.output, "child-VmHWM:"); ok {
		var kb int64
		fmt.Sscan(rest, &kb)
		r.maxRSS = kb << 10
	}
	if len(r.output) > 6000 { // what failed comes first, then Go's dump
		r.output = r.output[:4000] + "\n...\n" + r.output[len(r.output)-2000:]
	}
	if ctx.Err() != nil {
		r.timedOut = true
		return r
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.signal = ws.Signal()
		}
	default:
		t.Fatalf("run child: %v", err)
	}
	return r
}

// model is a GGUF file's metadata and tensors, to edit and write back.
type model struct {
	kvs     []gguf.KV
	tensors []gguf.Tensor
}

// readModel reads a GGUF file into a model.
func readModel(t testing.TB, path string) *model {
	t.Helper()
	f, err := gguf.Open(path)
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	m := &model{}
	for _, k := range f.Keys {
		m.kvs = append(m.kvs, gguf.KV{Key: k, Value: f.KV[k].V})
	}
	for _, ti := range f.Tensors {
		off := f.DataOffset + int64(ti.Offset)
		m.tensors = append(m.tensors, gguf.Tensor{Name: ti.Name, Shape: ti.Shape, Type: ti.Type, Raw: data[off : off+int64(ti.Size())]})
	}
	return m
}

func (m *model) clone() *model {
	return &model{kvs: append([]gguf.KV(nil), m.kvs...), tensors: append([]gguf.Tensor(nil), m.tensors...)}
}

// set sets (or adds) a key.
func (m *model) set(key string, v any) *model {
	for i := range m.kvs {
		if m.kvs[i].Key == key {
			m.kvs[i].Value = v
			return m
		}
	}
	m.kvs = append(m.kvs, gguf.KV{Key: key, Value: v})
	return m
}

func (m *model) get(key string) any {
	for _, kv := range m.kvs {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

func (m *model) del(key string) *model {
	for i := range m.kvs {
		if m.kvs[i].Key == key {
			m.kvs = append(m.kvs[:i], m.kvs[i+1:]...)
			return m
		}
	}
	return m
}

// tokens returns a copy of the token list, to edit and set back.
func (m *model) tokens() []string {
	toks, _ := m.get("tokenizer.ggml.tokens").([]string)
	return append([]string(nil), toks...)
}

// tensor replaces tensor name by one of the given shape and type, of
// zero bytes (nil shape: removes it).
func (m *model) tensor(name string, typ gguf.TensorType, shape ...uint64) *model {
	for i := range m.tensors {
		if m.tensors[i].Name != name {
			continue
		}
		if shape == nil {
			m.tensors = append(m.tensors[:i], m.tensors[i+1:]...)
			return m
		}
		ti := gguf.TensorInfo{Shape: shape, Type: typ}
		m.tensors[i] = gguf.Tensor{Name: name, Shape: shape, Type: typ, Raw: make([]byte, ti.Size())}
		return m
	}
	ti := gguf.TensorInfo{Shape: shape, Type: typ}
	m.tensors = append(m.tensors, gguf.Tensor{Name: name, Shape: shape, Type: typ, Raw: make([]byte, ti.Size())})
	return m
}

func (m *model) write(t testing.TB, path string) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, gguf.Write(&buf, m.kvs, m.tensors))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	return path
}

// hostileCase is a model file that breaks one thing llama.cpp assumes.
type hostileCase struct {
	name string
	edit func(m *model)
	want string // in Load's error
	// aborts: llama.cpp, given the file without reins' checks, dies by a
	// signal (checked in a child process).
	aborts bool
}

// storiesCase marks the cases that edit stories260K (SentencePiece)
// instead of the fixture.
const storiesCase = "SentencePiece: "

// hostileCases break the fixture model (a llama model with a gpt2
// vocabulary) one way each.
var hostileCases = []hostileCase{
	{"empty token list", func(m *model) {
		m.set("tokenizer.ggml.tokens", []string{}).set("tokenizer.ggml.token_type", []int32{})
	}, "key tokenizer.ggml.tokens: 0 tokens, want 1 to", true},
	{"duplicate tokens", func(m *model) {
		toks := m.tokens()
		toks[260] = toks[259]
		m.set("tokenizer.ggml.tokens", toks)
	}, "tokens 259 and 260 are both", true},
	{"empty token named like another", func(m *model) {
		toks := m.tokens()
		toks[100], toks[101] = "[EMPTY_101]", ""
		m.set("tokenizer.ggml.tokens", toks)
	}, `tokens 100 and 101 are both "[EMPTY_101]"`, true},
	{"NUL in a token", func(m *model) {
		toks := m.tokens()
		toks[262] = "ab\x00cd"
		m.set("tokenizer.ggml.tokens", toks)
	}, "holds a NUL byte", false},
	{"zero dimension", func(m *model) {
		m.tensor("blk.0.attn_q.weight", gguf.TensorF32, 272, 0)
	}, `tensor "blk.0.attn_q.weight": dimension 1 is 0`, true},
	{"block_count 0", func(m *model) { m.set("llama.block_count", uint32(0)) }, "key llama.block_count: 0, want 1 to 512", true},
	{"block_count past llama.cpp's arrays", func(m *model) { m.set("llama.block_count", uint32(600)) }, "key llama.block_count: 600, want 1 to 512", false},
	{"NaN epsilon", func(m *model) {
		m.set("llama.attention.layer_norm_rms_epsilon", float32(math.NaN()))
	}, "key llama.attention.layer_norm_rms_epsilon: NaN, want a number", true},
	{"negative epsilon", func(m *model) {
		m.set("llama.attention.layer_norm_rms_epsilon", float32(-1))
	}, "key llama.attention.layer_norm_rms_epsilon: -1", true},
	{"epsilon of the wrong type", func(m *model) {
		m.set("llama.attention.layer_norm_rms_epsilon", 1e-5)
	}, "key llama.attention.layer_norm_rms_epsilon: a float64, want a float32", false},
	{"heads not dividing the embedding", func(m *model) {
		m.set("llama.attention.head_count", uint32(5)).set("llama.attention.head_count_kv", uint32(5))
	}, "5 does not divide embedding_length 272", false},
	{"kv heads not dividing heads", func(m *model) {
		m.set("llama.attention.head_count", uint32(8)).set("llama.attention.head_count_kv", uint32(3)).set("llama.rope.dimension_count", uint32(34))
	}, "head_count_kv: 3 does not divide attention.head_count 8", false},
	{"zero kv heads", func(m *model) { m.set("llama.attention.head_count_kv", uint32(0)) }, "head_count_kv: 0, want 1 to 4", false},
	{"rope dimensions off the head size", func(m *model) { m.set("llama.rope.dimension_count", uint32(32)) }, "rope.dimension_count: 32 differs from the head size 68", false},
	{"value length off the key length", func(m *model) {
		m.set("llama.attention.value_length", uint32(34)).tensor("blk.0.attn_v.weight", gguf.TensorF32, 272, 136)
	}, "value_length: 34 differs from the key length 68", true},
	{"unknown rope scaling", func(m *model) { m.set("llama.rope.scaling.type", "bogus") }, `rope.scaling.type: "bogus", want none, linear or yarn`, true},
	{"empty rope scaling (found by FuzzLoadEdits)", func(m *model) { m.set("llama.rope.scaling.type", "") }, `rope.scaling.type: "", want none, linear or yarn`, true},
	{"vocab_size off the token list", func(m *model) { m.set("llama.vocab_size", uint32(300)) }, "vocab_size: 300, but tokenizer.ggml.tokens lists 265 tokens", false},
	{"output rows off the vocabulary", func(m *model) {
		m.tensor("output.weight", gguf.TensorF32, 272, 264)
	}, `tensor "output.weight": shape [272 264], want [272 265]`, false},
	{"a vector in F16", func(m *model) {
		m.tensor("output_norm.weight", gguf.TensorF16, 272)
	}, `"output_norm.weight": type F16, want F32 for a vector`, false},
	{"a matrix of integers", func(m *model) {
		m.tensor("blk.0.ffn_up.weight", gguf.TensorI32, 272, 32)
	}, `"blk.0.ffn_up.weight": type I32 is not a weight type`, true},
	{"token type out of range", func(m *model) {
		tt := append([]int32(nil), m.get("tokenizer.ggml.token_type").([]int32)...)
		tt[7] = 9
		m.set("tokenizer.ggml.token_type", tt)
	}, "token 7 has type 9", false},
	{"token types as bytes", func(m *model) {
		tt := m.get("tokenizer.ggml.token_type").([]int32)
		b := make([]uint8, len(tt))
		m.set("tokenizer.ggml.token_type", b)
	}, "token_type: a array of 265 uint8 values, want an array of 265 int32 values", false},
	{"short scores", func(m *model) { m.set("tokenizer.ggml.scores", []float32{0, 1}) }, "scores: a array of 2 float32 values, want an array of 265", false},
	{"scores as strings", func(m *model) { m.set("tokenizer.ggml.scores", m.tokens()) }, "scores: a array of 265 string values", false},
	{"no merges", func(m *model) { m.del("tokenizer.ggml.merges") }, "merges is missing", false},
	{"merges as integers", func(m *model) { m.set("tokenizer.ggml.merges", []int32{1, 2}) }, "merges: a array of 2 int32 values, want an array of strings", true},
	{storiesCase + "no token for a byte", func(m *model) {
		// stories260K: <0xFF> is token 258; 0xFF is in no other token.
		toks, tt := m.tokens(), append([]int32(nil), m.get("tokenizer.ggml.token_type").([]int32)...)
		toks[258], tt[258] = "no byte", 1
		m.set("tokenizer.ggml.tokens", toks).set("tokenizer.ggml.token_type", tt)
	}, "no token for byte 0xFF (<0xFF>): llama.cpp's SentencePiece tokenizer aborts", true},
	{storiesCase + "byte token misspelled", func(m *model) {
		toks := m.tokens()
		toks[258] = "<0xZZ>"
		m.set("tokenizer.ggml.tokens", toks)
	}, `byte token 258 is spelled "<0xZZ>", want <0xNN>`, false},
	{storiesCase + "scores as strings", func(m *model) { m.set("tokenizer.ggml.scores", m.tokens()) }, "scores: a array of 512 string values", false},
	{"BOS asked for and missing", func(m *model) {
		m.del("tokenizer.ggml.bos_token_id").set("tokenizer.ggml.pre", "glm4").set("tokenizer.ggml.add_bos_token", true)
	}, "add_bos_token: the file asks for a bos token and has none", true},
	{"default EOS outside a small vocabulary", func(m *model) {
		m.del("tokenizer.ggml.eos_token_id")
		toks, tt := m.tokens(), m.get("tokenizer.ggml.token_type").([]int32)
		m.set("tokenizer.ggml.tokens", toks[:258]).set("tokenizer.ggml.token_type", tt[:258]).set("llama.vocab_size", uint32(258)).set("tokenizer.ggml.merges", []string{})
		m.tensor("token_embd.weight", gguf.TensorF32, 272, 258).tensor("output.weight", gguf.TensorF32, 272, 258)
	}, "", false}, // 11 is inside 258 tokens: accepted
	{"unchecked architecture", func(m *model) { m.set("general.architecture", "gpt2") }, `general.architecture: "gpt2": reins checks a model file before llama.cpp loads it and knows the architectures llama only`, false},
	{"split model", func(m *model) { m.set("split.count", uint16(3)) }, "split.count: 3: a model split across files is not supported", false},
	{"split count of the wrong type", func(m *model) { m.set("split.count", uint32(3)) }, "split.count: a uint32, want a uint16", false},
	{"mixture of experts", func(m *model) { m.set("llama.expert_count", uint32(8)) }, "expert_count: 8: mixture-of-experts", false},
	{"context length as a string", func(m *model) { m.set("llama.context_length", "512") }, "key llama.context_length: a string, want a uint32", false},
	{"alignment of 1 (found by FuzzLoadEdits)", func(m *model) { m.set("general.alignment", uint32(1)) }, "not a multiple of 32, which llama.cpp requires (general.alignment 1)", true},
	{"alignment as uint64", func(m *model) { m.set("general.alignment", uint64(32)) }, "general.alignment must be a uint32 power of two", true},
	{"extra tensor", func(m *model) { m.tensor("blk.7.attn_q.weight", gguf.TensorF32, 4) }, `"blk.7.attn_q.weight": not a tensor of a llama model of 1 layers`, false},
	{"missing tensor", func(m *model) { m.tensor("blk.0.ffn_up.weight", 0) }, `tensor "blk.0.ffn_up.weight" is missing`, false},
	{"classifier", func(m *model) { m.set("llama.classifier.output_labels", []string{"a"}) }, "classifier models", false},
	{"tokenizer unknown to reins", func(m *model) { m.set("tokenizer.ggml.model", "bert") }, `tokenizer.ggml.model: "bert": reins supports`, false},
}

// TestHostileModelFiles checks that each hostile file is refused by the
// Go checks with an error that names the key or tensor and its byte
// offset, and, for the cases marked, that llama.cpp given the same file
// unchecked dies by a signal in a child process: the check is what
// stands between the file and an abort.
func TestHostileModelFiles(t *testing.T) {
	base := readModel(t, fixturePath(t))
	stories := readModel(t, shared.Path(t, "models/stories260K.gguf"))
	dir := t.TempDir()
	for i, tc := range hostileCases {
		t.Run(tc.name, func(t *testing.T) {
			m := base.clone()
			if strings.HasPrefix(tc.name, storiesCase) {
				m = stories.clone()
			}
			tc.edit(m)
			path := m.write(t, filepath.Join(dir, fmt.Sprintf("hostile%d.gguf", i)))
			lm, err := Load(path, Options{ContextSize: 64})
			if tc.want == "" {
				require.NoError(t, err)
				lm.Close()
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Regexp(t, `: byte \d+: `, err.Error(), "the error gives the byte offset")
			if tc.aborts && !testing.Short() {
				r := runChild(t, path, true)
				assert.True(t, r.crashed(), "llama.cpp without reins' checks: %s\n%s", r, r.output)
			}
		})
	}
}

// TestAcceptedModelsRunInAChild loads the test models in a child, checked:
// the harness itself must report a clean run.
func TestAcceptedModelsRunInAChild(t *testing.T) {
	r := runChild(t, fixturePath(t), false)
	require.Equal(t, 0, r.code, "%s\n%s", r, r.output)
	r = runChild(t, fixturePath(t), true)
	require.Equal(t, 0, r.code, "%s\n%s", r, r.output)
}
