package llama

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/reins-go/reins/internal/fixture"
	"github.com/reins-go/reins/internal/gguf"
	"github.com/reins-go/reins/internal/shared"
)

// fuzzDataBytes is the tensor data appended to every fuzzed header: all
// zeros, as much as the largest seed model needs.
const fuzzDataBytes = 2 << 20

// headerOf returns the header of a GGUF file: everything before its
// tensor data.
func headerOf(t testing.TB, path string) []byte {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Size-f.DataOffset > fuzzDataBytes {
		t.Fatalf("%s: %d bytes of tensor data, more than fuzzDataBytes", path, f.Size-f.DataOffset)
	}
	return data[:f.DataOffset]
}

// FuzzLoadChecked mutates the header of small valid models (the fixture,
// a llama model with a byte-level BPE vocabulary, and stories260K, one
// with SentencePiece) over zero tensor data. Whatever the Go checks
// accept (as a model, or as a vocabulary for LoadTokenizer) is loaded in
// llama.cpp in a child process, tokenized, evaluated and generated
// from: the child must not die by a signal or hang. llama.cpp may still
// refuse the file with an error.
//
// Every input the checks accept costs a child process (about half a
// second), so the fuzzer is slow:
//
//	go test ./backends/llama -run '^$' -fuzz FuzzLoadChecked -parallel 1 -fuzztime 30m
func FuzzLoadChecked(f *testing.F) {
	dir := f.TempDir()
	fx, err := fixture.Path(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(headerOf(f, fx))
	if d := shared.Dir(); d != "" {
		f.Add(headerOf(f, filepath.Join(d, "models", "stories260K.gguf")))
	}
	zeros := make([]byte, fuzzDataBytes+32)
	f.Fuzz(func(t *testing.T, header []byte) {
		if len(header) > 1<<20 {
			return
		}
		file := append(append([]byte(nil), header...), zeros[:fuzzDataBytes+(32-len(header)%32)%32]...)
		gf, err := gguf.Read(bytes.NewReader(file), int64(len(file)), "fuzz.gguf")
		if err != nil {
			return
		}
		_, merr := checkModelFile(gf)
		verr := checkVocabFile(gf)
		if merr != nil && verr != nil {
			return
		}
		path := filepath.Join(t.TempDir(), "fuzz.gguf")
		if err := os.WriteFile(path, file, 0o644); err != nil {
			t.Fatal(err)
		}
		r := runChild(t, path, false)
		if r.crashed() {
			t.Fatalf("the Go checks accepted a file (model: %v; vocabulary: %v) that crashed llama.cpp: %s\n%s", merr, verr, r, r.output)
		}
		if r.code != 0 && merr == nil {
			t.Logf("llama.cpp refused a file the checks accepted: %s", lastLines(r.output, 3))
		}
	})
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := bytes.Split(bytes.TrimSpace([]byte(s)), []byte("\n"))
	return string(bytes.Join(lines[max(0, len(lines)-n):], []byte("\n")))
}

// FuzzLoadEdits applies up to six edits drawn from its input to a valid
// model (the fixture, or stories260K): a metadata value set to a
// boundary number or another type, a key removed, a token's text or
// type changed, a tensor reshaped, retyped, removed or added. The file
// stays well-formed, so more of these reach llama.cpp than FuzzLoadChecked's
// byte mutations; whatever the checks accept is loaded in a child
// process the same way.
//
//	go test ./backends/llama -run '^$' -fuzz FuzzLoadEdits -parallel 1 -fuzzminimizetime 3s -fuzztime 30m -timeout 0
func FuzzLoadEdits(f *testing.F) {
	dir := f.TempDir()
	fx, err := fixture.Path(dir)
	if err != nil {
		f.Fatal(err)
	}
	bases := []*model{readModel(f, fx)}
	if d := shared.Dir(); d != "" {
		bases = append(bases, readModel(f, filepath.Join(d, "models", "stories260K.gguf")))
	}
	f.Add([]byte{0})
	f.Add([]byte{0, 0, 3, 9})          // block_count
	f.Add([]byte{1, 4, 2, 0})          // a token's text
	f.Add([]byte{0, 7, 1, 2, 8})       // a tensor's type
	f.Add([]byte{1, 1, 0, 5, 2, 3})    // epsilon
	f.Add([]byte{0, 8, 0, 1, 6, 0, 4}) // special token ids
	f.Fuzz(func(t *testing.T, in []byte) {
		r := &editReader{b: in}
		m := bases[int(r.byte())%len(bases)].clone()
		for n := 0; n < 6 && !r.done(); n++ {
			editModel(m, r)
		}
		var buf bytes.Buffer
		if gguf.Write(&buf, m.kvs, m.tensors) != nil {
			return
		}
		gf, err := gguf.Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "edit.gguf")
		if err != nil {
			return
		}
		_, merr := checkModelFile(gf)
		verr := checkVocabFile(gf)
		if merr != nil && verr != nil {
			return
		}
		path := filepath.Join(t.TempDir(), "edit.gguf")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if res := runChild(t, path, false); res.crashed() {
			t.Fatalf("the Go checks accepted a file (model: %v; vocabulary: %v) that crashed llama.cpp: %s\n%s", merr, verr, res, res.output)
		}
	})
}

// editReader draws edit choices from a fuzz input; past its end, zeros.
type editReader struct {
	b []byte
	i int
}

func (r *editReader) done() bool { return r.i >= len(r.b) }

func (r *editReader) byte() byte {
	if r.i >= len(r.b) {
		return 0
	}
	r.i++
	return r.b[r.i-1]
}

func (r *editReader) n(k int) int { return int(r.byte()) % k }

func (r *editReader) u32() uint32 {
	return uint32(r.byte()) | uint32(r.byte())<<8 | uint32(r.byte())<<16 | uint32(r.byte())<<24
}

// Values and names edits draw from.
var (
	editInts = []uint32{0, 1, 2, 3, 4, 5, 7, 8, 16, 32, 34, 64, 68, 136, 255, 256, 258, 264, 265, 272, 511, 512, 513, 4096,
		1 << 16, 1<<31 - 1, 1 << 31, 1<<32 - 1}
	editFloats = []float32{0, -1, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-30, 1e-5, 0.5, 1, 2, 1e4, 1e30,
		math.MaxFloat32, math.SmallestNonzeroFloat32}
	editIntKeys = []string{"llama.context_length", "llama.embedding_length", "llama.block_count", "llama.feed_forward_length",
		"llama.attention.head_count", "llama.attention.head_count_kv", "llama.attention.key_length", "llama.attention.value_length",
		"llama.rope.dimension_count", "llama.vocab_size", "llama.expert_count", "llama.expert_used_count",
		"llama.rope.scaling.original_context_length", "general.file_type", "general.alignment", "split.count",
		"tokenizer.ggml.token_type_count"}
	editFloatKeys = []string{"llama.attention.layer_norm_rms_epsilon", "llama.rope.freq_base", "llama.rope.scaling.factor",
		"llama.rope.scale_linear", "llama.rope.scaling.attn_factor"}
	editStringKeys = []string{"llama.rope.scaling.type", "tokenizer.ggml.pre", "tokenizer.ggml.model", "general.architecture", "general.name"}
	editStrings    = []string{"", "none", "linear", "yarn", "longrope", "llama", "gpt2", "glm4", "chatglm-bpe", "llama3", "default", "x\x00"}
	editBoolKeys   = []string{"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token", "tokenizer.ggml.add_sep_token",
		"tokenizer.ggml.add_space_prefix", "tokenizer.ggml.remove_extra_whitespaces", "llama.rope.scaling.finetuned"}
	editTokenTexts = []string{"", "<s>", "</s>", "<unk>", "<|endoftext|>", "<|eot_id|>", "<|end|>", "<|return|>", "<|call|>",
		"[EMPTY_3]", "<0x41>", "<0xZZ>", "<0x", " ", "\x00", "Ġ", "▁", "▁▁", "\xff\xfe", "a b", "\n"}
	editTensorNames = []string{"rope_freqs.weight", "output.weight", "blk.0.attn_q.bias", "blk.0.attn_k.bias", "blk.0.ffn_up.bias",
		"blk.1.attn_q.weight", "blk.0.attn_q.weight", "blk.0.ffn_down.weight", "token_embd.weight", "output_norm.weight"}
	editDims = []uint64{1, 2, 4, 8, 16, 32, 34, 64, 68, 136, 172, 256, 265, 272, 288, 512}
)

// editModel applies one edit drawn from r.
func editModel(m *model, r *editReader) {
	specials := []string{"bos", "eos", "eot", "eom", "unknown", "seperator", "padding", "fim_pad", "fim_sep"}
	switch r.n(10) {
	case 0: // an integer key, as a uint32 or another type
		key, v := editIntKeys[r.n(len(editIntKeys))], editInts[r.n(len(editInts))]
		switch r.n(8) {
		case 0:
			m.set(key, uint64(v))
		case 1:
			m.set(key, int32(v))
		case 2:
			m.set(key, uint16(v))
		case 3:
			m.set(key, float32(v))
		default:
			m.set(key, v)
		}
	case 1: // a float key
		key, v := editFloatKeys[r.n(len(editFloatKeys))], editFloats[r.n(len(editFloats))]
		if r.n(6) == 0 {
			m.set(key, float64(v))
		} else {
			m.set(key, v)
		}
	case 2: // a key removed
		if len(m.kvs) > 0 {
			m.kvs = append(m.kvs[:0:0], m.kvs...)
			i := r.n(len(m.kvs))
			m.kvs = append(m.kvs[:i], m.kvs[i+1:]...)
		}
	case 3: // a string key
		m.set(editStringKeys[r.n(len(editStringKeys))], editStrings[r.n(len(editStrings))])
	case 4: // a token's text
		toks := m.tokens()
		if len(toks) == 0 {
			return
		}
		i := int(r.u32() % uint32(len(toks)))
		if r.n(3) == 0 {
			toks[i] = toks[int(r.u32()%uint32(len(toks)))]
		} else {
			toks[i] = editTokenTexts[r.n(len(editTokenTexts))]
		}
		m.set("tokenizer.ggml.tokens", toks)
	case 5: // a token's type
		if tt, ok := m.get("tokenizer.ggml.token_type").([]int32); ok {
			tt = append([]int32(nil), tt...)
			if len(tt) > 0 {
				tt[int(r.u32()%uint32(len(tt)))] = int32(r.n(9)) - 1
			}
			m.set("tokenizer.ggml.token_type", tt)
		}
	case 6: // a flag
		key := editBoolKeys[r.n(len(editBoolKeys))]
		if r.n(5) == 0 {
			m.set(key, uint8(1))
		} else {
			m.set(key, r.n(2) == 1)
		}
	case 7: // a tensor reshaped, retyped, removed or added
		name := editTensorNames[r.n(len(editTensorNames))]
		if r.n(6) == 0 {
			m.tensor(name, 0)
			return
		}
		typ := gguf.TensorF32
		if r.n(3) == 0 {
			typ = gguf.TensorType(r.n(40))
		}
		var shape []uint64
		for range 1 + r.n(2) {
			shape = append(shape, editDims[r.n(len(editDims))])
		}
		ti := gguf.TensorInfo{Shape: shape, Type: typ}
		if typ.Known() && shape[0]%uint64(typ.BlockSize()) == 0 && ti.Size() < 8<<20 {
			m.tensor(name, typ, shape...)
		}
	case 8: // a special token id
		key := "tokenizer.ggml." + specials[r.n(len(specials))] + "_token_id"
		if r.n(4) == 0 {
			m.del(key)
		} else {
			m.set(key, editInts[r.n(len(editInts))])
		}
	case 9: // an array replaced
		toks := m.tokens()
		if len(toks) == 0 {
			return
		}
		switch r.n(4) {
		case 0:
			m.set("tokenizer.ggml.scores", make([]float32, len(toks)-r.n(2)))
		case 1:
			m.set("tokenizer.ggml.token_type", make([]int32, len(toks)+r.n(2)))
		case 2:
			m.set("tokenizer.ggml.merges", []string{"a", " ", "a b c", "Ġ Ġ", "\n \n"}[:r.n(6)])
		case 3:
			m.set("tokenizer.ggml.tokens", toks[:1+int(r.u32()%uint32(len(toks)))])
		}
	}
}
