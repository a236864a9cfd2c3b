package gguf

import "fmt"

// TensorType is a tensor's element type: ggml's enum ggml_type, as a
// GGUF tensor directory writes it.
type TensorType uint32

// The tensor types ggml defines. Numbers missing from the list (4, 5,
// 31 to 33, 36 to 38) were types ggml has since removed; a file that
// uses them is refused, as llama.cpp refuses it.
const (
	TensorF32     TensorType = 0
	TensorF16     TensorType = 1
	TensorQ4_0    TensorType = 2
	TensorQ4_1    TensorType = 3
	TensorQ5_0    TensorType = 6
	TensorQ5_1    TensorType = 7
	TensorQ8_0    TensorType = 8
	TensorQ8_1    TensorType = 9
	TensorQ2_K    TensorType = 10
	TensorQ3_K    TensorType = 11
	TensorQ4_K    TensorType = 12
	TensorQ5_K    TensorType = 13
	TensorQ6_K    TensorType = 14
	TensorQ8_K    TensorType = 15
	TensorIQ2_XXS TensorType = 16
	TensorIQ2_XS  TensorType = 17
	TensorIQ3_XXS TensorType = 18
	TensorIQ1_S   TensorType = 19
	TensorIQ4_NL  TensorType = 20
	TensorIQ3_S   TensorType = 21
	TensorIQ2_S   TensorType = 22
	TensorIQ4_XS  TensorType = 23
	TensorI8      TensorType = 24
	TensorI16     TensorType = 25
	TensorI32     TensorType = 26
	TensorI64     TensorType = 27
	TensorF64     TensorType = 28
	TensorIQ1_M   TensorType = 29
	TensorBF16    TensorType = 30
	TensorTQ1_0   TensorType = 34
	TensorTQ2_0   TensorType = 35
	TensorMXFP4   TensorType = 39

	numTensorTypes = 40 // GGML_TYPE_COUNT
)

// tensorTypes holds, for every type, its name, how many elements one
// block holds and how many bytes it takes: ggml's type_traits table
// (ggml.c), checked against the linked ggml by backends/llama's tests.
var tensorTypes = [numTensorTypes]struct {
	name  string
	block int64
	bytes int64
}{
	TensorF32:     {"F32", 1, 4},
	TensorF16:     {"F16", 1, 2},
	TensorQ4_0:    {"Q4_0", 32, 18},
	TensorQ4_1:    {"Q4_1", 32, 20},
	TensorQ5_0:    {"Q5_0", 32, 22},
	TensorQ5_1:    {"Q5_1", 32, 24},
	TensorQ8_0:    {"Q8_0", 32, 34},
	TensorQ8_1:    {"Q8_1", 32, 36},
	TensorQ2_K:    {"Q2_K", 256, 84},
	TensorQ3_K:    {"Q3_K", 256, 110},
	TensorQ4_K:    {"Q4_K", 256, 144},
	TensorQ5_K:    {"Q5_K", 256, 176},
	TensorQ6_K:    {"Q6_K", 256, 210},
	TensorQ8_K:    {"Q8_K", 256, 292},
	TensorIQ2_XXS: {"IQ2_XXS", 256, 66},
	TensorIQ2_XS:  {"IQ2_XS", 256, 74},
	TensorIQ3_XXS: {"IQ3_XXS", 256, 98},
	TensorIQ1_S:   {"IQ1_S", 256, 50},
	TensorIQ4_NL:  {"IQ4_NL", 32, 18},
	TensorIQ3_S:   {"IQ3_S", 256, 110},
	TensorIQ2_S:   {"IQ2_S", 256, 82},
	TensorIQ4_XS:  {"IQ4_XS", 256, 136},
	TensorI8:      {"I8", 1, 1},
	TensorI16:     {"I16", 1, 2},
	TensorI32:     {"I32", 1, 4},
	TensorI64:     {"I64", 1, 8},
	TensorF64:     {"F64", 1, 8},
	TensorIQ1_M:   {"IQ1_M", 256, 56},
	TensorBF16:    {"BF16", 1, 2},
	TensorTQ1_0:   {"TQ1_0", 256, 54},
	TensorTQ2_0:   {"TQ2_0", 256, 66},
	TensorMXFP4:   {"MXFP4", 32, 17},
}

// Known reports whether t is a type ggml can load from a file.
func (t TensorType) Known() bool { return t < numTensorTypes && tensorTypes[t].block > 0 }

// BlockSize returns how many elements one block of type t holds (1 for
// plain types, 32 or 256 for quantized ones), or 0 for an unknown type.
func (t TensorType) BlockSize() int64 {
	if !t.Known() {
		return 0
	}
	return tensorTypes[t].block
}

// BlockBytes returns the bytes one block of type t takes, or 0 for an
// unknown type.
func (t TensorType) BlockBytes() int64 {
	if !t.Known() {
		return 0
	}
	return tensorTypes[t].bytes
}

// String returns ggml's name for the type ("F32", "Q4_K").
func (t TensorType) String() string {
	if t.Known() {
		return tensorTypes[t].name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}
