package gguf

import "fmt"

// ValueType is the type tag of a metadata value in a GGUF file.
type ValueType uint32

// The value types of the GGUF format, numbered as the format numbers them.
const (
	TypeUint8 ValueType = iota
	TypeInt8
	TypeUint16
	TypeInt16
	TypeUint32
	TypeInt32
	TypeFloat32
	TypeBool
	TypeString
	TypeArray
	TypeUint64
	TypeInt64
	TypeFloat64
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

// String returns the type's name as the GGUF specification writes it.
func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// size returns the encoded size of a scalar of type t, or 0 for strings,
// arrays and unknown types.
func (t ValueType) size() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// Value is one metadata value. Scalars are held as the Go type of the
// same width (uint8, int32, float32, bool, string, ...); arrays as a slice
// of that type ([]string, []int32, []float32, ...).
type Value struct {
	Type ValueType // the value's type; TypeArray for arrays
	Elem ValueType // the element type of an array
	V    any
	// Offset is the byte offset of the key-value entry in the file, for
	// errors; 0 for a value not read from a file.
	Offset int64
}

// Int returns an integer value of any width as an int64, and whether the
// value was an integer.
func (v Value) Int() (int64, bool) {
	switch x := v.V.(type) {
	case uint8:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint64:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// Ints returns an integer array of any element width as []int64, and
// whether the value was such an array.
func (v Value) Ints() ([]int64, bool) {
	out := func(n int, at func(int) int64) []int64 {
		s := make([]int64, n)
		for i := range s {
			s[i] = at(i)
		}
		return s
	}
	switch x := v.V.(type) {
	case []int32:
		return out(len(x), func(i int) int64 { return int64(x[i]) }), true
	case []uint32:
		return out(len(x), func(i int) int64 { return int64(x[i]) }), true
	case []int64:
		return x, true
	case []uint64:
		return out(len(x), func(i int) int64 { return int64(x[i]) }), true
	case []int8:
		return out(len(x), func(i int) int64 { return int64(x[i]) }), true
	case []uint8:
		return out(len(x), func(i int) int64 { return int64(x[i]) }), true
	case []int16:
		return out(len(x), func(i int) int64 { return int64(x[i]) }), true
	case []uint16:
		return out(len(x), func(i int) int64 { return int64(x[i]) }), true
	}
	return nil, false
}
