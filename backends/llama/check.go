package llama

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/reins-go/reins/internal/gguf"
)

// What llama.cpp assumes of a model file without checking it.
//
// gguf.Open checks the file's structure (counts, lengths, shapes, types
// and offsets against the file). llama.cpp then trusts much of what the
// metadata says: a token list may not be empty nor hold duplicates, a
// dimension may not be 0, the layer count must fit its arrays, an
// epsilon must be a number, a key it reads must have the type it reads,
// a tensor's type must be one its matrix product handles, and so on. A
// file that breaks one of these makes llama.cpp abort the process (a
// failed GGML_ASSERT, an exception through its C API, a division by
// zero) instead of returning an error. The checks below cover every
// metadata key and tensor llama.cpp reads for the architectures listed
// in checkedArchitectures (from llama.cpp's llama_model::load_hparams,
// load_tensors and llama_vocab::impl::load, and the llama graph, as
// vendored by github.com/ollama/ollama v0.17.4), and FuzzLoadChecked
// loads whatever they accept in llama.cpp, in a child process.

// checkedArchitectures are the architectures whose metadata and tensors
// Load checks; any other is refused before llama.cpp sees it.
var checkedArchitectures = []string{"llama"}

// Bounds reins puts on a model's shape, beyond llama.cpp's.
const (
	maxLayers = 512     // LLAMA_MAX_LAYERS: llama.cpp's per-layer arrays
	maxVocab  = 1 << 22 // tokens (gguf.MaxArrayLen)
)

// tensorAlignment is ggml's TENSOR_ALIGNMENT.
const tensorAlignment = 32

// llamaNull is llama.cpp's LLAMA_TOKEN_NULL.
const llamaNull = -1

// modelInfo is what the checks learn of a model, for Load's defaults.
type modelInfo struct {
	arch        string
	contextLen  int64 // training context
	layers      int64
	embd        int64
	heads       int64
	headsKV     int64
	headDim     int64
	vocab       int64
	params      uint64 // parameters (tensor elements)
	tensorBytes uint64
}

// kvBytesPerToken is what one token takes in llama.cpp's KV cache (F16
// keys and values, every layer).
func (mi *modelInfo) kvBytesPerToken() int64 {
	return mi.layers * 2 * mi.headsKV * mi.headDim * 2
}

// checker reports the first problem of a file.
type checker struct {
	f *gguf.File
}

// errAt is an error about the metadata key key (its entry's offset).
func (c *checker) errKey(key string, format string, args ...any) error {
	return &gguf.Error{Path: c.f.Path, Offset: c.f.KV[key].Offset, Msg: "key " + key + ": " + fmt.Sprintf(format, args...)}
}

func (c *checker) errTensor(t gguf.TensorInfo, format string, args ...any) error {
	return &gguf.Error{Path: c.f.Path, Offset: t.At, Msg: fmt.Sprintf("tensor %q: ", t.Name) + fmt.Sprintf(format, args...)}
}

func (c *checker) errFile(format string, args ...any) error {
	return &gguf.Error{Path: c.f.Path, Offset: 0, Msg: fmt.Sprintf(format, args...)}
}

// typed returns the value at key when present, and an error when it is
// not of type want: llama.cpp reads every key with one type and refuses
// (or, for some, aborts on) any other.
func (c *checker) typed(key string, want gguf.ValueType) (gguf.Value, bool, error) {
	v, ok := c.f.KV[key]
	if !ok {
		return v, false, nil
	}
	if v.Type != want {
		what := v.Type.String()
		if v.Type == gguf.TypeArray {
			what = "array of " + v.Elem.String()
		}
		return v, true, c.errKey(key, "a %s, want a %s", what, want)
	}
	return v, true, nil
}

// u32 reads an optional uint32 key in [lo, hi]; def when absent.
func (c *checker) u32(key string, required bool, def, lo, hi int64) (int64, error) {
	v, ok, err := c.typed(key, gguf.TypeUint32)
	if err != nil {
		return 0, err
	}
	if !ok {
		if required {
			return 0, c.errFile("key %s is missing", key)
		}
		return def, nil
	}
	n := int64(v.V.(uint32))
	if n < lo || n > hi {
		return 0, c.errKey(key, "%d, want %d to %d", n, lo, hi)
	}
	return n, nil
}

// f32 reads an optional float32 key, finite and in [lo, hi]; def when
// absent.
func (c *checker) f32(key string, required bool, def, lo, hi float64) (float64, error) {
	v, ok, err := c.typed(key, gguf.TypeFloat32)
	if err != nil {
		return 0, err
	}
	if !ok {
		if required {
			return 0, c.errFile("key %s is missing", key)
		}
		return def, nil
	}
	x := float64(v.V.(float32))
	if math.IsNaN(x) || math.IsInf(x, 0) || x < lo || x > hi {
		return 0, c.errKey(key, "%v, want a number from %g to %g", x, lo, hi)
	}
	return x, nil
}

func (c *checker) str(key string, required bool) (string, error) {
	v, ok, err := c.typed(key, gguf.TypeString)
	if err != nil {
		return "", err
	}
	if !ok {
		if required {
			return "", c.errFile("key %s is missing", key)
		}
		return "", nil
	}
	return v.V.(string), nil
}

func (c *checker) boolean(key string) error {
	_, _, err := c.typed(key, gguf.TypeBool)
	return err
}

// checkGeneral checks the general.* and split.* keys llama.cpp reads of
// any file.
func (c *checker) checkGeneral() error {
	if _, err := c.str("general.name", false); err != nil {
		return err
	}
	if _, err := c.u32("general.file_type", false, 0, 0, math.MaxUint32); err != nil {
		return err
	}
	// A split model makes llama.cpp open further files named after this
	// one; reins loads one file.
	if v, ok := c.f.KV["split.count"]; ok {
		n, isU16 := v.V.(uint16)
		if !isU16 {
			return c.errKey("split.count", "a %s, want a uint16", v.Type)
		}
		if n > 1 {
			return c.errKey("split.count", "%d: a model split across files is not supported; merge it into one file (llama-gguf-split --merge)", n)
		}
	}
	return nil
}

// checkModelFile checks a file that Load will hand to llama.cpp whole.
func checkModelFile(f *gguf.File) (*modelInfo, error) {
	c := &checker{f: f}
	arch, err := c.str("general.architecture", false)
	if err != nil {
		return nil, err
	}
	if arch == "" {
		return nil, c.errFile("no general.architecture key: not a model file")
	}
	if len(f.Tensors) == 0 {
		return nil, c.errFile("it has no tensors (a vocabulary-only file? use vocab.Load)")
	}
	if err := c.checkGeneral(); err != nil {
		return nil, err
	}
	nTokens, err := c.checkVocab()
	if err != nil {
		return nil, err
	}
	switch arch {
	case "llama":
		return c.checkLlama(nTokens)
	}
	return nil, c.errKey("general.architecture", "%q: reins checks a model file before llama.cpp loads it and knows the architectures %s only", arch, strings.Join(checkedArchitectures, ", "))
}

// checkVocabFile checks a file that LoadTokenizer hands to llama.cpp
// for its vocabulary only: llama.cpp then reads no architecture keys
// and no tensors.
func checkVocabFile(f *gguf.File) error {
	c := &checker{f: f}
	if _, err := c.str("general.architecture", true); err != nil {
		return err
	}
	if err := c.checkGeneral(); err != nil {
		return err
	}
	_, err := c.checkVocab()
	return err
}

// checkLlama checks the hyperparameters and tensors of a llama model.
func (c *checker) checkLlama(nTokens int64) (*modelInfo, error) {
	const p = "llama."
	mi := &modelInfo{arch: "llama", vocab: nTokens}
	var err error
	if mi.contextLen, err = c.u32(p+"context_length", true, 0, 1, math.MaxUint32); err != nil {
		return nil, err
	}
	if mi.embd, err = c.u32(p+"embedding_length", true, 0, 1, math.MaxUint32); err != nil {
		return nil, err
	}
	if mi.layers, err = c.u32(p+"block_count", true, 0, 1, maxLayers); err != nil {
		return nil, err
	}
	for _, k := range []string{"expert_count", "expert_used_count", "expert_group_count", "expert_group_used_count"} {
		if n, err := c.u32(p+k, false, 0, 0, math.MaxUint32); err != nil {
			return nil, err
		} else if n != 0 {
			return nil, c.errKey(p+k, "%d: mixture-of-experts models are not among those reins checks", n)
		}
	}
	// llama.cpp also takes per-layer arrays for these three; reins
	// checks the one-value form only.
	nFF, err := c.u32(p+"feed_forward_length", true, 0, 1, math.MaxUint32)
	if err != nil {
		return nil, err
	}
	if mi.heads, err = c.u32(p+"attention.head_count", true, 0, 1, math.MaxUint32); err != nil {
		return nil, err
	}
	if mi.headsKV, err = c.u32(p+"attention.head_count_kv", false, mi.heads, 1, mi.heads); err != nil {
		return nil, err
	}
	if mi.heads%mi.headsKV != 0 {
		return nil, c.errKey(p+"attention.head_count_kv", "%d does not divide attention.head_count %d", mi.headsKV, mi.heads)
	}
	if err := c.boolean(p + "rope.scaling.finetuned"); err != nil {
		return nil, err
	}
	if _, err := c.u32(p+"rope.scaling.original_context_length", false, 0, 1, math.MaxUint32); err != nil {
		return nil, err
	}
	if _, err := c.f32(p+"rope.freq_base", false, 10000, math.SmallestNonzeroFloat32, math.MaxFloat32); err != nil {
		return nil, err
	}
	// Absent, it means linear; present, llama.cpp aborts on a name it
	// does not know (the empty one too).
	switch v, ok, err := c.typed(p+"rope.scaling.type", gguf.TypeString); {
	case err != nil:
		return nil, err
	case !ok:
	case v.V == "longrope":
		return nil, c.errKey(p+"rope.scaling.type", "longrope is not among the rope scalings reins checks")
	case v.V != "none" && v.V != "linear" && v.V != "yarn":
		return nil, c.errKey(p+"rope.scaling.type", "%q, want none, linear or yarn", v.V)
	}
	for _, k := range []string{"rope.scaling.factor", "rope.scale_linear"} {
		if _, err := c.f32(p+k, false, 0, 0, math.MaxFloat32); err != nil {
			return nil, err
		}
	}
	if _, err := c.f32(p+"rope.scaling.attn_factor", false, 1, math.SmallestNonzeroFloat32, math.MaxFloat32); err != nil {
		return nil, err
	}
	// The head size is embedding_length / head_count unless the file
	// says otherwise; llama's graph wants keys, values and the rotary
	// dimensions all that size.
	defHead := int64(0)
	if mi.embd%mi.heads == 0 {
		defHead = mi.embd / mi.heads
	}
	if mi.headDim, err = c.u32(p+"attention.key_length", false, defHead, 1, math.MaxUint32); err != nil {
		return nil, err
	}
	if mi.headDim == 0 {
		return nil, c.errKey(p+"attention.head_count", "%d does not divide embedding_length %d, and there is no attention.key_length", mi.heads, mi.embd)
	}
	if hv, err := c.u32(p+"attention.value_length", false, mi.headDim, 1, math.MaxUint32); err != nil {
		return nil, err
	} else if hv != mi.headDim {
		return nil, c.errKey(p+"attention.value_length", "%d differs from the key length %d", hv, mi.headDim)
	}
	if rot, err := c.u32(p+"rope.dimension_count", false, mi.headDim, 1, math.MaxUint32); err != nil {
		return nil, err
	} else if rot != mi.headDim {
		return nil, c.errKey(p+"rope.dimension_count", "%d differs from the head size %d", rot, mi.headDim)
	}
	if mi.headDim%2 != 0 {
		return nil, c.errKey(p+"attention.head_count", "the head size %d is odd: rotary embeddings take pairs", mi.headDim)
	}
	if mi.headDim > math.MaxInt32/mi.heads {
		return nil, c.errKey(p+"attention.head_count", "%d heads of %d overflow", mi.heads, mi.headDim)
	}
	if n, err := c.u32(p+"vocab_size", false, nTokens, 0, math.MaxUint32); err != nil {
		return nil, err
	} else if n != nTokens {
		return nil, c.errKey(p+"vocab_size", "%d, but tokenizer.ggml.tokens lists %d tokens", n, nTokens)
	}
	if _, err := c.f32(p+"attention.layer_norm_rms_epsilon", true, 0, math.SmallestNonzeroFloat32, 1); err != nil {
		return nil, err
	}
	if _, ok := c.f.KV[p+"classifier.output_labels"]; ok {
		return nil, c.errKey(p+"classifier.output_labels", "classifier models are not among those reins checks")
	}
	if err := c.checkLlamaTensors(mi, nFF); err != nil {
		return nil, err
	}
	return mi, nil
}

// tensorSpec is one tensor llama.cpp looks for: its shape, whether it
// must be there, and whether it is a weight matrix (else a vector).
type tensorSpec struct {
	shape    []int64
	required bool
	matrix   bool
}

// matrixTypes are the types llama.cpp's CPU matrix product handles as
// weights (those with a vec_dot in ggml-cpu's type traits).
var matrixTypes = map[gguf.TensorType]bool{
	gguf.TensorF32: true, gguf.TensorF16: true, gguf.TensorBF16: true,
	gguf.TensorQ4_0: true, gguf.TensorQ4_1: true, gguf.TensorQ5_0: true, gguf.TensorQ5_1: true, gguf.TensorQ8_0: true,
	gguf.TensorMXFP4: true, gguf.TensorQ2_K: true, gguf.TensorQ3_K: true, gguf.TensorQ4_K: true, gguf.TensorQ5_K: true,
	gguf.TensorQ6_K: true, gguf.TensorIQ2_XXS: true, gguf.TensorIQ2_XS: true, gguf.TensorIQ3_XXS: true,
	gguf.TensorIQ3_S: true, gguf.TensorIQ2_S: true, gguf.TensorIQ1_S: true, gguf.TensorIQ1_M: true,
	gguf.TensorIQ4_NL: true, gguf.TensorIQ4_XS: true, gguf.TensorTQ1_0: true, gguf.TensorTQ2_0: true,
}

// checkLlamaTensors checks that the file holds exactly the tensors
// llama.cpp's llama loader creates, in the shapes it expects, of types
// its CPU backend computes with.
func (c *checker) checkLlamaTensors(mi *modelInfo, nFF int64) error {
	e, v := mi.embd, mi.vocab
	q, kv := mi.headDim*mi.heads, mi.headDim*mi.headsKV
	specs := map[string]tensorSpec{
		"token_embd.weight":  {[]int64{e, v}, true, true},
		"output_norm.weight": {[]int64{e}, true, false},
		"output.weight":      {[]int64{e, v}, false, true}, // else the embeddings are reused
		"rope_freqs.weight":  {[]int64{mi.headDim / 2}, false, false},
	}
	for l := range mi.layers {
		b := fmt.Sprintf("blk.%d.", l)
		specs[b+"attn_norm.weight"] = tensorSpec{[]int64{e}, true, false}
		specs[b+"attn_q.weight"] = tensorSpec{[]int64{e, q}, true, true}
		specs[b+"attn_k.weight"] = tensorSpec{[]int64{e, kv}, true, true}
		specs[b+"attn_v.weight"] = tensorSpec{[]int64{e, kv}, true, true}
		specs[b+"attn_output.weight"] = tensorSpec{[]int64{q, e}, true, true}
		specs[b+"ffn_norm.weight"] = tensorSpec{[]int64{e}, true, false}
		specs[b+"ffn_gate.weight"] = tensorSpec{[]int64{e, nFF}, true, true}
		specs[b+"ffn_down.weight"] = tensorSpec{[]int64{nFF, e}, true, true}
		specs[b+"ffn_up.weight"] = tensorSpec{[]int64{e, nFF}, true, true}
		specs[b+"ffn_gate.bias"] = tensorSpec{[]int64{nFF}, false, false}
		specs[b+"ffn_down.bias"] = tensorSpec{[]int64{e}, false, false}
		specs[b+"ffn_up.bias"] = tensorSpec{[]int64{nFF}, false, false}
		// llama.cpp shapes the attention biases by the embedding size, so
		// they fit only a model whose heads span it exactly.
		if q == e {
			specs[b+"attn_q.bias"] = tensorSpec{[]int64{e}, false, false}
			specs[b+"attn_k.bias"] = tensorSpec{[]int64{kv}, false, false}
			specs[b+"attn_v.bias"] = tensorSpec{[]int64{kv}, false, false}
			specs[b+"attn_output.bias"] = tensorSpec{[]int64{e}, false, false}
		}
	}
	found := map[string]bool{}
	for _, t := range c.f.Tensors {
		s, ok := specs[t.Name]
		if !ok {
			return c.errTensor(t, "not a tensor of a llama model of %d layers", mi.layers)
		}
		found[t.Name] = true
		if !sameShape(t.Shape, s.shape) {
			return c.errTensor(t, "shape %v, want %v", t.Shape, s.shape)
		}
		// llama.cpp maps the file and hands ggml pointers into it, which
		// ggml asserts are aligned to 32 bytes: a file whose
		// general.alignment is smaller can place tensors elsewhere.
		if at := uint64(c.f.DataOffset) + t.Offset; at%tensorAlignment != 0 {
			return c.errTensor(t, "its data starts at byte %d of the file, not a multiple of %d, which llama.cpp requires (general.alignment %d)", at, tensorAlignment, c.f.Alignment)
		}
		switch {
		case s.matrix && !matrixTypes[t.Type]:
			return c.errTensor(t, "type %s is not a weight type llama.cpp computes with", t.Type)
		case !s.matrix && t.Type != gguf.TensorF32:
			return c.errTensor(t, "type %s, want F32 for a vector", t.Type)
		}
		mi.params += t.Elements()
		mi.tensorBytes += t.Size()
	}
	for _, name := range requiredOrder(specs) {
		if !found[name] {
			return c.errFile("tensor %q is missing (a llama model of %d layers)", name, mi.layers)
		}
	}
	return nil
}

// requiredOrder lists the required tensors in a stable order.
func requiredOrder(specs map[string]tensorSpec) []string {
	out := []string{"token_embd.weight", "output_norm.weight"}
	for l := 0; ; l++ {
		b := fmt.Sprintf("blk.%d.", l)
		if _, ok := specs[b+"attn_norm.weight"]; !ok {
			break
		}
		for _, n := range []string{"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_down", "ffn_up"} {
			out = append(out, b+n+".weight")
		}
	}
	return out
}

func sameShape(got []uint64, want []int64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != uint64(want[i]) {
			return false
		}
	}
	return true
}

// The tokenizer keys that hold token ids, and the ones that hold flags.
var (
	specialTokenKeys = []string{"bos", "eos", "eot", "eom", "unknown", "seperator", "padding", "mask",
		"fim_pre", "fim_suf", "fim_mid", "fim_pad", "fim_rep", "fim_sep", "prefix", "suffix", "middle"}
	tokenizerFlags = []string{"add_bos_token", "add_eos_token", "add_sep_token", "add_space_prefix", "remove_extra_whitespaces"}
)

// checkVocab checks the tokenizer.ggml.* keys llama.cpp reads, and
// returns the number of tokens.
func (c *checker) checkVocab() (int64, error) {
	const p = "tokenizer.ggml."
	model, err := c.str(p+"model", true)
	if err != nil {
		return 0, err
	}
	if model != "llama" && model != "gpt2" {
		return 0, c.errKey(p+"model", "%q: reins supports the tokenizers llama (SentencePiece) and gpt2 (byte-level BPE)", model)
	}
	pre, err := c.str(p+"pre", false)
	if err != nil {
		return 0, err
	}
	if _, err := c.u32(p+"token_type_count", false, 0, 0, math.MaxUint32); err != nil {
		return 0, err
	}
	for _, k := range tokenizerFlags {
		if err := c.boolean(p + k); err != nil {
			return 0, err
		}
	}
	tv, ok := c.f.KV[p+"tokens"]
	if !ok {
		return 0, c.errFile("key %stokens is missing", p)
	}
	tokens, isStrings := tv.V.([]string)
	if !isStrings {
		return 0, c.errKey(p+"tokens", "a %s, want an array of strings", describe(tv))
	}
	n := int64(len(tokens))
	if n == 0 || n > maxVocab {
		return 0, c.errKey(p+"tokens", "%d tokens, want 1 to %d", n, maxVocab)
	}
	// llama.cpp reads scores and types as raw arrays of n float32 and
	// int32 values, whatever their declared type and length.
	if sv, ok := c.f.KV[p+"scores"]; ok {
		scores, isF32 := sv.V.([]float32)
		if !isF32 || int64(len(scores)) != n {
			return 0, c.errKey(p+"scores", "a %s, want an array of %d float32 values", describe(sv), n)
		}
		for i, s := range scores {
			if math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
				return 0, c.errKey(p+"scores", "the score of token %d is %v", i, s)
			}
		}
	}
	var types []int32
	if tt, ok := c.f.KV[p+"token_type"]; ok {
		var isI32 bool
		types, isI32 = tt.V.([]int32)
		if !isI32 || int64(len(types)) != n {
			return 0, c.errKey(p+"token_type", "a %s, want an array of %d int32 values", describe(tt), n)
		}
		for i, t := range types {
			if t < 0 || t > 6 {
				return 0, c.errKey(p+"token_type", "token %d has type %d, want 0 to 6", i, t)
			}
		}
	}
	// llama.cpp keys its token map by each token's text as a C string,
	// an empty one renamed "[EMPTY_<id>]", and aborts on duplicates.
	seen := make(map[string]int, n)
	for i, t := range tokens {
		if strings.IndexByte(t, 0) >= 0 {
			return 0, c.errKey(p+"tokens", "token %d %q holds a NUL byte, where llama.cpp cuts it short", i, t)
		}
		text := t
		if text == "" {
			text = fmt.Sprintf("[EMPTY_%d]", i)
		}
		if j, dup := seen[text]; dup {
			return 0, c.errKey(p+"tokens", "tokens %d and %d are both %q", j, i, text)
		}
		seen[text] = i
	}
	if err := c.checkTokenTexts(model, tokens, types, seen); err != nil {
		return 0, err
	}
	if model == "gpt2" {
		mv, ok := c.f.KV[p+"merges"]
		if !ok {
			return 0, c.errFile("key %smerges is missing: a gpt2 tokenizer needs its merges", p)
		}
		merges, isStrings := mv.V.([]string)
		if !isStrings {
			return 0, c.errKey(p+"merges", "a %s, want an array of strings", describe(mv))
		}
		for i, m := range merges {
			if strings.IndexByte(m, 0) >= 0 {
				return 0, c.errKey(p+"merges", "merge %d %q holds a NUL byte", i, m)
			}
		}
	}
	return n, c.checkSpecialTokens(model, pre, n)
}

// checkTokenTexts checks what llama.cpp does with each token's text: a
// byte token of SentencePiece is spelled <0xNN>, and every byte value
// has a SentencePiece token (<0xNN>, or the byte alone), which
// llama.cpp's tokenizer looks up for text it cannot spell otherwise and
// aborts without. (Its BPE tokenizer drops such a byte instead, and
// real BPE vocabularies lack some: bytes that UTF-8 never uses.)
func (c *checker) checkTokenTexts(model string, tokens []string, types []int32, ids map[string]int) error {
	if model != "llama" {
		return nil
	}
	const key = "tokenizer.ggml.tokens"
	const hex = "0123456789ABCDEF"
	for i, t := range tokens {
		if types == nil {
			break
		}
		if types[i] == 6 {
			if len(t) != 6 || !strings.HasPrefix(t, "<0x") || t[5] != '>' || !strings.ContainsRune(hex, rune(t[3])) || !strings.ContainsRune(hex, rune(t[4])) {
				return c.errKey(key, "byte token %d is spelled %q, want <0xNN>", i, t)
			}
		}
	}
	for b := range 256 {
		if _, ok := ids[fmt.Sprintf("<0x%c%c>", hex[b>>4], hex[b&15])]; ok {
			continue
		}
		if _, ok := ids[string([]byte{byte(b)})]; ok && b != 0 {
			continue
		}
		return c.errKey(key, "no token for byte 0x%02X (<0x%02X>): llama.cpp's SentencePiece tokenizer aborts on text it cannot spell", b, b)
	}
	return nil
}

// checkSpecialTokens checks the token ids llama.cpp takes from the
// file, or from its defaults for the tokenizer: it uses them as indexes
// without checking them.
func (c *checker) checkSpecialTokens(model, pre string, n int64) error {
	const p = "tokenizer.ggml."
	defaults := map[string]int64{}
	switch model {
	case "llama":
		defaults = map[string]int64{"bos": 1, "eos": 2, "unknown": 0}
	case "gpt2":
		defaults = map[string]int64{"bos": 11, "eos": 11}
		if pre == "glm4" || pre == "chatglm-bpe" {
			defaults["bos"] = llamaNull
		}
	}
	effective := map[string]int64{}
	for _, name := range specialTokenKeys {
		key := p + name + "_token_id"
		id, ok := defaults[name]
		if !ok {
			id = llamaNull
		}
		explicit, err := c.u32(key, false, -2, 0, math.MaxUint32)
		if err != nil {
			return err
		}
		if explicit >= 0 && explicit < n {
			id = explicit // llama.cpp ignores an id outside the vocabulary
		}
		if id >= n {
			if explicit >= 0 {
				return c.errKey(key, "%d is outside the vocabulary of %d tokens, and so is llama.cpp's default %d", explicit, n, id)
			}
			return c.errKey(p+"tokens", "%d tokens: llama.cpp's default %s token of a %s tokenizer, %d, is outside the vocabulary (set %s)", n, name, model, id, key)
		}
		effective[name] = id
	}
	// With these flags set llama.cpp asserts that the token exists.
	adds := map[string]bool{"bos": model == "llama"}
	if model == "gpt2" {
		for _, p := range []string{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "tekken", "chameleon"} {
			if pre == p {
				adds["bos"] = true
			}
		}
	}
	for _, tok := range []string{"bos", "eos"} {
		flag := "add_" + tok + "_token"
		if v, ok := c.f.KV[p+flag]; ok {
			adds[tok] = v.V.(bool)
		}
		if adds[tok] && effective[tok] == llamaNull {
			return c.errKey(p+flag, "the file asks for a %s token and has none", tok)
		}
	}
	return nil
}

// describe names a value's type, for errors.
func describe(v gguf.Value) string {
	if v.Type == gguf.TypeArray {
		return fmt.Sprintf("array of %d %s values", reflect.ValueOf(v.V).Len(), v.Elem)
	}
	return v.Type.String()
}
