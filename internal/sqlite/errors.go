package sqlite

import (
	"github.com/vigil-soc/vigil"
)

// SQLite's result codes that Vigil tells apart (sqlite.org/rescode.html),
// whichever driver reports them.
const (
	codePerm             = 3
	codeBusy             = 5
	codeLocked           = 6
	codeNoMem            = 7
	codeReadOnly         = 8
	codeIOErr            = 10
	codeCorrupt          = 11
	codeFull             = 13
	codeCantOpen         = 14
	codeProtocol         = 15
	codeNotADB           = 26
	codeConstraintPK     = 1555 // SQLITE_CONSTRAINT_PRIMARYKEY
	codeConstraintUnique = 2067 // SQLITE_CONSTRAINT_UNIQUE
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
	rc, ok := resultCode(err)
	if !ok {
		return nil
	}
	msg := ""
	code := vigil.EUNAVAILABLE
	switch rc & 0xff { // the primary result code of an extended one
	case codeFull:
		code, msg = vigil.ENOSPACE, "database disk is full"
	case codeIOErr:
		msg = "database I/O error"
	case codeBusy, codeLocked:
		msg = "database is busy"
	case codeNoMem:
		msg = "database is out of memory"
	case codeCantOpen:
		msg = "database file cannot be opened"
	case codeReadOnly, codePerm:
		msg = "database is read-only"
	case codeCorrupt, codeNotADB:
		// A damaged file fails every write alike, never one message only.
		msg = "database file is damaged"
	case codeProtocol:
		msg = "database lock protocol error"
	default:
		return nil
	}
	return &vigil.Error{Code: code, Message: msg, Op: op, Err: err}
}
