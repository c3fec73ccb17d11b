//go:build unix

package correlate

import (
	"syscall"
	"unsafe"
)

// newLogTable returns a zeroed table of n entries for a spill-log
// segment, mapped outside the Go heap: the tables of a full log are tens
// to hundreds of megabytes without a pointer, and in the heap they
// counted against --memory-limit, the collector running the more often
// for memory it never had to scan. free returns it; nothing may use the
// table after. When the mapping fails the table is the heap's.
func newLogTable(n int) (table []uint64, free func()) {
	b, err := syscall.Mmap(-1, 0, n*8, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]uint64, n), func() {}
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), n), func() { syscall.Munmap(b) }
}
