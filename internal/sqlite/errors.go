package sqlite

import (
	"errors"

	"github.com/vigil-soc/vigil"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// unavailable returns the Vigil error of a driver error that says the
// database cannot do the work now — its disk is full, an I/O failed, it is
// locked, damaged or read-only — rather than that the work is wrong; nil
// for any other error. Such errors are transient (vigil.Transient): the
// pipeline keeps the queue message and retries it until the database
// takes it, instead of counting the failure towards the dead-letter
// stream, where an artifact the client was told is kept would never
// reach the store.
func unavailable(op string, err error) *vigil.Error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return nil
	}
	msg := ""
	code := vigil.EUNAVAILABLE
	switch se.Code() & 0xff { // the primary result code of an extended one
	case sqlite3.SQLITE_FULL:
		code, msg = vigil.ENOSPACE, "database disk is full"
	case sqlite3.SQLITE_IOERR:
		msg = "database I/O error"
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		msg = "database is busy"
	case sqlite3.SQLITE_NOMEM:
		msg = "database is out of memory"
	case sqlite3.SQLITE_CANTOPEN:
		msg = "database file cannot be opened"
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM:
		msg = "database is read-only"
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		// A damaged file fails every write alike, never one message only.
		msg = "database file is damaged"
	case sqlite3.SQLITE_PROTOCOL:
		msg = "database lock protocol error"
	default:
		return nil
	}
	return &vigil.Error{Code: code, Message: msg, Op: op, Err: err}
}
