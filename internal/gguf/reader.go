package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	ollamagguf "github.com/ollama/ollama/fs/gguf"
)

// Limits the reader enforces beyond "fits in the file". They match what
// llama.cpp itself accepts, so a file that passes here is not refused there
// for its header.
const (
	maxDims       = 4  // GGML_MAX_DIMS
	maxTensorName = 63 // GGML_MAX_NAME less the terminating NUL
	maxTensorType = 64 // type tags at or above this are not ggml types
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
}

// TensorInfo describes one tensor of a GGUF file.
type TensorInfo struct {
	Name   string
	Shape  []uint64 // ggml order: Shape[0] is the contiguous dimension
	Type   uint32   // ggml type tag
	Offset uint64   // relative to File.DataOffset
}

// Error is a malformed-file error. It names the file and the byte offset
// at which reading failed.
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

// Open reads and checks the header of the GGUF file at path.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("gguf: %s is a directory, not a model file", path)
	}
	return Read(f, st.Size(), path)
}

// Read reads and checks a GGUF header from r, which holds size bytes in
// all. name is used in errors.
func Read(r io.Reader, size int64, name string) (*File, error) {
	d := &decoder{r: bufio.NewReaderSize(r, 64<<10), size: size, path: name}
	file, err := d.file()
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) {
			return nil, err
		}
		return nil, &Error{Path: name, Offset: d.off, Msg: err.Error()}
	}
	return file, nil
}

type decoder struct {
	r    *bufio.Reader
	off  int64
	size int64
	path string
	buf  [8]byte
}

func (d *decoder) fail(format string, args ...any) error {
	return &Error{Path: d.path, Offset: d.off, Msg: fmt.Sprintf(format, args...)}
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
// each, and checks that they can fit in what remains of the file.
func (d *decoder) count(what string, minSize int64) (int, error) {
	n, err := d.u64()
	if err != nil {
		return 0, err
	}
	if minSize < 1 {
		minSize = 1
	}
	if n > uint64(d.remaining()/minSize) {
		return 0, d.fail("truncated or corrupt: %s count %d cannot fit in the %d bytes left", what, n, d.remaining())
	}
	return int(n), nil
}

func (d *decoder) str() (string, error) {
	n, err := d.count("string length", 1)
	if err != nil {
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
		return nil, d.fail("unsupported GGUF version %d (want 2 or 3)", version)
	}
	// A tensor info takes at least 8+1+4+8+4+8 bytes, a key-value 8+1+4+1.
	nTensors, err := d.count("tensor", 33)
	if err != nil {
		return nil, err
	}
	nKV, err := d.count("metadata", 14)
	if err != nil {
		return nil, err
	}
	f := &File{Version: version, KV: make(map[string]Value, nKV), Size: d.size, Alignment: 32}
	for range nKV {
		at := d.off
		key, err := d.str()
		if err != nil {
			return nil, err
		}
		if _, dup := f.KV[key]; dup {
			return nil, &Error{Path: d.path, Offset: at, Msg: fmt.Sprintf("duplicate metadata key %q", key)}
		}
		v, err := d.value()
		if err != nil {
			return nil, fmt.Errorf("%w (in metadata key %q)", err, key)
		}
		f.KV[key] = v
		f.Keys = append(f.Keys, key)
	}
	if v, ok := f.KV["general.alignment"]; ok {
		a, isInt := v.Int()
		if !isInt || a <= 0 || a&(a-1) != 0 {
			return nil, d.fail("general.alignment %v is not a power of two", v.V)
		}
		f.Alignment = a
	}
	seen := make(map[string]bool, nTensors)
	for range nTensors {
		t, err := d.tensorInfo()
		if err != nil {
			return nil, err
		}
		if seen[t.Name] {
			return nil, d.fail("duplicate tensor %q", t.Name)
		}
		seen[t.Name] = true
		f.Tensors = append(f.Tensors, t)
	}
	f.DataOffset = d.off + (f.Alignment-d.off%f.Alignment)%f.Alignment
	if len(f.Tensors) > 0 && f.DataOffset > d.size {
		return nil, d.fail("truncated: tensor data would start at byte %d, past the end at %d", f.DataOffset, d.size)
	}
	for _, t := range f.Tensors {
		if t.Offset%uint64(f.Alignment) != 0 {
			return nil, d.fail("tensor %q: offset %d is not a multiple of the alignment %d", t.Name, t.Offset, f.Alignment)
		}
		end := t.Offset + t.bytes()
		if end < t.Offset || int64(end) > d.size-f.DataOffset || int64(end) < 0 {
			return nil, d.fail("truncated: tensor %q ends at byte %d of the data section, which has %d bytes", t.Name, end, d.size-f.DataOffset)
		}
	}
	return f, nil
}

// bytes is the tensor's size in bytes, or 0 where its type is unknown to
// this reader (then only its offset is checked).
func (t TensorInfo) bytes() uint64 {
	n := uint64(1)
	for _, s := range t.Shape {
		n *= s
	}
	return uint64(math.Ceil(float64(n) * ollamagguf.TensorType(t.Type).NumBytes()))
}

func (d *decoder) tensorInfo() (TensorInfo, error) {
	var t TensorInfo
	name, err := d.str()
	if err != nil {
		return t, err
	}
	if len(name) > maxTensorName {
		return t, d.fail("tensor name %.40q... is %d bytes, longer than %d", name, len(name), maxTensorName)
	}
	t.Name = name
	nd, err := d.u32()
	if err != nil {
		return t, err
	}
	if nd > maxDims {
		return t, d.fail("tensor %q has %d dimensions, at most %d allowed", name, nd, maxDims)
	}
	total := uint64(1)
	for range nd {
		s, err := d.u64()
		if err != nil {
			return t, err
		}
		if s > math.MaxInt64 || (s != 0 && total > math.MaxInt64/s) {
			return t, d.fail("tensor %q: shape overflows", name)
		}
		total *= s
		t.Shape = append(t.Shape, s)
	}
	if t.Type, err = d.u32(); err != nil {
		return t, err
	}
	if t.Type >= maxTensorType {
		return t, d.fail("tensor %q: unknown type %d", name, t.Type)
	}
	if t.Offset, err = d.u64(); err != nil {
		return t, err
	}
	return t, nil
}

func (d *decoder) value() (Value, error) {
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
			return Value{}, d.fail("nested arrays are not supported")
		}
		if elem > TypeFloat64 {
			return Value{}, d.fail("unknown array element type %d", et)
		}
		minSize := int64(elem.size())
		if elem == TypeString {
			minSize = 8
		}
		n, err := d.count("array element", minSize)
		if err != nil {
			return Value{}, err
		}
		v, err := d.array(elem, n)
		return Value{Type: TypeArray, Elem: elem, V: v}, err
	}
	if t > TypeFloat64 {
		return Value{}, d.fail("unknown value type %d", tag)
	}
	if t == TypeString {
		s, err := d.str()
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
			if s[i], err = d.str(); err != nil {
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
