//go:build !unix

package datadir

import "errors"

// Space is unknown here: the embedded server's and SQLite's own errors
// tell when the disk is full.
func Space(string) (free, size uint64, err error) {
	return 0, 0, errors.New("statfs not supported")
}
