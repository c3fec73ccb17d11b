package postgres

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/vigil-soc/vigil/internal/postgres/pgtest"
)

// Open and Connect refuse or fail on each string without showing any part
// of its password (Kq7, Zx9, SEKRIT): not where pgx's own parse error
// masks it only in part, not where pgx would take the rest of a password
// holding an unescaped '@' or '/' for a host or a database name.
func TestConnectErrorsShowNoPassword(t *testing.T) {
	for _, conn := range []string{
		"postgres://postgres:Kq7@Zx9/SEKRIT@127.0.0.1:5432/vigil",
		"postgres://postgres:Kq7@Zx9@SEKRIT@127.0.0.1:5432/vigil",
		"postgres://postgres:Kq7/Zx9SEKRIT@127.0.0.1:5432/vigil",
		"postgres://postgres:Kq7Zx9SEKRIT@127.0.0.1:5432/vigil?sslmode=bogus",
		"postgres://postgres:Kq7%zzZx9SEKRIT@127.0.0.1:5432/vigil",
		"postgres://127.0.0.1/vigil?options=Kq7Zx9SEKRIT%zz",
		"host=127.0.0.1 password = Kq7Zx9SEKRIT sslmode=bogus",
		"host=127.0.0.1 password='Kq7 Zx9 SEKRIT sslmode=bogus",
		`host=127.0.0.1 password=Kq7\ Zx9\ SEKRIT sslmode=bogus`,
		"host=127.0.0.1 Kq7Zx9SEKRIT",
	} {
		t.Run(RedactURL(conn), func(t *testing.T) {
			_, oerr := Open(context.Background(), conn, Options{})
			_, cerr := Connect(context.Background(), conn)
			for name, err := range map[string]error{"Open": oerr, "Connect": cerr} {
				if err == nil {
					t.Fatalf("%s accepted %q", name, conn)
				}
				for _, part := range []string{"Kq7", "Zx9", "SEKRIT"} {
					if strings.Contains(err.Error(), part) {
						t.Errorf("%s: %v shows %q", name, err, part)
					}
				}
			}
		})
	}
}

// A password with '@' and '/' percent-encoded, as the refusal asks, is
// read whole: the connection is made and pgx holds the decoded password.
func TestConnectEncodedPassword(t *testing.T) {
	pgtest.Require(t)
	u, err := url.Parse(pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), "Kq7@Zx9/SEKRIT")
	if !strings.Contains(u.String(), "Kq7%40Zx9%2FSEKRIT") {
		t.Fatalf("the test URL %s does not encode the password", u.Redacted())
	}
	conn, err := Connect(context.Background(), u.String())
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer conn.Close(context.Background())
	if got := conn.Config().Password; got != "Kq7@Zx9/SEKRIT" {
		t.Errorf("pgx read the password as %q", got)
	}
}
