// Package vigil holds Vigil's domain: the records it keeps (artifacts,
// observations, incidents, nodes, classification rules, roles, enrichment
// settings), its one error type and the contracts (Store, Queue) that the
// engines in internal/ implement. It performs no I/O.
package vigil

import (
	"crypto/rand"
	"time"

	"github.com/google/uuid"
)

// NewID returns a new time-ordered identifier (UUIDv7) as a string.
func NewID() string { return NewUUID().String() }

// NewUUID returns a new time-ordered identifier (UUIDv7), for those that
// keep many of them: 16 bytes instead of a 36-byte string.
func NewUUID() uuid.UUID {
	id, err := uuid.NewV7()
	if err != nil {
		// NewV7 only fails when the system random source fails.
		return uuid.Must(uuid.NewRandomFromReader(rand.Reader))
	}
	return id
}

// ValidID reports whether s is a well-formed UUID in canonical form.
func ValidID(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}

// Now returns the current time in UTC truncated to microseconds, the
// precision every store keeps, so a value read back equals the value written.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }
