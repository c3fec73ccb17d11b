package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

// CopyArtifacts stores the rows InsertArtifacts stores (artifact_ids and
// artifacts, the same columns, the same tokenizing, the same partitions,
// one transaction) with COPY instead of INSERT … ON CONFLICT: the fastest
// way PostgreSQL takes them, which vigil bench measures as the storage
// limit S of this store. It is not idempotent: an ID already stored fails
// the batch with a unique violation, so it is for fresh IDs only, never
// for the pipeline.
func (s *Store) CopyArtifacts(ctx context.Context, org string, arts []*vigil.Artifact) error {
	if len(arts) == 0 {
		return nil
	}
	chunks, months := columnsOf(arts)
	if err := s.ensurePartitions(ctx, months); err != nil {
		return wrap("CopyArtifacts", err)
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		for _, c := range chunks {
			ids := pgx.CopyFromSlice(len(c.ids), func(i int) ([]any, error) {
				return []any{c.ids[i], org, c.tss[i]}, nil
			})
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"artifact_ids"}, []string{"id", "org_id", "ts"}, ids); err != nil {
				return err
			}
			rows := pgx.CopyFromSlice(len(c.ids), func(i int) ([]any, error) {
				return []any{c.ids[i], org, c.sources[i], c.raws[i], c.tss[i], c.metas[i], c.created[i], c.events[i], c.vectors[i], c.enrichments[i]}, nil
			})
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"artifacts"}, artifactColumnNames, rows); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return wrap("CopyArtifacts", err)
	}
	s.stored(len(arts))
	return nil
}

var artifactColumnNames = []string{"id", "org_id", "source", "raw", "ts", "metadata", "created_at", "event", "search", "enrichment"}
