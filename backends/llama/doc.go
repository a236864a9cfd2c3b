// Package llama is reins' local backend: it runs GGUF models in-process
// through llama.cpp (github.com/ollama/ollama/llama) and gives reins the
// full logit vector at every step, so every mask is exact.
//
// Load takes a GGUF path or an Ollama model name ("ollama:llama3.2:1b"),
// checks the file with a pure-Go GGUF reader before llama.cpp sees it,
// and returns a *Model that implements decode.Backend. A Model keeps its
// KV cache across calls: a request that shares a prefix with what a
// sequence already holds evaluates only the rest, and a new branch
// starts from another sequence's cache.
//
// This is the only reins package that uses cgo. llama.cpp logs to stderr
// through log/slog's default logger: set slog's level to Warn to quiet it.
package llama
