//go:build !unix

package queue

import "errors"

// diskSpace is unknown here: the embedded server's own errors tell when
// its disk is full.
func diskSpace(string) (free, size uint64, err error) {
	return 0, 0, errors.New("statfs not supported")
}
