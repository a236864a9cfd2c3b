package llama

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/reins-go/reins/internal/gguf"
)

// TestHostileFigures measures, for each class of hostile input, the
// largest input tried (refused, and the largest accepted where the
// class has one): time and peak memory of a child process that checks
// and loads it, tokenizes, evaluates and generates. It is opt-in (it
// writes files of hundreds of MB):
//
//	REINS_FIGURES=1 go test ./backends/llama -run TestHostileFigures -v -timeout 30m
func TestHostileFigures(t *testing.T) {
	if os.Getenv("REINS_FIGURES") == "" {
		t.Skip("set REINS_FIGURES=1")
	}
	base := readModel(t, fixturePath(t))
	dir := t.TempDir()
	type figure struct {
		class, input string
		path         string
		opts         *Options
	}
	write := func(name string, edit func(m *model)) string {
		m := base.clone()
		edit(m)
		return m.write(t, filepath.Join(dir, name+".gguf"))
	}
	keys := func(n int) func(m *model) {
		return func(m *model) {
			for i := range n {
				m.set(fmt.Sprintf("x.key%d", i), uint8(1))
			}
		}
	}
	fx := fixturePath(t)
	figures := []figure{
		{"metadata keys", "200,000 keys (llama.cpp alone: 25 s)", write("keys200k", keys(200_000)), nil},
		{"metadata keys", fmt.Sprintf("%d keys, the most accepted", gguf.MaxKeys), write("keysmax", keys(gguf.MaxKeys-len(base.kvs))), nil},
		{"array length", fmt.Sprintf("an array of %d empty strings, the most accepted", gguf.MaxArrayLen), write("arraymax", func(m *model) {
			m.set("x.array", make([]string, gguf.MaxArrayLen))
		}), nil},
		{"array length", fmt.Sprintf("%d empty strings, one too many", gguf.MaxArrayLen+1), write("arraymore", func(m *model) {
			m.set("x.array", make([]string, gguf.MaxArrayLen+1))
		}), nil},
		{"string length", fmt.Sprintf("a string of %d bytes, the longest accepted", gguf.MaxStringLen), write("strmax", func(m *model) {
			m.set("x.string", strings.Repeat("x", gguf.MaxStringLen))
		}), nil},
		{"metadata size", "3 strings of 16 MiB (48 MiB, under the 64 MiB budget)", write("meta48", func(m *model) {
			s := strings.Repeat("y", gguf.MaxStringLen)
			for i := range 3 {
				m.set(fmt.Sprintf("x.s%d", i), s)
			}
		}), nil},
		{"metadata size", "4 strings of 16 MiB (over the budget)", write("meta64", func(m *model) {
			s := strings.Repeat("y", gguf.MaxStringLen)
			for i := range 4 {
				m.set(fmt.Sprintf("x.s%d", i), s)
			}
		}), nil},
		{"layers", "block_count 512, the most accepted (8 dimensions)", write("layers512", func(m *model) {
			v := uint64(len(m.tokens()))
			m.tensors = nil
			m.tensor("token_embd.weight", gguf.TensorF32, 8, v).tensor("output_norm.weight", gguf.TensorF32, 8)
			for l := range 512 {
				b := fmt.Sprintf("blk.%d.", l)
				for _, n := range []string{"attn_q", "attn_k", "attn_v", "attn_output"} {
					m.tensor(b+n+".weight", gguf.TensorF32, 8, 8)
				}
				m.tensor(b+"ffn_gate.weight", gguf.TensorF32, 8, 16).tensor(b+"ffn_up.weight", gguf.TensorF32, 8, 16).tensor(b+"ffn_down.weight", gguf.TensorF32, 16, 8)
				m.tensor(b+"attn_norm.weight", gguf.TensorF32, 8).tensor(b+"ffn_norm.weight", gguf.TensorF32, 8)
			}
			m.set("llama.embedding_length", uint32(8)).set("llama.feed_forward_length", uint32(16)).set("llama.block_count", uint32(512)).
				set("llama.rope.dimension_count", uint32(2))
		}), nil},
		{"tensor shape", "a dimension of 0", write("zerodim", func(m *model) { m.tensor("blk.0.attn_q.weight", gguf.TensorF32, 272, 0) }), nil},
		{"vocabulary", "duplicate tokens", write("duptok", hostileCases[1].edit), nil},
		{"options", "Threads 100000", fx, &Options{Threads: 100000}},
		{"options", fmt.Sprintf("Threads %d, the most accepted", MaxThreads()), fx, &Options{Threads: MaxThreads()}},
		{"options", "ContextSize 1", fx, &Options{ContextSize: 1}},
		{"options", fmt.Sprintf("ContextSize %d (the most accepted), Sequences 1", MaxContextSize), fx, &Options{ContextSize: MaxContextSize, Sequences: 1}},
		{"options", fmt.Sprintf("Sequences %d (the most accepted), ContextSize 256", MaxSequences), fx, &Options{Sequences: MaxSequences, ContextSize: 256}},
		{"options", fmt.Sprintf("BatchSize %d (the most accepted), Sequences 8", MaxBatchSize), fx, &Options{BatchSize: MaxBatchSize, Sequences: 8}},
		{"options", "Sequences 256, ContextSize 1048576 (past memory)", fx, &Options{Sequences: MaxSequences, ContextSize: MaxContextSize}},
	}
	t.Logf("%-14s | %-62s | %-8s | %8s | %9s", "class", "input", "result", "time", "peak RSS")
	for _, f := range figures {
		var env []string
		if f.opts != nil {
			o, _ := json.Marshal(f.opts)
			env = append(env, childOptionsEnv+"="+string(o))
		}
		st, _ := os.Stat(f.path)
		r := runChildEnv(t, f.path, false, env...)
		result := "accepted"
		if r.code != 0 {
			result = "refused"
		}
		if r.crashed() {
			result = r.String()
		}
		t.Logf("%-14s | %-62s | %-8s | %8s | %6d MB   (file %d MB)", f.class, f.input, result, r.elapsed.Round(time.Millisecond), r.maxRSS>>20, st.Size()>>20)
		if r.code != 0 {
			t.Logf("    %s", lastLines(r.output, 1))
		}
		assert.False(t, r.crashed(), "%s: %s\n%s", f.input, r, r.output)
	}
}
