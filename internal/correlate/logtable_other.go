//go:build !unix

package correlate

// newLogTable returns a zeroed table of n entries for a spill-log
// segment, in the heap where memory cannot be mapped outside it.
func newLogTable(n int) (table []uint64, free func()) {
	return make([]uint64, n), func() {}
}
