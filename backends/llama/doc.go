// Package llama is reins' local backend: it runs GGUF models in-process
// through llama.cpp (github.com/ollama/ollama/llama) and gives reins the
// full logit vector at every step, so every mask is exact.
//
// Load takes a GGUF path or an Ollama model name ("ollama:llama3.2:1b")
// and returns a *Model that implements decode.Backend (reins.New(m)
// gives the front door). A Model keeps its KV cache across calls: a
// request that shares a prefix with what a sequence already holds
// evaluates only the rest, and a new branch starts from another
// sequence's cache.
//
// # Checks before llama.cpp
//
// llama.cpp trusts much of a model file and aborts the whole process on
// what it did not expect. Load checks the file in Go first (with
// internal/gguf, then against what llama.cpp's loader, vocabulary and
// llama graph assume: key types and ranges, head and rope dimensions,
// tensor names, shapes and types, token lists, special token ids) and
// returns an error naming the key or tensor and its byte offset instead.
// Architectures it has not checked are refused by name; today that is
// every architecture but llama. Options are bounded likewise (see
// Options), and when llama.cpp still refuses something, the error
// quotes what it logged.
//
// # Logging
//
// llama.cpp logs through one callback for the whole process. This
// package installs its own and sends llama.cpp's messages to the
// Options.Logger of a Load (nil discards them): every message printed
// during that Load, and after it whatever llama.cpp prints while models
// run, until another Load. When the model of the most recent Load is
// closed, messages go to the logger of the Load before it whose model
// is still open, and are discarded once none is. LoadTokenizer discards
// its messages and leaves the routing as it was. Loads take turns.
// Messages do not say which model they are about.
//
// This is the only reins package that uses cgo.
package llama
