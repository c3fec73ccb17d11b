package postgres

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestRedactURLHidesWhatPgxReadsAsPassword: for each form, pgx itself
// reads the password (or the client key's password) from the string, and
// RedactURL hides it while keeping where the database is.
func TestRedactURLHidesWhatPgxReadsAsPassword(t *testing.T) {
	tests := []struct {
		conn, want string
		ssl        bool // the secret is sslpassword, not the password
	}{
		{"postgres://vigil:SEK%40RIT@pg-1:5432/vigil", "postgres://vigil:****@pg-1:5432/vigil", false},
		{"postgres://vigil:SEK@RIT@pg-1:5432/vigil", "postgres://vigil:****@pg-1:5432/vigil", false},
		{"postgresql://vigil@pg-1,pg-2/vigil?password=SEKRIT&sslmode=disable", "postgresql://vigil@pg-1,pg-2/vigil?password=****&sslmode=disable", false},
		{"postgres://pg-1/vigil?pass%77ord=SEKRIT", "postgres://pg-1/vigil?pass%77ord=****", false},
		{"postgres://pg-1/vigil?sslpassword=SEKRIT", "postgres://pg-1/vigil?sslpassword=****", true},
		{"host=pg-1 user=vigil password=SEKRIT dbname=vigil", "host=pg-1 user=vigil password=**** dbname=vigil", false},
		{"host=pg-1 password = 'SEK RIT' dbname=vigil", "host=pg-1 password=**** dbname=vigil", false},
		{`host=pg-1 password='SEK\'RIT'`, "host=pg-1 password=****", false},
		{`host=pg-1 password=SEK\ RIT`, "host=pg-1 password=****", false},
		{"  password=SEKRIT\thost=pg-1  ", "password=**** host=pg-1", false},
		{"host=pg-1 sslpassword=SEKRIT", "host=pg-1 sslpassword=****", true},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			cfg, err := pgconn.ParseConfig(tt.conn)
			if err != nil {
				t.Fatalf("pgx does not take %q: %v", tt.conn, err)
			}
			switch {
			case tt.ssl:
				// pgx keeps sslpassword for the client key's TLS set-up:
				// a setting of its own, not a run-time parameter.
				if _, ok := cfg.RuntimeParams["sslpassword"]; ok {
					t.Fatalf("pgx does not read sslpassword from %q", tt.conn)
				}
			case !strings.Contains(cfg.Password, "SEK"):
				t.Fatalf("pgx reads password %q from %q, want the SEKRIT of the case", cfg.Password, tt.conn)
			}
			got := RedactURL(tt.conn)
			if got != tt.want {
				t.Errorf("RedactURL(%q) = %q, want %q", tt.conn, got, tt.want)
			}
			for _, part := range []string{"SEK", "RIT"} {
				if strings.Contains(got, part) {
					t.Errorf("RedactURL(%q) = %q shows %q", tt.conn, got, part)
				}
			}
		})
	}
}
