package llama

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/internal/gguf"
)

// TestTensorTypeTableMatchesGGML checks internal/gguf's table of block
// sizes against the ggml linked into the binary.
func TestTensorTypeTableMatchesGGML(t *testing.T) {
	for typ := range 40 {
		tt := gguf.TensorType(typ)
		if !tt.Known() {
			continue
		}
		block, bytes := ggmlTypeTraits(typ)
		assert.Equal(t, block, tt.BlockSize(), "%s block", tt)
		assert.Equal(t, bytes, tt.BlockBytes(), "%s bytes", tt)
	}
}

// TestEveryWeightTypeRuns writes a llama model whose weight matrices
// all have one type, for every type the checks accept, and runs it in
// llama.cpp in a child process: the list of accepted types is a list of
// types llama.cpp computes with.
func TestEveryWeightTypeRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	base := readModel(t, fixturePath(t))
	const embd, ff = 256, 512 // multiples of every block size
	var types []gguf.TensorType
	for typ := range matrixTypes {
		types = append(types, typ)
	}
	slices.Sort(types)
	dir := t.TempDir()
	for _, typ := range types {
		t.Run(typ.String(), func(t *testing.T) {
			m := base.clone()
			v := uint64(len(m.tokens()))
			m.tensors = nil
			m.tensor("token_embd.weight", typ, embd, v).tensor("output_norm.weight", gguf.TensorF32, embd).tensor("output.weight", typ, embd, v)
			for _, n := range []string{"attn_q", "attn_k", "attn_v", "attn_output"} {
				m.tensor("blk.0."+n+".weight", typ, embd, embd)
			}
			m.tensor("blk.0.ffn_gate.weight", typ, embd, ff).tensor("blk.0.ffn_up.weight", typ, embd, ff).tensor("blk.0.ffn_down.weight", typ, ff, embd)
			m.tensor("blk.0.attn_norm.weight", gguf.TensorF32, embd).tensor("blk.0.ffn_norm.weight", gguf.TensorF32, embd)
			m.set("llama.embedding_length", uint32(embd)).set("llama.feed_forward_length", uint32(ff)).set("llama.rope.dimension_count", uint32(embd/4))
			path := m.write(t, filepath.Join(dir, fmt.Sprintf("%s.gguf", typ)))
			r := runChild(t, path, false)
			require.Equal(t, 0, r.code, "%s\n%s", r, r.output)
		})
	}
}
