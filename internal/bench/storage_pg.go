package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil/internal/postgres"
)

// scratchSchemaPrefix begins the name of the schema S_PG is measured in:
// vigil_bench_s_ and 16 hex digits, new each run. A run that was killed
// leaves its schema behind; DROP SCHEMA … CASCADE removes it.
const scratchSchemaPrefix = "vigil_bench_s_"

// scratchPostgres creates a schema of its own in the database at
// f.DatabaseURL and opens a postgres.Store whose only schema it is: the
// store's migrations create there the tables, partitions and indexes the
// real store has (artifact_ids, artifacts with its three indexes, the
// GIN index of the tsvector), and the store COPYs into them
// (postgres.Store.CopyArtifacts), so no org's data in the database is
// touched. done closes the store and drops the schema with everything in
// it, even when ctx has ended.
func (b *bench) scratchPostgres(ctx context.Context) (storeFunc, func() error, error) {
	st, schema, err := openScratch(ctx, b.f.DatabaseURL)
	if err != nil {
		return nil, nil, err
	}
	return st.CopyArtifacts, func() error {
		st.Close()
		return dropScratch(ctx, b.f.DatabaseURL, schema)
	}, nil
}

// openScratch creates a new scratch schema in the database at url and
// opens a store in it.
func openScratch(ctx context.Context, url string) (*postgres.Store, string, error) {
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return nil, "", fmt.Errorf("scratch schema: %w", err)
	}
	schema := scratchSchemaPrefix + hex.EncodeToString(r[:])
	conn, err := postgres.Connect(ctx, url)
	if err != nil {
		return nil, "", fmt.Errorf("scratch schema: %w", err)
	}
	_, err = conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize())
	conn.Close(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("scratch schema: %w", err)
	}
	st, err := postgres.Open(ctx, url, postgres.Options{Schema: schema})
	if err != nil {
		if derr := dropScratch(ctx, url, schema); derr != nil {
			err = fmt.Errorf("%w; %w", err, derr)
		}
		return nil, "", fmt.Errorf("scratch schema: %w", err)
	}
	return st, schema, nil
}

// dropScratch drops schema and everything in it, within a minute, whether
// or not ctx has ended.
func dropScratch(ctx context.Context, url, schema string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	conn, err := postgres.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("drop scratch schema %s: %w", schema, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		return fmt.Errorf("drop scratch schema %s: %w", schema, err)
	}
	return nil
}
