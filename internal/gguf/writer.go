package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// KV is one metadata entry to write.
type KV struct {
	Key   string
	Value any // string, bool, uint32, int32, float32, uint64, []string, []int32, []float32
}

// Tensor is one F32 tensor to write. Shape is in ggml order (Shape[0] is
// the contiguous dimension) and len(Data) is the product of Shape.
type Tensor struct {
	Name  string
	Shape []uint64
	Data  []float32
}

const typeF32 = 0

// Write writes a version 3 GGUF file with the given metadata and F32
// tensors, aligned to 32 bytes.
func Write(w io.Writer, kvs []KV, tensors []Tensor) error {
	bw := bufio.NewWriter(w)
	e := &encoder{w: bw}
	e.raw([]byte(Magic))
	e.u32(3)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		e.str(kv.Key)
		if err := e.value(kv.Value); err != nil {
			return fmt.Errorf("gguf: key %q: %w", kv.Key, err)
		}
	}
	const align = 32
	var off uint64
	for _, t := range tensors {
		n := uint64(1)
		for _, s := range t.Shape {
			n *= s
		}
		if n != uint64(len(t.Data)) {
			return fmt.Errorf("gguf: tensor %q: shape %v holds %d values, data has %d", t.Name, t.Shape, n, len(t.Data))
		}
		e.str(t.Name)
		e.u32(uint32(len(t.Shape)))
		for _, s := range t.Shape {
			e.u64(s)
		}
		e.u32(typeF32)
		e.u64(off)
		off += pad(n*4, align)
	}
	e.raw(make([]byte, pad(e.n, align)-e.n))
	for _, t := range tensors {
		start := e.n
		for _, x := range t.Data {
			e.u32(math.Float32bits(x))
		}
		e.raw(make([]byte, pad(e.n-start, align)-(e.n-start)))
	}
	if e.err != nil {
		return fmt.Errorf("gguf: %w", e.err)
	}
	return bw.Flush()
}

func pad(n, align uint64) uint64 { return (n + align - 1) / align * align }

type encoder struct {
	w   *bufio.Writer
	n   uint64
	err error
	b   [8]byte
}

func (e *encoder) raw(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
		e.n += uint64(len(b))
	}
}
func (e *encoder) u32(v uint32) { binary.LittleEndian.PutUint32(e.b[:], v); e.raw(e.b[:4]) }
func (e *encoder) u64(v uint64) { binary.LittleEndian.PutUint64(e.b[:], v); e.raw(e.b[:8]) }
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.raw([]byte(s)) }

func (e *encoder) value(v any) error {
	switch x := v.(type) {
	case string:
		e.u32(uint32(TypeString))
		e.str(x)
	case bool:
		e.u32(uint32(TypeBool))
		if x {
			e.raw([]byte{1})
		} else {
			e.raw([]byte{0})
		}
	case uint32:
		e.u32(uint32(TypeUint32))
		e.u32(x)
	case int32:
		e.u32(uint32(TypeInt32))
		e.u32(uint32(x))
	case uint64:
		e.u32(uint32(TypeUint64))
		e.u64(x)
	case float32:
		e.u32(uint32(TypeFloat32))
		e.u32(math.Float32bits(x))
	case []string:
		e.u32(uint32(TypeArray))
		e.u32(uint32(TypeString))
		e.u64(uint64(len(x)))
		for _, s := range x {
			e.str(s)
		}
	case []int32:
		e.u32(uint32(TypeArray))
		e.u32(uint32(TypeInt32))
		e.u64(uint64(len(x)))
		for _, i := range x {
			e.u32(uint32(i))
		}
	case []float32:
		e.u32(uint32(TypeArray))
		e.u32(uint32(TypeFloat32))
		e.u64(uint64(len(x)))
		for _, f := range x {
			e.u32(math.Float32bits(f))
		}
	default:
		return fmt.Errorf("unsupported value type %T", v)
	}
	return nil
}
