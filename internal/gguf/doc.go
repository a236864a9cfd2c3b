// Package gguf reads and writes GGUF files, the model format of llama.cpp.
//
// The reader checks everything a loader trusts before it touches tensor
// data: the magic, the version, every length and count against the bytes
// that remain, tensor shapes and offsets against the file size. A file
// that passes Open can be handed to llama.cpp without it reading past the
// end of the file; one that fails gets an error naming what is wrong and
// at which byte offset.
//
// The writer is small and exists so that reins can build its own test
// models (see package fixture).
package gguf
