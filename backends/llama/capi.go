package llama

/*
#include <stdint.h>

// Declared here rather than included: the ollama module links llama.cpp
// into the binary, but its headers are not on this package's include path.
struct llama_context;
void     llama_free(struct llama_context * ctx);
float *  llama_get_logits_ith(struct llama_context * ctx, int32_t i);
uint32_t llama_n_ctx_seq(const struct llama_context * ctx);
*/
import "C"

import (
	"unsafe"

	"github.com/ollama/ollama/llama"
)

// cContext returns the C context inside an ollama llama.Context. The
// wrapper keeps it in its first, unexported field and offers no way to
// free it, nor to read logits without allocating; this is the one place
// that relies on that layout (checked by TestLogitsMatchWrapper).
func cContext(c *llama.Context) *C.struct_llama_context {
	return *(**C.struct_llama_context)(unsafe.Pointer(c))
}

// freeContext releases a context's memory in llama.cpp.
func freeContext(c *llama.Context) { C.llama_free(cContext(c)) }

// contextPerSequence returns how many tokens one sequence may hold.
func contextPerSequence(c *llama.Context) int { return int(C.llama_n_ctx_seq(cContext(c))) }

// copyLogits copies the logits of batch entry i into dst without
// allocating. It reports false when llama.cpp has none for i.
func copyLogits(c *llama.Context, i int, dst []float32) bool {
	p := C.llama_get_logits_ith(cContext(c), C.int32_t(i))
	if p == nil {
		return false
	}
	copy(dst, unsafe.Slice((*float32)(unsafe.Pointer(p)), len(dst)))
	return true
}
