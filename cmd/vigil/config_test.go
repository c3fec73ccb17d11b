package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConfigStringHidesCredentials: every credential form pgx and the NATS
// client accept stays out of the start-up log line, and where the
// database and queue are stays in it.
func TestConfigStringHidesCredentials(t *testing.T) {
	tests := []struct {
		name    string
		c       config
		secrets []string
		want    []string
	}{
		{"database URL user info", config{DatabaseURL: "postgres://vigil:s3cret@pg-1:5432/vigil"},
			[]string{"s3cret"}, []string{"database_url=postgres://vigil:****@pg-1:5432/vigil "}},
		{"database URL password parameter", config{DatabaseURL: "postgres://vigil@pg-1/vigil?sslmode=require&password=s3cret"},
			[]string{"s3cret"}, []string{"database_url=postgres://vigil@pg-1/vigil?sslmode=require&password=**** "}},
		{"database URL encoded parameter name", config{DatabaseURL: "postgresql://pg-1/vigil?pass%77ord=s3cret&sslpassword=k3y"},
			[]string{"s3cret", "k3y"}, []string{"postgresql://pg-1/vigil?pass%77ord=****&sslpassword=****"}},
		{"database URL password with @ and /", config{DatabaseURL: "postgres://vigil:SEK/R@IT@pg-1/vigil"},
			[]string{"SEK", "R@IT"}, []string{"postgres://****@pg-1/vigil"}},
		{"database URL password with ?", config{DatabaseURL: "postgres://vigil:SEK?RIT@pg-1/vigil"},
			[]string{"SEK", "RIT"}, []string{"postgres://****@pg-1/vigil"}},
		{"database URL unknown parameter", config{DatabaseURL: "postgres://pg-1/vigil?options=-c%20key%3Ds3cret"},
			[]string{"s3cret"}, []string{"postgres://pg-1/vigil?options=****"}},
		{"keyword/value", config{DatabaseURL: "host=pg-1 port=5432 user=vigil password=s3cret dbname=vigil"},
			[]string{"s3cret"}, []string{"database_url=host=pg-1 port=5432 user=vigil password=**** dbname=vigil "}},
		{"keyword/value quoted", config{DatabaseURL: `host=pg-1 password = 'SEK Q\'RIT' sslpassword=k3y dbname=vigil`},
			[]string{"SEK", "RIT", "k3y"}, []string{"host=pg-1 password=**** sslpassword=**** dbname=vigil"}},
		{"keyword/value escaped blank", config{DatabaseURL: `password=SEK\ RIT host=pg-1`},
			[]string{"SEK", "RIT"}, []string{"password=**** host=pg-1"}},
		{"keyword/value unterminated quote", config{DatabaseURL: `host=pg-1 password='s3cret dbname=vigil`},
			[]string{"s3cret"}, []string{"host=pg-1 password=****"}},
		{"keyword/value stray word", config{DatabaseURL: `s3cret host=pg-1`},
			[]string{"s3cret"}, []string{"database_url=**** nats_url"}},
		{"NATS token", config{NATSURL: "nats://T0KEN@nats-1:4222"},
			[]string{"T0KEN"}, []string{"nats_url=nats://****@nats-1:4222 "}},
		{"NATS user and password", config{NATSURL: "nats://vigil:s3cret@nats-1:4222"},
			[]string{"s3cret"}, []string{"nats_url=nats://****@nats-1:4222 "}},
		{"NATS server list", config{NATSURL: "nats://T0KEN@nats-1:4222, tls://u:s3cret@nats-2:4222,nats-3"},
			[]string{"T0KEN", "s3cret"}, []string{"nats_url=nats://****@nats-1:4222,tls://****@nats-2:4222,nats-3 "}},
		{"NATS without scheme", config{NATSURL: "T0KEN@nats-1:4222"},
			[]string{"T0KEN"}, []string{"nats_url=****@nats-1:4222 "}},
		{"JWKS URL", config{JWTJWKSURL: "https://u:s3cret@idp.example/jwks?api_key=T0KEN"},
			[]string{"s3cret", "T0KEN"}, []string{"jwks_url=https://****@idp.example/jwks?api_key=**** "}},
		{"VictoriaLogs URLs", config{ArtifactsURL: "https://vigil:s3cret@vl-front:9428", ArtifactsStorage: "https://u:T0KEN@vl-1:9428, https://vl-2:9428"},
			[]string{"s3cret", "T0KEN"}, []string{"artifacts_url=https://****@vl-front:9428 artifacts_storage=https://****@vl-1:9428,https://vl-2:9428 "}},
		{"JWT secret", config{JWTSecret: "s3cret-s3cret-s3cret-s3cret-s3cret"},
			[]string{"s3cret"}, []string{"jwt_secret=**** "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.c.String()
			for _, s := range tt.secrets {
				if strings.Contains(got, s) {
					t.Errorf("String() = %q shows %q", got, s)
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("String() = %q, want it to hold %q", got, w)
				}
			}
		})
	}
}

// TestShortJWTSecretRefused: an HS256 secret under 32 bytes stops serve,
// worker and token, whether it comes from the flag, the environment or
// the data dir's file, with an error that says what is wanted.
func TestShortJWTSecretRefused(t *testing.T) {
	short := strings.Repeat("s", 31)
	fileDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(fileDir, secretFile), []byte(short+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"serve flag", []string{"serve", "--addr", "127.0.0.1:0", "--jwt-secret", "x"}, nil},
		{"serve environment", []string{"serve", "--addr", "127.0.0.1:0"}, map[string]string{"VIGIL_JWT_SECRET": short}},
		{"worker environment", []string{"worker", "--addr", "127.0.0.1:0"}, map[string]string{"VIGIL_JWT_SECRET": "x"}},
		{"token flag", []string{"token", "--org", "acme", "--jwt-secret", short}, nil},
		{"token environment", []string{"token", "--org", "acme"}, map[string]string{"VIGIL_JWT_SECRET": "x"}},
		{"token file", []string{"token", "--org", "acme", "--data-dir", fileDir}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if !strings.Contains(strings.Join(args, " "), "--data-dir") {
				args = append(args, "--data-dir", t.TempDir())
			}
			// Before the check, serve and worker started: the timeout ends them.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			err := run(ctx, args, func(k string) string { return tc.env[k] }, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), "at least 32 bytes") {
				t.Fatalf("error %v, want one saying the secret must be at least 32 bytes", err)
			}
			if stdout.Len() > 0 {
				t.Errorf("a token was minted with a short secret: %q", stdout.String())
			}
		})
	}
}

// TestOIDCFlags: the console's OIDC sign-in is configured all or nothing,
// with URLs a browser may be sent to, the secret from the environment,
// and an API that can verify the provider's tokens.
func TestOIDCFlags(t *testing.T) {
	jwks := []string{"--jwt-jwks-url", "https://idp.example/keys"}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string // "" for valid
	}{
		{"off", nil, nil, ""},
		{"provider", append([]string{"--oidc-issuer", "https://idp.example", "--oidc-client-id", "vigil"}, jwks...), nil, ""},
		{"from the environment", jwks, map[string]string{"VIGIL_OIDC_ISSUER": "https://idp.example", "VIGIL_OIDC_CLIENT_ID": "vigil",
			"VIGIL_OIDC_CLIENT_SECRET": "s3cret", "VIGIL_OIDC_SCOPES": "openid, profile"}, ""},
		{"loopback over http", append([]string{"--oidc-issuer", "http://127.0.0.1:5556/dex", "--oidc-client-id", "vigil",
			"--oidc-redirect-url", "http://localhost:8080/signin/oidc/callback"}, jwks...), nil, ""},
		{"no client id", append([]string{"--oidc-issuer", "https://idp.example"}, jwks...), nil, "--oidc-issuer needs --oidc-client-id"},
		{"client without issuer", []string{"--oidc-client-id", "vigil"}, nil, "need --oidc-issuer"},
		{"no JWKS", []string{"--oidc-issuer", "https://idp.example", "--oidc-client-id", "vigil"}, nil, "--oidc-issuer needs --jwt-jwks-url"},
		{"http to another host", append([]string{"--oidc-issuer", "http://idp.example", "--oidc-client-id", "vigil"}, jwks...), nil,
			"http is allowed only to a loopback host"},
		{"relative issuer", append([]string{"--oidc-issuer", "idp.example", "--oidc-client-id", "vigil"}, jwks...), nil, "not an absolute http(s) URL"},
		{"redirect elsewhere", append([]string{"--oidc-issuer", "https://idp.example", "--oidc-client-id", "vigil",
			"--oidc-redirect-url", "https://vigil.example/callback"}, jwks...), nil, "must end in /signin/oidc/callback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c config
			fs := newFlagSet("serve", "", &bytes.Buffer{})
			c.flags(fs)
			c.oidcFlags(fs)
			err := parseFlags(fs, tc.args, func(k string) string { return tc.env[k] })
			if err == nil {
				err = c.validate()
			}
			if tc.want == "" && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if tc.env["VIGIL_OIDC_CLIENT_SECRET"] != "" {
				o := c.oidc()
				if o.ClientSecret != "s3cret" || len(o.Scopes) != 2 || strings.Contains(c.String(), "s3cret") {
					t.Errorf("from the environment: %+v; logged as %s", o, c.String())
				}
			}
		})
	}
}

// TestOIDCServe: vigil serve configured from the environment offers the
// provider on the console's sign-in page, says so readably when the
// provider cannot be reached, and never logs the client secret.
func TestOIDCServe(t *testing.T) {
	const secret = "client-s3cret-of-the-console"
	env := map[string]string{"VIGIL_OIDC_ISSUER": "http://127.0.0.1:9/", "VIGIL_OIDC_CLIENT_ID": "vigil",
		"VIGIL_OIDC_CLIENT_SECRET": secret, "VIGIL_OIDC_NAME": "Acme SSO", "VIGIL_JWT_JWKS_URL": "http://127.0.0.1:9/keys"}
	log := serveUntil(t, `"msg":"listening"`, func(log string) {
		base := "http://" + addrOf(t, log, "listening")
		get := func(path string) (int, string) {
			req, _ := http.NewRequest("GET", base+path, nil)
			req.Header.Set("Accept", "text/html")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			return res.StatusCode, string(b)
		}
		if status, body := get("/signin"); status != http.StatusOK || !strings.Contains(body, "Sign in with Acme SSO") {
			t.Errorf("sign-in page: %d without the provider's button", status)
		}
		if status, body := get("/signin/oidc"); status != http.StatusBadGateway || !strings.Contains(body, "Acme SSO could not be reached") {
			t.Errorf("unreachable provider: %d %.300s", status, body)
		}
	}, env, "--data-dir", t.TempDir(), "--metrics-addr", "")
	if strings.Contains(log, secret) {
		t.Errorf("the client secret is in the log:\n%s", log)
	}
	if !strings.Contains(log, "oidc_client_secret=****") {
		t.Errorf("the start-up line does not say a secret is set:\n%s", log)
	}
}

// TestArtifactsFlags: --artifacts-url and --artifacts-storage name a
// VictoriaLogs cluster beside PostgreSQL; anything else is refused at
// start with the flag named and no password shown.
func TestArtifactsFlags(t *testing.T) {
	db := []string{"--database-url", "postgres://pg-1/vigil"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"front and storage", append([]string{"--artifacts-url", "http://vl:9428", "--artifacts-storage", "http://vl-1:9428,http://vl-2:9428"}, db...), ""},
		{"no database", []string{"--artifacts-url", "http://vl:9428", "--artifacts-storage", "http://vl-1:9428"}, "--artifacts-url needs --database-url"},
		{"no storage nodes", append([]string{"--artifacts-url", "http://vl:9428"}, db...), "--artifacts-storage must list"},
		{"storage without front", append([]string{"--artifacts-storage", "http://vl-1:9428"}, db...), "--artifacts-storage needs --artifacts-url"},
		{"not http", append([]string{"--artifacts-url", "postgres://u:s3cret@vl:9428", "--artifacts-storage", "http://vl-1:9428"}, db...),
			"--artifacts-url: \"postgres://****@vl:9428\" is not an http(s)://host:port URL"},
		{"no host", append([]string{"--artifacts-url", "vl:9428", "--artifacts-storage", "http://vl-1:9428"}, db...), "--artifacts-url"},
		{"a query", append([]string{"--artifacts-url", "http://vl:9428?AccountID=7", "--artifacts-storage", "http://vl-1:9428"}, db...), "--artifacts-url"},
		{"bad storage node", append([]string{"--artifacts-url", "http://vl:9428", "--artifacts-storage", "http://vl-1:9428,ftp://x:s3cret@vl-2"}, db...),
			"--artifacts-storage: \"ftp://****@vl-2\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c config
			fs := newFlagSet("serve", "", io.Discard)
			c.flags(fs)
			err := parseFlags(fs, tc.args, func(string) string { return "" })
			if err == nil {
				err = c.validate()
			}
			if tc.want == "" && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("the error shows a password: %v", err)
			}
		})
	}
}

// TestAuditRetentionFlag: the audit log is kept a year unless
// --audit-retention-days or VIGIL_AUDIT_RETENTION_DAYS says otherwise (0
// keeps it); a negative value is refused.
func TestAuditRetentionFlag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		want    int
		refused bool
	}{
		{"default", nil, nil, 365, false},
		{"flag", []string{"--audit-retention-days", "30"}, nil, 30, false},
		{"environment", nil, map[string]string{"VIGIL_AUDIT_RETENTION_DAYS": "0"}, 0, false},
		{"negative", []string{"--audit-retention-days", "-1"}, nil, -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c config
			fs := newFlagSet("serve", "", io.Discard)
			c.flags(fs)
			if err := parseFlags(fs, tc.args, func(k string) string { return tc.env[k] }); err != nil {
				t.Fatal(err)
			}
			if c.AuditRetentionDays != tc.want {
				t.Errorf("AuditRetentionDays %d, want %d", c.AuditRetentionDays, tc.want)
			}
			err := c.validate()
			if refused := err != nil && strings.Contains(err.Error(), "--audit-retention-days"); refused != tc.refused {
				t.Errorf("validate: %v, want refused=%v", err, tc.refused)
			}
		})
	}
}

// TestOrgRetentionFlag: --org-retention-days names orgs and their days
// (0: forever), needs a VictoriaLogs cluster, and refuses what is not
// org=days naming the flag.
func TestOrgRetentionFlag(t *testing.T) {
	cluster := []string{"--database-url", "postgres://u@h/db", "--artifacts-url", "http://127.0.0.1:9428", "--artifacts-storage", "http://127.0.0.1:9491"}
	day := 24 * time.Hour
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		want    map[string]time.Duration
		refused string
	}{
		{"two orgs", append([]string{"--org-retention-days", "acme=30, globex=0"}, cluster...), nil, map[string]time.Duration{"acme": 30 * day, "globex": 0}, ""},
		{"environment", cluster, map[string]string{"VIGIL_ORG_RETENTION_DAYS": "acme=7"}, map[string]time.Duration{"acme": 7 * day}, ""},
		{"no cluster", []string{"--org-retention-days", "acme=30"}, nil, nil, "needs --artifacts-url"},
		{"no days", append([]string{"--org-retention-days", "acme"}, cluster...), nil, nil, "is not org=days"},
		{"negative", append([]string{"--org-retention-days", "acme=-1"}, cluster...), nil, nil, "is not org=days"},
		{"not a number", append([]string{"--org-retention-days", "acme=30d"}, cluster...), nil, nil, "is not org=days"},
		{"no org", append([]string{"--org-retention-days", "=30"}, cluster...), nil, nil, "is not org=days"},
		{"twice", append([]string{"--org-retention-days", "acme=1,acme=2"}, cluster...), nil, nil, "named twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c config
			fs := newFlagSet("serve", "", io.Discard)
			c.flags(fs)
			if err := parseFlags(fs, tc.args, func(k string) string { return tc.env[k] }); err != nil {
				t.Fatal(err)
			}
			err := c.validate()
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), "--org-retention-days") || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("validate: %v; want it refused naming --org-retention-days (%s)", err, tc.refused)
				}
				return
			}
			if err != nil && strings.Contains(err.Error(), "retention") {
				t.Fatalf("validate: %v", err)
			}
			got, _ := c.orgRetention()
			if len(got) != len(tc.want) {
				t.Fatalf("orgs %v, want %v", got, tc.want)
			}
			for org, d := range tc.want {
				if g, ok := got[org]; !ok || g != d {
					t.Errorf("org %s: %v, want %v", org, g, d)
				}
			}
		})
	}
}
