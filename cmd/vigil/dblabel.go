package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/vigil-soc/vigil/internal/postgres"
)

// databaseLabel says where the configured database is, for people: the
// queue keeps it in its owner record and names it when it refuses another
// deployment. Any client of the NATS account may read that record, so the
// label holds no user name, password or query parameter.
func databaseLabel(c *config) string {
	if c.DatabaseURL == "" {
		path := filepath.Join(c.DataDir, "vigil.db")
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		if host, err := os.Hostname(); err == nil {
			return "sqlite " + path + " on " + host
		}
		return "sqlite " + path
	}
	// Parsed after redaction: a password holding '?' or '/' would
	// otherwise land in the host or path.
	if u, err := url.Parse(postgres.RedactURL(c.DatabaseURL)); err == nil && u.Scheme != "" {
		return u.Scheme + "://" + u.Host + u.Path
	}
	// The keyword/value form (host=… dbname=… password=…): where only.
	var where []string
	for _, f := range strings.Fields(c.DatabaseURL) {
		if k, _, ok := strings.Cut(f, "="); ok && (k == "host" || k == "port" || k == "dbname") {
			where = append(where, f)
		}
	}
	return "postgres " + strings.Join(where, " ")
}
