package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/vigil-soc/vigil"
)

// parseConfig reads a connection string, in either form pgx accepts, for
// every connection Vigil makes. Its errors never show a password: a URL
// whose password holds an unescaped '@' or '/' is refused before pgx
// reads it (pgx would take the rest of the password for a host or a
// database name, which its connection errors print), and pgx's own parse
// error, whose masking is best effort (a keyword/value password written
// "password = s3cret" is shown), is replaced by one that shows the
// string as RedactURL does.
func parseConfig(url string) (*pgxpool.Config, error) {
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		if err := vigil.CheckUserInfo(url, "@/"); err != nil {
			return nil, fmt.Errorf("postgres: database URL: %w", err)
		}
	}
	cfg, err := pgxpool.ParseConfig(url)
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		// The reason without the string: pgx prints ConnString only
		// between the back quotes of "cannot parse ``: ".
		bare := *pe
		bare.ConnString = ""
		reason := strings.TrimPrefix(bare.Error(), "cannot parse ``: ")
		return nil, scrub(&parseError{msg: "postgres: cannot parse the database URL " + RedactURL(url) + ": " + reason, err: err}, url, nil)
	}
	if err != nil {
		return nil, scrub(fmt.Errorf("postgres: %w", err), url, nil)
	}
	return cfg, nil
}

// parseError is a parse error of pgx with a message of Vigil's.
type parseError struct {
	msg string
	err error
}

func (e *parseError) Error() string { return e.msg }
func (e *parseError) Unwrap() error { return e.err }

// scrub hides in err every secret of the connection string url, as
// written and as decoded, and cfg's password: the last guard, should a
// driver's or a server's message hold one.
func scrub(err error, url string, cfg *pgxpool.Config) error {
	if err == nil {
		return nil
	}
	s := secrets(url)
	if cfg != nil {
		s = append(s, cfg.ConnConfig.Password)
	}
	return vigil.ScrubError(err, s)
}

// Connect opens one connection to the database at url, outside any
// store (for a tool's set-up), with parseConfig's guarantees.
func Connect(ctx context.Context, url string) (*pgx.Conn, error) {
	cfg, err := parseConfig(url)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	return conn, scrub(err, url, cfg)
}
