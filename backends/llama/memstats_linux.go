package llama

/*
#include <malloc.h>
static void reins_malloc_trim(void) { malloc_trim(0); }
static size_t reins_malloc_in_use(void) {
	struct mallinfo2 m = mallinfo2();
	return m.uordblks + m.hblkhd;
}
*/
import "C"

import "syscall"

// cHeapInUse returns the bytes the C allocator has handed out and not
// taken back (glibc's mallinfo2: in-use heap chunks plus mmapped ones).
// Leak tests use it: unlike the resident set size, it does not move with
// fragmentation.
func cHeapInUse() int64 { return int64(C.reins_malloc_in_use()) }

// trimCHeap returns the C allocator's free memory to the system.
func trimCHeap() { C.reins_malloc_trim() }

// physicalMemory returns the machine's memory in bytes, or 0 when
// unknown.
func physicalMemory() int64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
