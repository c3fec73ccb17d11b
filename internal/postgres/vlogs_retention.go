package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// ArtifactTenantOrgs lists the orgs that have a VictoriaLogs tenant:
// every org that ever stored an artifact there.
func (s *Store) ArtifactTenantOrgs(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT org_id FROM artifact_tenants ORDER BY org_id`)
	if err != nil {
		return nil, wrap("ArtifactTenantOrgs", err)
	}
	orgs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return orgs, wrap("ArtifactTenantOrgs", err)
}

// DropOrgArtifactClaimsBefore is DropArtifactClaimsBefore for one org:
// the claims, late enrichment and long raw lines of org's artifacts
// stamped before t. It returns how many claims it deleted.
func (s *Store) DropOrgArtifactClaimsBefore(ctx context.Context, org string, t time.Time) (int, error) {
	cutoff := nanos(t)
	var n int64
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM artifact_enrichment e USING artifact_ids k
			WHERE k.id = e.id AND k.org_id = e.org_id AND e.org_id = $1 AND k.ts < $2`, org, cutoff); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM artifact_raws WHERE org_id = $1 AND ts < $2`, org, cutoff); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM artifact_ids WHERE org_id = $1 AND ts < $2`, org, cutoff)
		n = tag.RowsAffected()
		return err
	})
	return int(n), wrap("DropOrgArtifactClaimsBefore", err)
}
