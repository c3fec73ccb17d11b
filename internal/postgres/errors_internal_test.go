package postgres

import (
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/vigil-soc/vigil"
)

// TestWrapTransient: the failures that say the database cannot do the
// work now are transient (the pipeline retries them without giving up);
// the ones that say the work is wrong are not.
func TestWrapTransient(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("insert: %w", &pgconn.PgError{Code: code}) }
	tests := []struct {
		name string
		err  error
		code string
	}{
		{"disk full", pg("53100"), vigil.ENOSPACE},
		{"out of memory", pg("53200"), vigil.EUNAVAILABLE},
		{"too many connections", pg("53300"), vigil.EUNAVAILABLE},
		{"connection failure", pg("08006"), vigil.EUNAVAILABLE},
		{"admin shutdown", pg("57P01"), vigil.EUNAVAILABLE},
		{"cannot connect now", pg("57P03"), vigil.EUNAVAILABLE},
		{"io error", pg("58030"), vigil.EUNAVAILABLE},
		{"serialization failure", pg("40001"), vigil.EUNAVAILABLE},
		{"read-only standby", pg("25006"), vigil.EUNAVAILABLE},
		{"data corrupted", pg("XX001"), vigil.EUNAVAILABLE},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, vigil.EUNAVAILABLE},
		{"connection lost", fmt.Errorf("receive: %w", io.ErrUnexpectedEOF), vigil.EUNAVAILABLE},
		{"unique violation", pg("23505"), vigil.ECONFLICT},
		{"NUL in text", pg("22021"), vigil.EINVALID},
		{"syntax error", pg("42601"), vigil.EINTERNAL},
		{"check violation", pg("23514"), vigil.EINTERNAL},
		{"other", errors.New("boom"), vigil.EINTERNAL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := wrap("Op", tt.err)
			if got := vigil.ErrorCode(err); got != tt.code {
				t.Fatalf("wrap(%v) code %q, want %q", tt.err, got, tt.code)
			}
			want := tt.code == vigil.EUNAVAILABLE || tt.code == vigil.ENOSPACE
			if got := vigil.Transient(err); got != want {
				t.Errorf("Transient(wrap(%v)) = %v, want %v", tt.err, got, want)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("wrap(%v) lost the cause: %v", tt.err, err)
			}
		})
	}
}
