package sqlite

import (
	"context"

	"github.com/vigil-soc/vigil"
)

// DeploymentID returns the identity of this database, generating it on
// the first call. The row has a fixed key, so of two first calls (two
// processes starting at once) one inserts and the other's insert does
// nothing: both read the same id back.
func (s *Store) DeploymentID(ctx context.Context) (string, error) {
	if _, err := s.w.ExecContext(ctx, `INSERT INTO deployment (singleton, id, created_at) VALUES (1, ?, ?)
		ON CONFLICT (singleton) DO NOTHING`, vigil.NewID(), nanos(vigil.Now())); err != nil {
		return "", wrap("DeploymentID", err)
	}
	var id string
	if err := s.w.QueryRowContext(ctx, `SELECT id FROM deployment WHERE singleton = 1`).Scan(&id); err != nil {
		return "", wrap("DeploymentID", err)
	}
	return id, nil
}
