package gguf

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sample(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	err := Write(&buf,
		[]KV{
			{"general.architecture", "llama"},
			{"general.alignment", uint32(32)},
			{"x.flag", true},
			{"x.count", uint64(7)},
			{"x.neg", int32(-3)},
			{"x.f", float32(0.5)},
			{"tokenizer.ggml.tokens", []string{"a", "b", ""}},
			{"tokenizer.ggml.token_type", []int32{1, 3, 6}},
			{"x.floats", []float32{1, 2}},
		},
		[]Tensor{
			{Name: "w", Shape: []uint64{3, 2}, Data: []float32{1, 2, 3, 4, 5, 6}},
			{Name: "b", Shape: []uint64{5}, Data: make([]float32, 5)},
		})
	require.NoError(t, err)
	return buf.Bytes()
}

func TestWriteReadRoundTrip(t *testing.T) {
	data := sample(t)
	f, err := Read(bytes.NewReader(data), int64(len(data)), "sample.gguf")
	require.NoError(t, err)
	assert.Equal(t, uint32(3), f.Version)
	assert.Equal(t, "llama", f.Architecture())
	toks, ok := f.Strings("tokenizer.ggml.tokens")
	require.True(t, ok)
	assert.Equal(t, []string{"a", "b", ""}, toks)
	types, ok := f.KV["tokenizer.ggml.token_type"].Ints()
	require.True(t, ok)
	assert.Equal(t, []int64{1, 3, 6}, types)
	n, ok := f.Int("x.neg")
	assert.True(t, ok)
	assert.Equal(t, int64(-3), n)
	assert.Equal(t, true, f.KV["x.flag"].V)
	assert.Equal(t, float32(0.5), f.KV["x.f"].V)
	assert.Equal(t, []float32{1, 2}, f.KV["x.floats"].V)
	require.Len(t, f.Tensors, 2)
	assert.Equal(t, TensorInfo{Name: "w", Shape: []uint64{3, 2}, Type: 0, Offset: 0}, f.Tensors[0])
	assert.Equal(t, uint64(32), f.Tensors[1].Offset, "aligned")
	assert.Equal(t, int64(0), f.DataOffset%32)
	// The tensor data is where the header says.
	w := data[f.DataOffset : f.DataOffset+24]
	assert.Equal(t, uint32(0x40400000), binary.LittleEndian.Uint32(w[8:])) // 3.0
}

func TestReadErrors(t *testing.T) {
	good := sample(t)
	mutate := func(off int, b ...byte) []byte {
		d := bytes.Clone(good)
		copy(d[off:], b)
		return d
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "the file is empty"},
		{"short", []byte("GG"), "only 2 bytes"},
		{"magic", []byte("GGML\x03\x00\x00\x00"), `starts with "GGML"`},
		{"version 1", mutate(4, 1), "unsupported GGUF version 1"},
		{"huge tensor count", mutate(8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), "tensor count"},
		{"huge kv count", mutate(16, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0), "metadata count"},
		{"huge key length", mutate(24, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0), "string length"},
		{"bad value type", mutate(24+8+len("general.architecture"), 99), "unknown value type 99"},
		{"truncated kv", good[:60], "truncated"},
		{"truncated data", good[:len(good)-16], "truncated: tensor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tt.data), int64(len(tt.data)), "f.gguf")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), "f.gguf")
		})
	}
}

func TestOpenMissing(t *testing.T) {
	_, err := Open("/no/such/file.gguf")
	assert.ErrorContains(t, err, "no such file")
	_, err = Open(t.TempDir())
	assert.ErrorContains(t, err, "is a directory")
}

// FuzzRead checks that no input makes the reader panic or hang, and that
// whatever it accepts is internally consistent.
func FuzzRead(f *testing.F) {
	good := sample(f)
	f.Add(good)
	f.Add(good[:40])
	f.Add([]byte("GGUF\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Read(bytes.NewReader(data), int64(len(data)), "fuzz")
		if err != nil {
			return
		}
		for _, ti := range file.Tensors {
			end := file.DataOffset + int64(ti.Offset) + int64(ti.bytes())
			if end > int64(len(data)) {
				t.Fatalf("accepted tensor %q ending at %d past %d", ti.Name, end, len(data))
			}
		}
	})
}
