// Package decode turns a model into tokens with log-probabilities.
//
// A Backend evaluates a model: given the tokens of a sequence it returns
// the logits of the next token. On top of it, Generate samples tokens and
// reports for each one its log-probability and its top alternatives in
// the shape of OpenAI's logprobs.content[], and Score returns the
// log-probability of every token of a text the caller supplies. Both stop
// on end-of-generation, stop strings, a token budget or cancellation.
//
// The vocabulary (Vocab) is the model's tokens as raw bytes, which is what
// constraints work on. Nothing in this package uses cgo; backends/llama
// provides a Backend on llama.cpp.
package decode
