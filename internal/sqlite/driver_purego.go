//go:build !(cgo && sqlite_fts5)

package sqlite

import (
	"errors"

	"modernc.org/sqlite"
)

// The default: SQLite translated to Go, no C compiler needed.
const driverModule, driverKind = "modernc.org/sqlite", "pure Go"

var sqliteDriver = &sqlite.Driver{}

// resultCode returns SQLite's extended result code of a driver error.
func resultCode(err error) (int, bool) {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code(), true
	}
	return 0, false
}
