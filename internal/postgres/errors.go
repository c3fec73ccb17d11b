package postgres

import (
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/vigil-soc/vigil"
)

// unavailable returns the Vigil error of a driver error that says the
// database cannot do the work now — unreachable, restarting, out of disk
// or other resources, busy, failing its I/O — rather than that the work is
// wrong; nil for any other error. Such errors are transient
// (vigil.Transient): the pipeline keeps the queue message and retries it
// until the database takes it, instead of counting the failure towards
// the dead-letter stream, where an artifact the client was told is kept
// would never reach the store.
func unavailable(op string, err error) *vigil.Error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		code, msg := vigil.EUNAVAILABLE, ""
		switch {
		case pe.Code == "53100": // disk_full
			code, msg = vigil.ENOSPACE, "database disk is full"
		case strings.HasPrefix(pe.Code, "53"): // insufficient_resources: memory, connections
			msg = "database is out of resources"
		case strings.HasPrefix(pe.Code, "08"): // connection_exception
			msg = "database connection failed"
		case pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03": // admin or crash shutdown, cannot_connect_now
			msg = "database is restarting"
		case strings.HasPrefix(pe.Code, "58"): // system_error, io_error
			msg = "database I/O error"
		case pe.Code == "40001", pe.Code == "40P01", pe.Code == "55P03", pe.Code == "55006":
			// serialization failure, deadlock (after tx's own tries), lock not available, object in use
			msg = "database is busy"
		case pe.Code == "25006": // read_only_sql_transaction: a standby after a failover
			msg = "database is read-only"
		case pe.Code == "XX001", pe.Code == "XX002": // data_corrupted, index_corrupted
			msg = "database file is damaged"
		default:
			return nil
		}
		return &vigil.Error{Code: code, Message: msg, Op: op, Err: err}
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, pgconn.ErrConnClosed), pgconn.Timeout(err), pgconn.SafeToRetry(err):
		return &vigil.Error{Code: vigil.EUNAVAILABLE, Message: "database unreachable", Op: op, Err: err}
	}
	return nil
}
