package gguf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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
	assert.Equal(t, TensorInfo{Name: "w", Shape: []uint64{3, 2}, Type: TensorF32, Offset: 0, At: f.Tensors[0].At}, f.Tensors[0])
	assert.Equal(t, uint64(24), f.Tensors[0].Size())
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
		{"huge kv count", mutate(16, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0), "metadata key count 1099511627775 is more than the 8192"},
		{"kv count past the file", mutate(16, 0xff, 0x1f), "metadata key count 8191 cannot fit"},
		{"huge key length", mutate(24, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0), "key length 281474976710655 is more than"},
		{"bad value type", mutate(24+8+len("general.architecture"), 99), "unknown value type 99"},
		{"truncated kv", good[:60], "truncated"},
		{"truncated data", good[:len(good)-16], "truncated: tensor"},
		{"zero dimension", patchTensor(t, good, "w", 0, 0), `byte 360: tensor "w": dimension 0 is 0`},
		{"second dimension zero", patchTensor(t, good, "w", 1, 0), `tensor "w": dimension 1 is 0`},
		{"removed type", patchTensor(t, good, "w", -1, 4), `tensor "w": unknown type 4`},
		{"type past the table", patchTensor(t, good, "w", -1, 40), `tensor "w": unknown type 40`},
		{"row not a multiple of the block", patchTensor(t, good, "w", -1, uint64(TensorQ4_0)), "3 elements per row, not a multiple of Q4_0's block of 32"},
		{"offset out of order", patchTensor(t, good, "b", -2, 64), `tensor "b": data offset 64, want 32`},
		{"shape overflow", patchTensor(t, good, "w", 0, 1<<40, 1<<40), "shape overflows"},
		{"alignment not uint32", build(t, []KV{{"general.alignment", uint64(32)}}), "general.alignment must be a uint32 power of two, not the uint64 32"},
		{"alignment not a power of two", build(t, []KV{{"general.alignment", uint32(24)}}), "general.alignment must be a uint32 power of two"},
		{"alignment zero", build(t, []KV{{"general.alignment", uint32(0)}}), "general.alignment must be a uint32 power of two"},
		{"NUL in a key", build(t, []KV{{"general.name\x00x", "x"}}), `byte 24: metadata key "general.name\x00x" contains a NUL byte`},
		{"duplicate key", build(t, []KV{{"a", "x"}, {"a", "y"}}), `duplicate metadata key "a"`},
		{"array too long", patchU64(build(t, []KV{{"a", []uint8{1}}}), 24+8+1+4+4, MaxArrayLen+1), "array length 4194305 is more than the 4194304"},
		{"string too long", patchU64(build(t, []KV{{"a", "x"}}), 24+8+1+4, MaxStringLen+1), "string length 16777217 is more than the 16777216"},
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
			end := file.DataOffset + int64(ti.Offset) + int64(ti.Size())
			if end > int64(len(data)) {
				t.Fatalf("accepted tensor %q ending at %d past %d", ti.Name, end, len(data))
			}
		}
	})
}

// build writes a file with the given metadata and one small tensor.
func build(t testing.TB, kvs []KV) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, kvs, []Tensor{{Name: "w", Shape: []uint64{2}, Data: []float32{1, 2}}}))
	return buf.Bytes()
}

// patchU64 returns data with the uint64 at off set to v.
func patchU64(data []byte, off int, v uint64) []byte {
	d := bytes.Clone(data)
	binary.LittleEndian.PutUint64(d[off:], v)
	return d
}

// patchTensor returns data with a field of tensor name's directory entry
// set to v: dimension dim (≥ 0; with more values, the dimensions after it
// too), its type (-1) or its offset (-2).
func patchTensor(t testing.TB, data []byte, name string, dim int, vs ...uint64) []byte {
	t.Helper()
	f, err := Read(bytes.NewReader(data), int64(len(data)), "f.gguf")
	require.NoError(t, err)
	for _, ti := range f.Tensors {
		if ti.Name != name {
			continue
		}
		shape := int(ti.At) + 8 + len(name) + 4
		d := bytes.Clone(data)
		switch {
		case dim >= 0:
			for i, v := range vs {
				binary.LittleEndian.PutUint64(d[shape+8*(dim+i):], v)
			}
		case dim == -1:
			binary.LittleEndian.PutUint32(d[shape+8*len(ti.Shape):], uint32(vs[0]))
		default:
			binary.LittleEndian.PutUint64(d[shape+8*len(ti.Shape)+4:], vs[0])
		}
		return d
	}
	t.Fatalf("no tensor %q", name)
	return nil
}

// TestAbsurdCountsRefusedFast builds headers that announce absurd counts
// and lengths (the file holds what it announces, so only the limits
// refuse them) and checks that they are refused at once, before the
// values are read.
func TestAbsurdCountsRefusedFast(t *testing.T) {
	var kvs []KV
	for i := range 200_000 {
		kvs = append(kvs, KV{fmt.Sprintf("k%d", i), uint8(1)})
	}
	var many bytes.Buffer
	require.NoError(t, Write(&many, kvs, nil))
	start := time.Now()
	_, err := Read(bytes.NewReader(many.Bytes()), int64(many.Len()), "keys.gguf")
	assert.ErrorContains(t, err, "metadata key count 200000 is more than the 8192")
	assert.Less(t, time.Since(start), 100*time.Millisecond)

	// One key: an array of MaxArrayLen+1 empty strings (8 bytes each).
	var long bytes.Buffer
	require.NoError(t, Write(&long, []KV{{"tokenizer.ggml.tokens", []string{}}}, nil))
	at := 24 + 8 + len("tokenizer.ggml.tokens") + 4 + 4
	long.Truncate(at + 8)
	binary.LittleEndian.PutUint64(long.Bytes()[at:], MaxArrayLen+1)
	long.Write(make([]byte, 8*(MaxArrayLen+1)))
	start = time.Now()
	_, err = Read(bytes.NewReader(long.Bytes()), int64(long.Len()), "tokens.gguf")
	assert.ErrorContains(t, err, "array length 4194305 is more than the 4194304")
	assert.Less(t, time.Since(start), 100*time.Millisecond)
}

func TestMetadataBudget(t *testing.T) {
	strs := make([]string, 1000)
	for i := range strs {
		strs[i] = strings.Repeat("x", 100)
	}
	data := build(t, []KV{{"a", strs}})
	// The key, 1000 strings of 100 bytes, the tensor's name; each string
	// counts 16 bytes more.
	need := int64(1+16) + 1000*116 + (1 + 16)
	_, err := read(bytes.NewReader(data), int64(len(data)), "f.gguf", need)
	assert.NoError(t, err)
	_, err = read(bytes.NewReader(data), int64(len(data)), "f.gguf", need-1)
	assert.ErrorContains(t, err, "the metadata takes more than")
}

func TestWriteAllValueTypes(t *testing.T) {
	kvs := []KV{
		{"u8", uint8(1)}, {"i8", int8(-2)}, {"u16", uint16(3)}, {"i16", int16(-4)}, {"u32", uint32(5)},
		{"i32", int32(-6)}, {"u64", uint64(7)}, {"i64", int64(-8)}, {"f32", float32(0.5)}, {"f64", 0.25},
		{"b", true}, {"s", "x"}, {"au8", []uint8{1, 2}}, {"ai64", []int64{-1}}, {"ab", []bool{true, false}},
		{"af64", []float64{1.5}}, {"as", []string{"a", ""}},
	}
	data := build(t, kvs)
	f, err := Read(bytes.NewReader(data), int64(len(data)), "f.gguf")
	require.NoError(t, err)
	for _, kv := range kvs {
		assert.Equal(t, kv.Value, f.KV[kv.Key].V, kv.Key)
	}
	var buf bytes.Buffer
	assert.ErrorContains(t, Write(&buf, []KV{{"x", []any{1}}}, nil), "unsupported value type")
	q := []Tensor{{Name: "q", Shape: []uint64{32, 2}, Type: TensorQ4_0, Raw: make([]byte, 36)}}
	require.NoError(t, Write(&buf, nil, q))
	f, err = Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "q.gguf")
	require.NoError(t, err)
	assert.Equal(t, TensorQ4_0, f.Tensors[0].Type)
	assert.Equal(t, uint64(36), f.Tensors[0].Size())
	q[0].Raw = make([]byte, 35)
	assert.ErrorContains(t, Write(&buf, nil, q), "does not take 35 bytes")
}

func TestOpenRefusesNonRegularFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Open(fifo); done <- err }()
	select {
	case err := <-done:
		assert.ErrorContains(t, err, "is not a regular file")
	case <-time.After(5 * time.Second):
		t.Fatal("Open blocked on a FIFO")
	}
	_, err := Open("/dev/zero")
	assert.ErrorContains(t, err, "is not a regular file")
}
