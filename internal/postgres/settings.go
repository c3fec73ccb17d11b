package postgres

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

// EnrichmentSettings returns org's settings, storing the defaults on first read.
func (s *Store) EnrichmentSettings(ctx context.Context, org string) (*vigil.EnrichmentSettings, error) {
	var body string
	err := s.pool.QueryRow(ctx, `SELECT settings::text FROM enrichment_settings WHERE org_id = $1`, org).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		d := vigil.DefaultEnrichmentSettings()
		d.UpdatedAt = vigil.Now()
		b, _ := json.Marshal(d)
		// A concurrent first read may store its defaults first; either way
		// the row read back is the one every reader sees from now on.
		if _, err := s.pool.Exec(ctx, `INSERT INTO enrichment_settings (org_id, settings, updated_at) VALUES ($1, $2::text::json, $3)
			ON CONFLICT (org_id) DO NOTHING`, org, string(b), nanos(d.UpdatedAt)); err != nil {
			return nil, wrap("EnrichmentSettings", err)
		}
		err = s.pool.QueryRow(ctx, `SELECT settings::text FROM enrichment_settings WHERE org_id = $1`, org).Scan(&body)
	}
	if err != nil {
		return nil, wrap("EnrichmentSettings", err)
	}
	// Settings stored before a field existed read it at its default.
	out := vigil.DefaultEnrichmentSettings()
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		return nil, wrap("EnrichmentSettings", err)
	}
	return &out, nil
}

// PutEnrichmentSettings replaces org's settings.
func (s *Store) PutEnrichmentSettings(ctx context.Context, org string, set *vigil.EnrichmentSettings) error {
	b, err := json.Marshal(set)
	if err != nil {
		return wrap("PutEnrichmentSettings", err)
	}
	return wrap("PutEnrichmentSettings", s.tx(ctx, func(tx pgx.Tx) error {
		before := vigil.DefaultEnrichmentSettings()
		var body []byte
		err := tx.QueryRow(ctx, `SELECT settings::text FROM enrichment_settings WHERE org_id = $1 FOR UPDATE`, org).Scan(&body)
		switch {
		case errNoRows(err):
		case err != nil:
			return err
		default:
			before = vigil.EnrichmentSettings{}
			if err := json.Unmarshal(body, &before); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO enrichment_settings (org_id, settings, updated_at) VALUES ($1, $2::text::json, $3)
			ON CONFLICT (org_id) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at`,
			org, string(b), nanos(set.UpdatedAt)); err != nil {
			return err
		}
		return vigil.Audit(ctx, org, vigil.AuditSettings, org, &before, set)
	}))
}
