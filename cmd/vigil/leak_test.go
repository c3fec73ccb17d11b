package main

import (
	"fmt"
	"strings"
	"testing"
)

// A start that fails on the database or NATS URL never shows the
// password: not the start-up line, not the error, not any part of a
// password that a parser took for a host or a database name. The
// password of every case is Kq7, Zx9 and SEKRIT joined by characters that
// end a URL's user info when not percent-encoded, or in a keyword/value
// form that pgx's own error masks only in part.
func TestFailedStartShowsNoPassword(t *testing.T) {
	parts := []string{"Kq7", "Zx9", "SEKRIT"}
	dbURLs := []string{
		"postgres://postgres:Kq7@Zx9/SEKRIT@127.0.0.1:5432/vigil",
		"postgres://postgres:Kq7/Zx9SEKRIT@127.0.0.1:5432/vigil",
		"postgresql://postgres:Kq7@Zx9@SEKRIT@127.0.0.1:5432/vigil",
		"host=127.0.0.1 password = Kq7Zx9SEKRIT sslmode=bogus",
		"host=127.0.0.1 password='Kq7 Zx9 SEKRIT sslmode=bogus",
		`host=127.0.0.1 password=Kq7\ Zx9\ SEKRIT sslmode=bogus`,
		"postgres://postgres@127.0.0.1:5432/vigil?sslmode=bogus&password=Kq7Zx9SEKRIT",
	}
	natsURLs := []string{
		"nats://vigil:Kq7@Zx9/SEKRIT@127.0.0.1:4222",
		"nats://vigil:Kq7/Zx9SEKRIT@127.0.0.1:4222",
		"nats://vigil:Kq7%zzZx9SEKRIT@127.0.0.1:4222",
		"nats://127.0.0.1:4222,nats://Kq7Zx9SEKRIT%@127.0.0.1:4222",
	}
	type run struct {
		name string
		args []string
	}
	var runs []run
	// Subtests are named by index: a temporary directory is named after
	// its test.
	for i, u := range dbURLs {
		runs = append(runs,
			run{fmt.Sprintf("migrate/db%d", i), []string{"migrate", "--database-url", u}},
			run{fmt.Sprintf("serve/db%d", i), []string{"serve", "--database-url", u}},
			run{fmt.Sprintf("worker/db%d", i), []string{"worker", "--database-url", u, "--nats-url", "nats://127.0.0.1:4222"}},
		)
	}
	for i, u := range natsURLs {
		runs = append(runs, run{fmt.Sprintf("serve/nats%d", i), []string{"serve", "--nats-url", u}})
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			args := r.args
			if args[0] != "migrate" {
				args = append(args, "--addr", "127.0.0.1:0")
			}
			if args[0] == "serve" {
				args = append(args, "--metrics-addr", "")
			}
			args = append(args, "--data-dir", t.TempDir())
			stdout, stderr, err := runCmd(t, nil, args...)
			if err == nil {
				t.Fatalf("%q started", r.args)
			}
			for _, p := range parts {
				for where, text := range map[string]string{"error": err.Error(), "stderr": stderr, "stdout": stdout} {
					if strings.Contains(text, p) {
						t.Errorf("%q: %s shows %q of the password:\n%s", r.args, where, p, text)
					}
				}
			}
			if !strings.Contains(err.Error(), "URL") {
				t.Errorf("the error does not say the URL is at fault: %v", err)
			}
		})
	}
}
