package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/vigil-soc/vigil"
)

// EnrichmentSettings returns org's settings, storing the defaults on first read.
func (s *Store) EnrichmentSettings(ctx context.Context, org string) (*vigil.EnrichmentSettings, error) {
	var body string
	err := s.r.QueryRowContext(ctx, `SELECT settings FROM enrichment_settings WHERE org_id = ?`, org).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		d := vigil.DefaultEnrichmentSettings()
		d.UpdatedAt = vigil.Now()
		b, _ := json.Marshal(d)
		if _, err := s.w.ExecContext(ctx, `INSERT INTO enrichment_settings (org_id, settings, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (org_id) DO NOTHING`, org, string(b), nanos(d.UpdatedAt)); err != nil {
			return nil, wrap("EnrichmentSettings", err)
		}
		err = s.w.QueryRowContext(ctx, `SELECT settings FROM enrichment_settings WHERE org_id = ?`, org).Scan(&body)
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
	return wrap("PutEnrichmentSettings", s.tx(ctx, func(tx *wtx) error {
		var before *vigil.EnrichmentSettings
		var body string
		err := tx.QueryRowContext(ctx, `SELECT settings FROM enrichment_settings WHERE org_id = ?`, org).Scan(&body)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			d := vigil.DefaultEnrichmentSettings()
			before = &d
		case err != nil:
			return err
		default:
			before = &vigil.EnrichmentSettings{}
			if err := json.Unmarshal([]byte(body), before); err != nil {
				return err
			}
		}
		if _, err = tx.ExecContext(ctx, `INSERT INTO enrichment_settings (org_id, settings, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (org_id) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at`,
			org, string(b), nanos(set.UpdatedAt)); err != nil {
			return err
		}
		return vigil.Audit(ctx, org, vigil.AuditSettings, org, before, set)
	}))
}
