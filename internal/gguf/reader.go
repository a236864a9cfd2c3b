package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// Limits the reader enforces beyond "fits in the file". llama.cpp's own
// reader (gguf.cpp) trusts counts and lengths up to what memory allows,
// some of its work grows with the square of a count (each new key and
// tensor name is compared with every earlier one: 200,000 keys take it
// 25 s), and it keeps several copies of the metadata (a loaded model
// holds about six times the metadata's size). These bounds are far above
// what real models use (a few dozen keys, at most a few thousand
// tensors, vocabularies and merge lists of a few hundred thousand
// entries, under 20 MB of metadata, chat templates of a few KiB) and
// keep a hostile header's cost small, in time and in memory, before
// anything is read.
const (
	MaxKeys          = 8192     // metadata key-value pairs
	MaxTensors       = 16384    // tensors
	MaxArrayLen      = 1 << 22  // elements of one metadata array
	MaxKeyLen        = 1 << 16  // bytes of a key (the GGUF specification's limit)
	MaxStringLen     = 16 << 20 // bytes of one metadata string
	MaxMetadataBytes = 64 << 20 // metadata in memory, all values together (a string counts 16 bytes more than its length)

	maxDims       = 4  // GGML_MAX_DIMS
	maxTensorName = 63 // GGML_MAX_NAME less the terminating NUL
)

// Magic is the four bytes every GGUF file starts with.
const Magic = "GGUF"

// File is the header of a GGUF file: its metadata and tensor directory.
// Tensor data is not read.
type File struct {
	Version    uint32
	KV         map[string]Value
	Keys       []string // metadata keys in file order
	Tensors    []TensorInfo
	Alignment  int64
	DataOffset int64 // byte offset of the tensor data section
	Size       int64 // size of the file in bytes
	Path       string
}

// TensorInfo describes one tensor of a GGUF file.
type TensorInfo struct {
	Name   string
	Shape  []uint64 // ggml order: Shape[0] is the contiguous dimension
	Type   TensorType
	Offset uint64 // of its data, relative to File.DataOffset
	// At is the byte offset of the tensor's entry in the directory, for
	// errors.
	At int64
}

// Error is a malformed-file error. It names the file and the byte offset
// of what is wrong: the value, key or tensor entry it is about.
type Error struct {
	Path   string
	Offset int64
	Msg    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: byte %d: %s", e.Path, e.Offset, e.Msg)
}

// ErrNotGGUF is wrapped by the error Open returns for a file that does not
// start with the GGUF magic.
var ErrNotGGUF = errors.New("not a GGUF file")

// Open reads and checks the header of the GGUF file at path. Only
// regular files are read: a FIFO or a device is refused before it is
// opened for reading.
func Open(path string) (*File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("gguf: %s is a directory, not a model file", path)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("gguf: %s is not a regular file (%s)", path, st.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("gguf: %s is not a regular file (%s)", path, st.Mode().Type())
	}
	return Read(f, st.Size(), path)
}

// Read reads and checks a GGUF header from r, which holds size bytes in
// all. name is used in errors.
func Read(r io.Reader, size int64, name string) (*File, error) {
	return read(r, size, name, MaxMetadataBytes)
}

func read(r io.Reader, size int64, name string, budget int64) (*File, error) {
	d := &decoder{r: bufio.NewReaderSize(r, 64<<10), size: size, path: name, budget: budget, limit: budget}
	file, err := d.file()
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) {
			return nil, err
		}
		return nil, &Error{Path: name, Offset: d.off, Msg: err.Error()}
	}
	file.Path = name
	return file, nil
}

type decoder struct {
	r      *bufio.Reader
	off    int64
	size   int64
	path   string
	budget int64 // metadata bytes still allowed in memory
	limit  int64 // the budget at the start
	buf    [8]byte
}

func (d *decoder) fail(format string, args ...any) error {
	return d.failAt(d.off, format, args...)
}

func (d *decoder) failAt(off int64, format string, args ...any) error {
	return &Error{Path: d.path, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) remaining() int64 { return d.size - d.off }

func (d *decoder) read(n int) ([]byte, error) {
	if int64(n) > d.remaining() {
		return nil, d.fail("truncated: need %d more bytes, file has %d", n, d.remaining())
	}
	if _, err := io.ReadFull(d.r, d.buf[:n]); err != nil {
		return nil, d.fail("truncated: %v", err)
	}
	d.off += int64(n)
	return d.buf[:n], nil
}

func (d *decoder) u32() (uint32, error) {
	b, err := d.read(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (d *decoder) u64() (uint64, error) {
	b, err := d.read(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// count reads a uint64 count of items that take at least minSize bytes
// each, and checks it against limit and against what remains of the file.
func (d *decoder) count(what string, minSize int64, limit uint64) (int, error) {
	at := d.off
	n, err := d.u64()
	if err != nil {
		return 0, err
	}
	if n > limit {
		return 0, d.failAt(at, "%s %d is more than the %d reins accepts", what, n, limit)
	}
	if minSize < 1 {
		minSize = 1
	}
	if n > uint64(d.remaining()/minSize) {
		return 0, d.failAt(at, "truncated or corrupt: %s %d cannot fit in the %d bytes left", what, n, d.remaining())
	}
	return int(n), nil
}

// spend takes n bytes from the metadata memory budget.
func (d *decoder) spend(at int64, n int64) error {
	if n > d.budget {
		return d.failAt(at, "the metadata takes more than %d bytes in memory", d.limit)
	}
	d.budget -= n
	return nil
}

// str reads a string of at most limit bytes.
func (d *decoder) str(what string, limit uint64) (string, error) {
	at := d.off
	n, err := d.count(what+" length", 1, limit)
	if err != nil {
		return "", err
	}
	if err := d.spend(at, int64(n)+16); err != nil {
		return "", err
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(d.r, b); err != nil {
		return "", d.fail("truncated string: %v", err)
	}
	d.off += int64(n)
	return string(b), nil
}

func (d *decoder) file() (*File, error) {
	if d.size == 0 {
		return nil, fmt.Errorf("%s: %w: the file is empty", d.path, ErrNotGGUF)
	}
	if d.size < 4 {
		return nil, fmt.Errorf("%s: %w: only %d bytes", d.path, ErrNotGGUF, d.size)
	}
	magic, _ := d.read(4)
	if string(magic) != Magic {
		return nil, fmt.Errorf("%s: %w: starts with %q, want %q", d.path, ErrNotGGUF, magic, Magic)
	}
	version, err := d.u32()
	if err != nil {
		return nil, err
	}
	if version != 2 && version != 3 {
		return nil, d.failAt(4, "unsupported GGUF version %d (want 2 or 3)", version)
	}
	// A tensor info takes at least 8+1+4+8+4+8 bytes, a key-value 8+1+4+1.
	nTensors, err := d.count("tensor count", 33, MaxTensors)
	if err != nil {
		return nil, err
	}
	nKV, err := d.count("metadata key count", 14, MaxKeys)
	if err != nil {
		return nil, err
	}
	f := &File{Version: version, KV: make(map[string]Value, nKV), Size: d.size, Alignment: 32}
	for range nKV {
		at := d.off
		key, err := d.str("key", MaxKeyLen)
		if err != nil {
			return nil, err
		}
		if strings.IndexByte(key, 0) >= 0 {
			// llama.cpp looks keys up as C strings: "a\x00b" would be
			// found as "a".
			return nil, d.failAt(at, "metadata key %q contains a NUL byte", key)
		}
		if _, dup := f.KV[key]; dup {
			return nil, d.failAt(at, "duplicate metadata key %q", key)
		}
		v, err := d.value(key)
		if err != nil {
			return nil, fmt.Errorf("%w (in metadata key %q)", err, key)
		}
		v.Offset = at
		f.KV[key] = v
		f.Keys = append(f.Keys, key)
	}
	if v, ok := f.KV["general.alignment"]; ok {
		// llama.cpp reads it as a uint32 and aborts on any other type.
		a, isU32 := v.V.(uint32)
		if !isU32 || a == 0 || a&(a-1) != 0 {
			return nil, d.failAt(v.Offset, "general.alignment must be a uint32 power of two, not the %s %v", v.Type, v.V)
		}
		f.Alignment = int64(a)
	}
	seen := make(map[string]bool, nTensors)
	for range nTensors {
		t, err := d.tensorInfo()
		if err != nil {
			return nil, err
		}
		if seen[t.Name] {
			return nil, d.failAt(t.At, "duplicate tensor %q", t.Name)
		}
		seen[t.Name] = true
		f.Tensors = append(f.Tensors, t)
	}
	f.DataOffset = d.off + (f.Alignment-d.off%f.Alignment)%f.Alignment
	if len(f.Tensors) > 0 && f.DataOffset > d.size {
		return nil, d.fail("truncated: tensor data would start at byte %d, past the end at %d", f.DataOffset, d.size)
	}
	// llama.cpp wants the tensors' data packed in directory order, each
	// padded to the alignment, and each inside the file.
	var next uint64
	dataSize := uint64(d.size - f.DataOffset)
	for _, t := range f.Tensors {
		if t.Offset != next {
			return nil, d.failAt(t.At, "tensor %q: data offset %d, want %d (tensor data must follow the directory's order, each aligned to %d)", t.Name, t.Offset, next, f.Alignment)
		}
		n := t.Size()
		if n > dataSize || t.Offset > dataSize-n {
			return nil, d.failAt(t.At, "truncated: tensor %q ends at byte %d of the data section, which has %d bytes", t.Name, t.Offset+n, dataSize)
		}
		next = t.Offset + (n+uint64(f.Alignment)-1)/uint64(f.Alignment)*uint64(f.Alignment)
	}
	return f, nil
}

// Size is the tensor's data size in bytes. The reader has checked that
// it does not overflow.
func (t TensorInfo) Size() uint64 {
	n := uint64(t.Type.BlockBytes())
	for i, s := range t.Shape {
		if i == 0 {
			s /= uint64(t.Type.BlockSize())
		}
		n *= s
	}
	return n
}

// Elements is the number of elements in the tensor.
func (t TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, s := range t.Shape {
		n *= s
	}
	return n
}

func (d *decoder) tensorInfo() (TensorInfo, error) {
	t := TensorInfo{At: d.off}
	name, err := d.str("tensor name", maxTensorName)
	if err != nil {
		return t, err
	}
	if strings.IndexByte(name, 0) >= 0 {
		return t, d.failAt(t.At, "tensor name %q contains a NUL byte", name)
	}
	t.Name = name
	nd, err := d.u32()
	if err != nil {
		return t, err
	}
	if nd > maxDims {
		return t, d.failAt(t.At, "tensor %q has %d dimensions, at most %d allowed", name, nd, maxDims)
	}
	total := uint64(1)
	for i := range nd {
		s, err := d.u64()
		if err != nil {
			return t, err
		}
		// llama.cpp divides by every dimension (a 0 is a division by
		// zero) and wants the element count below 2^63-1.
		if s == 0 {
			return t, d.failAt(t.At, "tensor %q: dimension %d is 0", name, i)
		}
		if s >= math.MaxInt64 || total >= math.MaxInt64/s {
			return t, d.failAt(t.At, "tensor %q: shape overflows: %d elements or more", name, uint64(math.MaxInt64))
		}
		total *= s
		t.Shape = append(t.Shape, s)
	}
	typ, err := d.u32()
	if err != nil {
		return t, err
	}
	t.Type = TensorType(typ)
	if !t.Type.Known() {
		return t, d.failAt(t.At, "tensor %q: unknown type %d", name, typ)
	}
	if len(t.Shape) > 0 && t.Shape[0]%uint64(t.Type.BlockSize()) != 0 {
		return t, d.failAt(t.At, "tensor %q: %d elements per row, not a multiple of %s's block of %d", name, t.Shape[0], t.Type, t.Type.BlockSize())
	}
	if len(t.Shape) == 0 && t.Type.BlockSize() != 1 {
		return t, d.failAt(t.At, "tensor %q: a scalar of block type %s", name, t.Type)
	}
	if t.Offset, err = d.u64(); err != nil {
		return t, err
	}
	// total < 2^63 elements, each block of at most 292 bytes for 1 or
	// more elements: the byte size may still overflow uint64 for
	// 1-element blocks of 8 bytes.
	if total > math.MaxInt64/uint64(t.Type.BlockBytes()) {
		return t, d.failAt(t.At, "tensor %q: its size in bytes overflows", name)
	}
	return t, nil
}

func (d *decoder) value(key string) (Value, error) {
	at := d.off
	tag, err := d.u32()
	if err != nil {
		return Value{}, err
	}
	t := ValueType(tag)
	if t == TypeArray {
		et, err := d.u32()
		if err != nil {
			return Value{}, err
		}
		elem := ValueType(et)
		if elem == TypeArray {
			return Value{}, d.failAt(at, "nested arrays are not supported")
		}
		if elem > TypeFloat64 {
			return Value{}, d.failAt(at, "unknown array element type %d", et)
		}
		minSize := int64(elem.size())
		if elem == TypeString {
			minSize = 8
		}
		n, err := d.count("array length", minSize, MaxArrayLen)
		if err != nil {
			return Value{}, err
		}
		cost := int64(n) * minSize
		if elem == TypeString {
			cost = 0 // counted string by string
		}
		if err := d.spend(at, cost); err != nil {
			return Value{}, err
		}
		v, err := d.array(elem, n)
		return Value{Type: TypeArray, Elem: elem, V: v}, err
	}
	if t > TypeFloat64 {
		return Value{}, d.failAt(at, "unknown value type %d", tag)
	}
	if t == TypeString {
		s, err := d.str("string", MaxStringLen)
		return Value{Type: t, V: s}, err
	}
	b, err := d.read(t.size())
	if err != nil {
		return Value{}, err
	}
	return Value{Type: t, V: scalar(t, b)}, nil
}
func scalar(t ValueType, b []byte) any {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return b[0]
	case TypeInt8:
		return int8(b[0])
	case TypeUint16:
		return le.Uint16(b)
	case TypeInt16:
		return int16(le.Uint16(b))
	case TypeUint32:
		return le.Uint32(b)
	case TypeInt32:
		return int32(le.Uint32(b))
	case TypeFloat32:
		return math.Float32frombits(le.Uint32(b))
	case TypeBool:
		return b[0] != 0
	case TypeUint64:
		return le.Uint64(b)
	case TypeInt64:
		return int64(le.Uint64(b))
	case TypeFloat64:
		return math.Float64frombits(le.Uint64(b))
	}
	panic("gguf: scalar of non-scalar type " + t.String())
}

func (d *decoder) array(elem ValueType, n int) (any, error) {
	if elem == TypeString {
		s := make([]string, n)
		for i := range s {
			var err error
			if s[i], err = d.str("string", MaxStringLen); err != nil {
				return nil, err
			}
		}
		return s, nil
	}
	size := elem.size()
	raw := make([]byte, n*size)
	if _, err := io.ReadFull(d.r, raw); err != nil {
		return nil, d.fail("truncated array: %v", err)
	}
	d.off += int64(len(raw))
	switch elem {
	case TypeUint8:
		return raw, nil
	case TypeInt8:
		return decodeArray(raw, 1, func(b []byte) int8 { return int8(b[0]) }), nil
	case TypeUint16:
		return decodeArray(raw, 2, binary.LittleEndian.Uint16), nil
	case TypeInt16:
		return decodeArray(raw, 2, func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) }), nil
	case TypeUint32:
		return decodeArray(raw, 4, binary.LittleEndian.Uint32), nil
	case TypeInt32:
		return decodeArray(raw, 4, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) }), nil
	case TypeFloat32:
		return decodeArray(raw, 4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }), nil
	case TypeBool:
		return decodeArray(raw, 1, func(b []byte) bool { return b[0] != 0 }), nil
	case TypeUint64:
		return decodeArray(raw, 8, binary.LittleEndian.Uint64), nil
	case TypeInt64:
		return decodeArray(raw, 8, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) }), nil
	case TypeFloat64:
		return decodeArray(raw, 8, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }), nil
	}
	return nil, d.fail("unknown array element type %d", elem)
}

func decodeArray[T any](raw []byte, size int, at func([]byte) T) []T {
	out := make([]T, len(raw)/size)
	for i := range out {
		out[i] = at(raw[i*size:])
	}
	return out
}

// String returns the metadata value at key as a string, and whether it was one.
func (f *File) String(key string) (string, bool) {
	s, ok := f.KV[key].V.(string)
	return s, ok
}

// Strings returns the metadata value at key as a string array, and whether it was one.
func (f *File) Strings(key string) ([]string, bool) {
	s, ok := f.KV[key].V.([]string)
	return s, ok
}

// Int returns the metadata value at key as an integer, and whether it was one.
func (f *File) Int(key string) (int64, bool) {
	v, ok := f.KV[key]
	if !ok {
		return 0, false
	}
	return v.Int()
}

// Architecture returns general.architecture, or "" when it is missing.
func (f *File) Architecture() string {
	s, _ := f.String("general.architecture")
	return s
}
