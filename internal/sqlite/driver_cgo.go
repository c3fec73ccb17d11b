//go:build cgo && sqlite_fts5

package sqlite

import (
	"errors"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// Built with -tags sqlite_fts5 and cgo: the C library, which stores
// Vigil's batches with about a third less CPU (docs/benchmarks.md, "The
// SQLite drivers"). The tag is the one that compiles FTS5 into
// mattn/go-sqlite3's copy of the library.
const driverModule, driverKind = "github.com/mattn/go-sqlite3", "C library, cgo"

var sqliteDriver = &sqlite3.SQLiteDriver{}

// resultCode returns SQLite's extended result code of a driver error.
func resultCode(err error) (int, bool) {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return int(se.ExtendedCode), true
	}
	return 0, false
}
