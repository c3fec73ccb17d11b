package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
)

// The SQLite library is chosen when Vigil is built: the C library through
// cgo (github.com/mattn/go-sqlite3) with -tags sqlite_fts5 and a C
// compiler, otherwise the pure-Go translation (modernc.org/sqlite), which
// `go run` and `go build` pick by default and wherever cgo is off. Both
// read and write the same file format; driver_cgo.go and driver_purego.go
// hold what differs: the driver, and the result code of its errors.

// DriverModule is the Go module of the SQLite library this binary was
// built with; DriverName names it for people.
const (
	DriverModule = driverModule
	DriverName   = driverModule + " (" + driverKind + ")"
)

// connector opens connections of the driver to one database and runs
// pragmas on each, in the order given (a DSN's pragmas are run by the
// driver in an order of its own, or not at all).
type connector struct {
	dsn     string
	pragmas []string
}

// Connect opens a connection and sets its pragmas.
func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := sqliteDriver.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("sqlite: driver %s cannot execute statements on a connection", DriverName)
	}
	for _, p := range c.pragmas {
		if _, err := ex.ExecContext(ctx, "PRAGMA "+p, nil); err != nil {
			conn.Close()
			return nil, fmt.Errorf("sqlite: PRAGMA %s: %w", p, err)
		}
	}
	return conn, nil
}

// Driver returns the SQLite driver.
func (c *connector) Driver() driver.Driver { return sqliteDriver }

// OpenDB returns a pool of connections to the database file at path, with
// the driver this binary was built with, each running pragmas (such as
// "query_only(1)") when it opens: the store's own pools, and tools that
// read what the store does not offer (sizes, integrity checks). path may
// end with URI parameters ("?mode=ro").
func OpenDB(path string, pragmas ...string) *sql.DB {
	return sql.OpenDB(&connector{dsn: "file:" + path, pragmas: pragmas})
}
