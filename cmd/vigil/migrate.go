package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/vigil-soc/vigil/internal/datadir"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

// runMigrate applies pending schema migrations and says which, or that
// there was nothing to do.
func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("migrate", "Applies pending schema migrations to the database and exits (serve applies them at start too).", stderr)
	var c config
	c.dataDirFlag(fs)
	c.databaseFlag(fs)
	addrKeys := fs.Bool("address-keys", false, "with --database-url: also add their address keys to the artifacts stored before migration 0022 (an UPDATE of each; searches read addresses as keys once none is left, which retention also brings about; docs/operations.md)")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if *addrKeys && c.DatabaseURL == "" {
		return fmt.Errorf("--address-keys: only with --database-url (SQLite writes them when it opens the store)")
	}
	var (
		applied []string
		err     error
		where   string
	)
	if c.DatabaseURL != "" {
		where = "PostgreSQL " + postgres.RedactURL(c.DatabaseURL)
		applied, err = postgres.Migrate(ctx, c.DatabaseURL)
		if err == nil && *addrKeys {
			err = postgres.WriteAddressKeys(ctx, c.DatabaseURL, func(part string, n int64) {
				fmt.Fprintf(stdout, "%s: address keys of %d artifacts of %s written\n", where, n, part)
			})
		}
	} else {
		// A running server on this data dir has applied them already, and
		// two writers of one SQLite file are what the lock prevents.
		lock, lerr := datadir.Acquire(c.DataDir)
		if lerr != nil {
			return lerr
		}
		defer lock.Release()
		path := filepath.Join(c.DataDir, "vigil.db")
		where = "SQLite " + path
		applied, err = sqlite.Migrate(ctx, path)
	}
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintf(stdout, "%s: schema up to date, nothing to do\n", where)
		return nil
	}
	fmt.Fprintf(stdout, "%s: applied %d migration(s): %s\n", where, len(applied), strings.Join(applied, ", "))
	return nil
}
