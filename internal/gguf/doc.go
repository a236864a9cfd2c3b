// Package gguf reads and writes GGUF files, the model format of llama.cpp.
//
// The reader checks everything a loader trusts before it touches tensor
// data: the magic, the version, every count and length against the
// bytes that remain and against fixed limits (MaxKeys, MaxTensors,
// MaxArrayLen, MaxStringLen, MaxMetadataBytes) before it is read, tensor
// shapes (no zero dimension, no overflow), types (those ggml defines,
// rows a whole number of blocks) and data offsets (packed in order, as
// llama.cpp requires) against the file size. Only regular files are
// opened. A file that passes Open can be handed to llama.cpp's own
// reader without it reading past the end of the file or spending more
// than the limits allow; one that fails gets an *Error naming what is
// wrong and at which byte offset. What llama.cpp assumes of the
// metadata's meaning is checked by backends/llama.
//
// The writer is small and exists so that reins can build its own test
// models (see package fixture) and hostile ones for tests.
package gguf
