// Package pgtest gives tests a fresh PostgreSQL database each: created on
// the server named by VIGIL_TEST_POSTGRES_URL (default: the local one,
// trust auth) and dropped when the test ends. An unreachable server fails
// the test with instructions; CI guarantees one, so nothing is skipped.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

const defaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// AdminURL returns the URL of the database from which test databases are
// created and dropped.
func AdminURL() string {
	if u := os.Getenv("VIGIL_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return defaultURL
}

// Require fails t at once when the server is not reachable.
func Require(t testing.TB) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), AdminURL())
	if err != nil {
		unreachable(t, err)
	}
	conn.Close(context.Background())
}

func unreachable(t testing.TB, err error) {
	t.Helper()
	t.Fatalf("PostgreSQL is not reachable at %s: %v\n"+
		"These tests need a PostgreSQL server (13 or later) and a role that may create databases.\n"+
		"On the development machine: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start\n"+
		"or point VIGIL_TEST_POSTGRES_URL at one (postgres://user:pass@host:port/db?sslmode=disable).",
		AdminURL(), err)
}

// FreshDB creates an empty database vigil_test_<random>, drops it when
// the test ends, and returns its URL.
func FreshDB(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	admin := AdminURL()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		unreachable(t, err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 8)
	rand.Read(b)
	name := "vigil_test_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("CREATE DATABASE %s: %v", name, err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("dropping %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`); err != nil {
			t.Errorf("DROP DATABASE %s: %v", name, err)
		}
	})
	return withDatabase(t, admin, name)
}

// withDatabase returns connection string s naming database name instead.
func withDatabase(t testing.TB, s, name string) string {
	t.Helper()
	if !strings.Contains(s, "://") { // keyword/value form
		return s + " dbname=" + name
	}
	u, err := url.Parse(s)
	if err != nil {
		t.Fatalf("VIGIL_TEST_POSTGRES_URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}
