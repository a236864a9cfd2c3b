package llama

/*
#include <stdint.h>

// Declared here rather than included: the ollama module links llama.cpp
// into the binary, but its headers are not on this package's include path.
struct llama_context;
void     llama_free(struct llama_context * ctx);
float *  llama_get_logits_ith(struct llama_context * ctx, int32_t i);
uint32_t llama_n_ctx_seq(const struct llama_context * ctx);
uint32_t llama_n_batch(const struct llama_context * ctx);
size_t   ggml_type_size(int type);
int64_t  ggml_blck_size(int type);

// ggml_log_callback takes an enum ggml_log_level, an int.
typedef void (*reins_log_callback)(int level, const char * text, void * user_data);
void llama_log_set(reins_log_callback log_callback, void * user_data);
void llama_log_get(reins_log_callback * log_callback, void ** user_data);

extern void reinsLlamaLog(int level, char * text, void * user_data);

// reins_log_to points llama.cpp's (and ggml's) log at reins' callback
// with handle h as its user data (0: discard).
static void reins_log_to(uintptr_t h) {
	llama_log_set((reins_log_callback)reinsLlamaLog, (void *)h);
}

// reins_log_handle returns the user data of the installed callback when
// it is reins', else 0.
static uintptr_t reins_log_handle(void) {
	reins_log_callback cb;
	void * ud;
	llama_log_get(&cb, &ud);
	return cb == (reins_log_callback)reinsLlamaLog ? (uintptr_t)ud : 0;
}
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"

	"github.com/ollama/ollama/llama"
)

// setLogHandle points llama.cpp's log at reins' callback with user data
// h (0: discard).
func setLogHandle(h cgo.Handle) { C.reins_log_to(C.uintptr_t(h)) }

// logHandle returns the user data of llama.cpp's log callback when it is
// reins' (0 otherwise).
func logHandle() cgo.Handle { return cgo.Handle(C.reins_log_handle()) }

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

// ggmlTypeTraits returns ggml's block size and block bytes of a tensor
// type (for the test that checks gguf's table against the linked ggml).
func ggmlTypeTraits(t int) (block, bytes int64) {
	return int64(C.ggml_blck_size(C.int(t))), int64(C.ggml_type_size(C.int(t)))
}

// batchLimit returns how many tokens llama.cpp accepts in one decode.
func batchLimit(c *llama.Context) int { return int(C.llama_n_batch(cContext(c))) }

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
