package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"reflect"
)

// KV is one metadata entry to write.
type KV struct {
	Key string
	// Value is a Go value of a GGUF type: uint8, int8, uint16, int16,
	// uint32, int32, uint64, int64, float32, float64, bool or string, or
	// a slice of one of them (an array).
	Value any
}

// Tensor is one tensor to write. Shape is in ggml order (Shape[0] is the
// contiguous dimension). An F32 tensor gives its values in Data (as many
// as Shape holds); a tensor of any type may give its encoded bytes in
// Raw instead, with Type.
type Tensor struct {
	Name  string
	Shape []uint64
	Data  []float32
	Type  TensorType // with Raw; Data is always F32
	Raw   []byte
}

// Write writes a version 3 GGUF file with the given metadata and
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
		typ := TensorF32
		info := TensorInfo{Name: t.Name, Shape: t.Shape, Type: TensorF32}
		size := uint64(len(t.Data)) * 4
		if t.Raw != nil {
			typ, info.Type, size = t.Type, t.Type, uint64(len(t.Raw))
		} else if info.Elements() != uint64(len(t.Data)) {
			return fmt.Errorf("gguf: tensor %q: shape %v holds %d values, data has %d", t.Name, t.Shape, info.Elements(), len(t.Data))
		}
		if !typ.Known() || (len(t.Shape) > 0 && t.Shape[0]%uint64(typ.BlockSize()) != 0) || info.Size() != size {
			return fmt.Errorf("gguf: tensor %q: shape %v of type %s does not take %d bytes", t.Name, t.Shape, typ, size)
		}
		e.str(t.Name)
		e.u32(uint32(len(t.Shape)))
		for _, s := range t.Shape {
			e.u64(s)
		}
		e.u32(uint32(typ))
		e.u64(off)
		off += pad(size, align)
	}
	e.raw(make([]byte, pad(e.n, align)-e.n))
	for _, t := range tensors {
		start := e.n
		if t.Raw != nil {
			e.raw(t.Raw)
		}
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
	if t, ok := scalarType(v); ok {
		e.u32(uint32(t))
		e.scalar(v)
		return nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		return fmt.Errorf("unsupported value type %T", v)
	}
	elem, ok := scalarType(reflect.Zero(rv.Type().Elem()).Interface())
	if !ok {
		return fmt.Errorf("unsupported value type %T", v)
	}
	e.u32(uint32(TypeArray))
	e.u32(uint32(elem))
	e.u64(uint64(rv.Len()))
	for i := range rv.Len() {
		e.scalar(rv.Index(i).Interface())
	}
	return nil
}

// scalarType returns the GGUF type of a Go scalar.
func scalarType(v any) (ValueType, bool) {
	switch v.(type) {
	case uint8:
		return TypeUint8, true
	case int8:
		return TypeInt8, true
	case uint16:
		return TypeUint16, true
	case int16:
		return TypeInt16, true
	case uint32:
		return TypeUint32, true
	case int32:
		return TypeInt32, true
	case float32:
		return TypeFloat32, true
	case bool:
		return TypeBool, true
	case string:
		return TypeString, true
	case uint64:
		return TypeUint64, true
	case int64:
		return TypeInt64, true
	case float64:
		return TypeFloat64, true
	}
	return 0, false
}

func (e *encoder) scalar(v any) {
	switch x := v.(type) {
	case uint8:
		e.raw([]byte{x})
	case int8:
		e.raw([]byte{byte(x)})
	case bool:
		if x {
			e.raw([]byte{1})
		} else {
			e.raw([]byte{0})
		}
	case uint16:
		binary.LittleEndian.PutUint16(e.b[:], x)
		e.raw(e.b[:2])
	case int16:
		binary.LittleEndian.PutUint16(e.b[:], uint16(x))
		e.raw(e.b[:2])
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	case string:
		e.str(x)
	}
}
