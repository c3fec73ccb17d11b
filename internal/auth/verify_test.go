package auth_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/auth"
)

func TestMintVerifyRoundTrip(t *testing.T) {
	v := mustVerifier(t, auth.Config{HS256Secret: testSecret})
	now := time.Now()
	in := auth.Claims{
		Subject:     "user-1",
		OrgID:       "org-1",
		Roles:       []string{"analyst", "responder"},
		Permissions: []string{vigil.PermSignalsWrite, vigil.PermIncidentsRead},
	}
	tok := mustMint(t, testSecret, in, 15*time.Minute, now)

	got, err := v.Verify(t.Context(), tok)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.Subject != in.Subject || got.OrgID != in.OrgID {
		t.Errorf("sub, org = %q, %q; want %q, %q", got.Subject, got.OrgID, in.Subject, in.OrgID)
	}
	if !slices.Equal(got.Roles, in.Roles) {
		t.Errorf("roles = %q, want %q", got.Roles, in.Roles)
	}
	if !slices.Equal(got.Permissions, in.Permissions) {
		t.Errorf("permissions = %q, want %q", got.Permissions, in.Permissions)
	}
	if want := now.Add(15 * time.Minute).Truncate(time.Second); !got.ExpiresAt.Equal(want) {
		t.Errorf("expires at = %v, want %v", got.ExpiresAt, want)
	}
}

func TestMintClaims(t *testing.T) {
	now := time.Unix(1_700_000_000, 500_000_000)
	tests := []struct {
		name     string
		in       auth.Claims
		want     map[string]any
		wantNone []string
	}{
		{
			name: "all claims",
			in:   auth.Claims{Subject: "u", OrgID: "o", Roles: []string{"r"}, Permissions: []string{"admin"}},
			want: map[string]any{
				"sub": "u", "org_id": "o", "roles": []any{"r"}, "permissions": []any{"admin"},
				"iat": float64(1_700_000_000), "nbf": float64(1_700_000_000), "exp": float64(1_700_000_060),
			},
		},
		{
			name:     "empty ones omitted",
			in:       auth.Claims{OrgID: "o", Roles: []string{}},
			want:     map[string]any{"org_id": "o", "exp": float64(1_700_000_060)},
			wantNone: []string{"sub", "roles", "permissions"},
		},
		{
			name: "ExpiresAt ignored",
			in:   auth.Claims{OrgID: "o", ExpiresAt: now.Add(100 * time.Hour)},
			want: map[string]any{"exp": float64(1_700_000_060)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := mustMint(t, testSecret, tt.in, time.Minute, now)
			header, payload := decodeSegments(t, tok)
			if header["alg"] != "HS256" {
				t.Errorf("alg = %v, want HS256", header["alg"])
			}
			for k, want := range tt.want {
				if got, ok := payload[k]; !ok || !jsonEqual(t, got, want) {
					t.Errorf("claim %q = %v (present %v), want %v", k, got, ok, want)
				}
			}
			for _, k := range tt.wantNone {
				if _, ok := payload[k]; ok {
					t.Errorf("claim %q present, want omitted", k)
				}
			}
		})
	}
}

func TestMintErrors(t *testing.T) {
	now := time.Now()
	ok := auth.Claims{OrgID: "o"}
	tests := []struct {
		name   string
		secret []byte
		c      auth.Claims
		ttl    time.Duration
		now    time.Time
	}{
		{"nil secret", nil, ok, time.Minute, now},
		{"empty secret", []byte{}, ok, time.Minute, now},
		{"1-byte secret", []byte("x"), ok, time.Minute, now},
		{"31-byte secret", testSecret[:31], ok, time.Minute, now},
		{"no org", testSecret, auth.Claims{Subject: "u"}, time.Minute, now},
		{"blank org", testSecret, auth.Claims{OrgID: " "}, time.Minute, now},
		{"org with a slash", testSecret, auth.Claims{OrgID: "acme/eu"}, time.Minute, now},
		{"sub with a newline", testSecret, auth.Claims{OrgID: "o", Subject: "u\n"}, time.Minute, now},
		{"zero ttl", testSecret, ok, 0, now},
		{"negative ttl", testSecret, ok, -time.Minute, now},
		{"zero now", testSecret, ok, time.Minute, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := auth.Mint(tt.secret, tt.c, tt.ttl, tt.now)
			if err == nil {
				t.Fatalf("Mint = %q, nil; want error", tok)
			}
			if code := vigil.ErrorCode(err); code != vigil.EINVALID {
				t.Errorf("code = %q, want %q", code, vigil.EINVALID)
			}
		})
	}
}

// TestVerifyClaims checks the claim rules on tokens signed with the right
// secret.
func TestVerifyClaims(t *testing.T) {
	v := mustVerifier(t, auth.Config{HS256Secret: testSecret})
	now := time.Now()
	tests := []struct {
		name    string
		edit    func(c jwt.MapClaims)
		wantErr string // "" = valid
		check   func(t *testing.T, c *auth.Claims)
	}{
		{name: "valid", edit: func(jwt.MapClaims) {}, check: func(t *testing.T, c *auth.Claims) {
			if c.Subject != "user-1" || c.OrgID != "org-1" ||
				!slices.Equal(c.Roles, []string{"analyst"}) ||
				!slices.Equal(c.Permissions, []string{vigil.PermIncidentsRead}) {
				t.Errorf("claims = %+v", c)
			}
		}},
		{name: "expired", edit: set("exp", now.Add(-2*time.Minute).Unix()), wantErr: "token expired"},
		{name: "expired long ago", edit: set("exp", now.Add(-48*time.Hour).Unix()), wantErr: "token expired"},
		{name: "expired within leeway", edit: set("exp", now.Add(-30*time.Second).Unix())},
		{name: "exp missing", edit: del("exp"), wantErr: "token has no exp"},
		{name: "exp not a number", edit: set("exp", "tomorrow"), wantErr: "malformed token"},
		{name: "org_id missing", edit: del("org_id"), wantErr: "token has no org_id"},
		{name: "org_id empty", edit: set("org_id", ""), wantErr: "token has no org_id"},
		{name: "org_id null", edit: set("org_id", nil), wantErr: "token has no org_id"},
		{name: "org_id number", edit: set("org_id", 42), wantErr: "invalid org_id claim"},
		{name: "org_id array", edit: set("org_id", []string{"org-1"}), wantErr: "invalid org_id claim"},
		{name: "org_id object", edit: set("org_id", map[string]string{"id": "org-1"}), wantErr: "invalid org_id claim"},
		{name: "org_id blank", edit: set("org_id", "   "), wantErr: "invalid org_id claim"},
		{name: "org_id with NUL", edit: set("org_id", "org\x00-1"), wantErr: "invalid org_id claim"},
		{name: "org_id of 10 KB", edit: set("org_id", strings.Repeat("o", 10<<10)), wantErr: "invalid org_id claim"},
		{name: "org_id of 129 bytes", edit: set("org_id", strings.Repeat("o", 129)), wantErr: "invalid org_id claim"},
		{name: "org_id with a blank", edit: set("org_id", "acme corp"), wantErr: "invalid org_id claim"},
		{name: "org_id with a newline", edit: set("org_id", "acme\n"), wantErr: "invalid org_id claim"},
		{name: "org_id starting with a dot", edit: set("org_id", ".acme"), wantErr: "invalid org_id claim"},
		{name: "org_id not ASCII", edit: set("org_id", "café"), wantErr: "invalid org_id claim"},
		{name: "org_id with a slash", edit: set("org_id", "acme/eu"), wantErr: "invalid org_id claim"},
		{name: "org_id of 128 bytes", edit: set("org_id", strings.Repeat("o", 128))},
		{name: "org_id UUID", edit: set("org_id", "0b5b1c1e-8d0e-4c53-9d4c-3f2a7d7c1e11")},
		{name: "org_id with punctuation", edit: set("org_id", "tenant:acme@eu-1.prod_2")},
		{name: "sub blank", edit: set("sub", " \t "), wantErr: "invalid sub claim"},
		{name: "sub with NUL", edit: set("sub", "user\x00-1"), wantErr: "invalid sub claim"},
		{name: "sub with a newline", edit: set("sub", "user-1\nforged log line"), wantErr: "invalid sub claim"},
		{name: "sub of 10 KB", edit: set("sub", strings.Repeat("u", 10<<10)), wantErr: "invalid sub claim"},
		{name: "sub of 256 bytes", edit: set("sub", strings.Repeat("u", 256))},
		{name: "sub of an identity provider", edit: set("sub", "auth0|5f7c8ec7c33c6c004bbafe82")},
		{name: "sub with blanks inside", edit: set("sub", "CN=Jane Doe,O=Acme")},
		{name: "sub empty", edit: set("sub", "")},
		{name: "role with NUL", edit: set("roles", []string{"analyst\x00"}), wantErr: "invalid roles claim"},
		{name: "role of 101 characters", edit: set("roles", []string{strings.Repeat("r", 101)}), wantErr: "invalid roles claim"},
		{name: "exp a numeric string", edit: set("exp", fmt.Sprint(now.Add(time.Hour).Unix())), wantErr: "invalid exp claim"},
		{name: "nbf a numeric string", edit: set("nbf", fmt.Sprint(now.Unix())), wantErr: "invalid nbf claim"},
		{name: "iat a numeric string", edit: set("iat", fmt.Sprint(now.Unix())), wantErr: "invalid iat claim"},
		{name: "exp fractional", edit: set("exp", float64(now.Add(time.Hour).Unix())+0.5)},
		{name: "EXP for exp", edit: func(c jwt.MapClaims) { c["EXP"] = c["exp"]; delete(c, "exp") }, wantErr: `invalid claim name "EXP"`},
		{name: "Org_ID beside org_id", edit: set("Org_ID", "org-2"), wantErr: `invalid claim name "Org_ID"`},
		{name: "other claims in any case", edit: set("Email", "jane@example.com")},
		{name: "nbf beyond leeway", edit: set("nbf", now.Add(5*time.Minute).Unix()), wantErr: "token not valid yet"},
		{name: "nbf within leeway", edit: set("nbf", now.Add(30*time.Second).Unix())},
		{name: "iat beyond leeway", edit: set("iat", now.Add(5*time.Minute).Unix()), wantErr: "token issued in the future"},
		{name: "iat within leeway", edit: set("iat", now.Add(30*time.Second).Unix())},
		{name: "no iat nor nbf", edit: func(c jwt.MapClaims) { delete(c, "iat"); delete(c, "nbf") }},
		{name: "no sub", edit: del("sub"), check: func(t *testing.T, c *auth.Claims) {
			if c.Subject != "" {
				t.Errorf("subject = %q, want empty", c.Subject)
			}
		}},
		{name: "sub not a string", edit: set("sub", 7), wantErr: "malformed token"},
		{name: "roles and permissions absent", edit: func(c jwt.MapClaims) { delete(c, "roles"); delete(c, "permissions") },
			check: func(t *testing.T, c *auth.Claims) {
				if c.Roles != nil || c.Permissions != nil {
					t.Errorf("roles, permissions = %q, %q; want nil", c.Roles, c.Permissions)
				}
			}},
		{name: "roles null", edit: set("roles", nil)},
		{name: "roles empty", edit: set("roles", []string{})},
		{name: "roles string", edit: set("roles", "admin"), wantErr: "invalid roles claim"},
		{name: "roles numbers", edit: set("roles", []int{1, 2}), wantErr: "invalid roles claim"},
		{name: "roles with null", edit: set("roles", []any{"analyst", nil}), wantErr: "invalid roles claim"},
		{name: "roles object", edit: set("roles", map[string]bool{"admin": true}), wantErr: "invalid roles claim"},
		{name: "roles bool", edit: set("roles", true), wantErr: "invalid roles claim"},
		{name: "permissions string", edit: set("permissions", "admin"), wantErr: "invalid permissions claim"},
		{name: "permissions nested", edit: set("permissions", [][]string{{"admin"}}), wantErr: "invalid permissions claim"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claims := validClaims(now)
			tt.edit(claims)
			tok := mustSign(t, jwt.SigningMethodHS256, testSecret, nil, claims)
			got, err := v.Verify(t.Context(), tok)
			if tt.wantErr != "" {
				wantUnauthorized(t, err, tt.wantErr, tok, string(testSecret))
				if got != nil {
					t.Errorf("claims = %+v, want nil", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if tt.check != nil {
				tt.check(t, got)
			}
		})
	}
}

func set(k string, v any) func(jwt.MapClaims) { return func(c jwt.MapClaims) { c[k] = v } }
func del(k string) func(jwt.MapClaims)        { return func(c jwt.MapClaims) { delete(c, k) } }

// TestVerifyRejects covers signatures, algorithms and malformed input with
// only the HS256 secret configured.
func TestVerifyRejects(t *testing.T) {
	v := mustVerifier(t, auth.Config{HS256Secret: testSecret})
	now := time.Now()
	good := mustSign(t, jwt.SigningMethodHS256, testSecret, nil, validClaims(now))
	rsaKey := mustRSAKey(t)

	// A token whose payload was changed after signing.
	other := validClaims(now)
	other["org_id"] = "org-2"
	otherTok := mustSign(t, jwt.SigningMethodHS256, []byte("another secret"), nil, other)
	gp, op := strings.Split(good, "."), strings.Split(otherTok, ".")
	tampered := gp[0] + "." + op[1] + "." + gp[2]

	tests := []struct {
		name    string
		token   string
		wantErr string // "" = any 401
	}{
		{"wrong secret", mustSign(t, jwt.SigningMethodHS256, []byte("wrong-secret-0123456789abcdef-012"), nil, validClaims(now)), "invalid token signature"},
		{"empty signature", strings.Join(gp[:2], ".") + ".", "invalid token signature"},
		{"signature of another token", gp[0] + "." + gp[1] + "." + op[2], "invalid token signature"},
		{"tampered payload", tampered, "invalid token signature"},
		{"alg none", noneToken(t, validClaims(now)), "unsupported signing algorithm"},
		{"alg none with signature", rawToken(t, map[string]any{"alg": "none"}, validClaims(now), []byte("sig")), "unsupported signing algorithm"},
		{"alg None", rawToken(t, map[string]any{"alg": "None", "typ": "JWT"}, validClaims(now), nil), "unsupported signing algorithm"},
		{"alg hs256 lower case", rawToken(t, map[string]any{"alg": "hs256"}, validClaims(now), []byte("x")), "unsupported signing algorithm"},
		{"alg missing", rawToken(t, map[string]any{"typ": "JWT"}, validClaims(now), []byte("x")), "unsupported signing algorithm"},
		{"alg not a string", rawToken(t, map[string]any{"alg": 256}, validClaims(now), []byte("x")), "unsupported signing algorithm"},
		{"HS384 with the right secret", mustSign(t, jwt.SigningMethodHS384, testSecret, nil, validClaims(now)), "unsupported signing algorithm"},
		{"HS512 with the right secret", mustSign(t, jwt.SigningMethodHS512, testSecret, nil, validClaims(now)), "unsupported signing algorithm"},
		{"RS256 without JWKS", mustSign(t, jwt.SigningMethodRS256, rsaKey, nil, validClaims(now)), "unsupported signing algorithm"},
		{"PS256 without JWKS", mustSign(t, jwt.SigningMethodPS256, rsaKey, nil, validClaims(now)), "unsupported signing algorithm"},
		{"crit header", mustSign(t, jwt.SigningMethodHS256, testSecret, map[string]any{"crit": []string{"exp"}}, validClaims(now)), "unsupported token header"},
		{"empty", "", "missing token"},
		{"too large", good + strings.Repeat("A", 20<<10), "token too large"},
		{"garbage", "garbage", "malformed token"},
		{"three dots", "...", "malformed token"},
		{"a.b.c", "a.b.c", "malformed token"},
		{"bearer prefix", "Bearer " + good, "malformed token"},
		{"two segments", strings.Join(gp[:2], "."), "malformed token"},
		{"four segments", good + ".x", "malformed token"},
		{"header not json", base64.RawURLEncoding.EncodeToString([]byte("{alg")) + "." + gp[1] + "." + gp[2], "malformed token"},
		{"header json null", base64.RawURLEncoding.EncodeToString([]byte("null")) + "." + gp[1] + "." + gp[2], "malformed token"},
		{"header padded base64", gp[0] + "=." + gp[1] + "." + gp[2], "malformed token"},
		{"payload not json", gp[0] + "." + base64.RawURLEncoding.EncodeToString([]byte("hello")) + "." + gp[2], "malformed token"},
		{"signature not base64", gp[0] + "." + gp[1] + ".!!!", "malformed token"},
		{"binary", "\x00\xff.\x01.\x02", "malformed token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.Verify(t.Context(), tt.token)
			wantUnauthorized(t, err, tt.wantErr, tt.token, string(testSecret))
			if got != nil {
				t.Errorf("claims = %+v, want nil", got)
			}
		})
	}
}

func TestVerifyIssuerAudience(t *testing.T) {
	v := mustVerifier(t, auth.Config{HS256Secret: testSecret, Issuer: "https://idp.example", Audience: "vigil"})
	now := time.Now()
	tests := []struct {
		name    string
		edit    func(c jwt.MapClaims)
		wantErr string
	}{
		{"match", func(c jwt.MapClaims) { c["iss"] = "https://idp.example"; c["aud"] = "vigil" }, ""},
		{"audience among several", func(c jwt.MapClaims) { c["iss"] = "https://idp.example"; c["aud"] = []string{"other", "vigil"} }, ""},
		{"wrong issuer", func(c jwt.MapClaims) { c["iss"] = "https://evil.example"; c["aud"] = "vigil" }, "invalid token issuer"},
		{"no issuer", func(c jwt.MapClaims) { c["aud"] = "vigil" }, "invalid token issuer"},
		{"wrong audience", func(c jwt.MapClaims) { c["iss"] = "https://idp.example"; c["aud"] = []string{"other"} }, "invalid token audience"},
		{"no audience", func(c jwt.MapClaims) { c["iss"] = "https://idp.example" }, "invalid token audience"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validClaims(now)
			tt.edit(c)
			tok := mustSign(t, jwt.SigningMethodHS256, testSecret, nil, c)
			_, err := v.Verify(t.Context(), tok)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				return
			}
			wantUnauthorized(t, err, tt.wantErr, tok)
		})
	}

	t.Run("not checked when not configured", func(t *testing.T) {
		v := mustVerifier(t, auth.Config{HS256Secret: testSecret})
		c := validClaims(now)
		c["iss"], c["aud"] = "anyone", "anything"
		if _, err := v.Verify(t.Context(), mustSign(t, jwt.SigningMethodHS256, testSecret, nil, c)); err != nil {
			t.Fatalf("Verify: %v", err)
		}
	})
}

func TestVerifyLeeway(t *testing.T) {
	now := time.Now()
	c := validClaims(now)
	c["exp"] = now.Add(-30 * time.Second).Unix()
	tok := mustSign(t, jwt.SigningMethodHS256, testSecret, nil, c)

	tests := []struct {
		name    string
		leeway  time.Duration
		wantErr string
	}{
		{"default 60s", 0, ""},
		{"2m", 2 * time.Minute, ""},
		{"1s", time.Second, "token expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustVerifier(t, auth.Config{HS256Secret: testSecret, Leeway: tt.leeway})
			_, err := v.Verify(t.Context(), tok)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				return
			}
			wantUnauthorized(t, err, tt.wantErr, tok)
		})
	}
}

func TestNewVerifierErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  auth.Config
	}{
		{"nothing configured", auth.Config{}},
		{"empty secret", auth.Config{HS256Secret: []byte{}}},
		{"1-byte secret", auth.Config{HS256Secret: []byte("x")}},
		{"31-byte secret", auth.Config{HS256Secret: testSecret[:31]}},
		{"negative leeway", auth.Config{HS256Secret: testSecret, Leeway: -time.Second}},
		{"JWKS URL not a URL", auth.Config{JWKSURL: "not a url"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := auth.NewVerifier(t.Context(), tt.cfg)
			if err == nil {
				t.Fatalf("NewVerifier = %v, nil; want error", v)
			}
			if code := vigil.ErrorCode(err); code != vigil.EINVALID {
				t.Errorf("code = %q, want %q", code, vigil.EINVALID)
			}
		})
	}
}

// TestVerifierCopiesSecret checks that changing the caller's buffer after
// NewVerifier does not change the key.
func TestVerifierCopiesSecret(t *testing.T) {
	secret := []byte(string(testSecret))
	v := mustVerifier(t, auth.Config{HS256Secret: secret})
	clear(secret)
	tok := mustMint(t, testSecret, auth.Claims{OrgID: "o"}, time.Minute, time.Now())
	if _, err := v.Verify(t.Context(), tok); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

func TestVerifyConcurrent(t *testing.T) {
	v := mustVerifier(t, auth.Config{HS256Secret: testSecret})
	good := mustMint(t, testSecret, auth.Claims{OrgID: "o"}, time.Minute, time.Now())
	bad := mustMint(t, []byte("other-secret-0123456789abcdef-0123"), auth.Claims{OrgID: "o"}, time.Minute, time.Now())
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			tok, wantOK := good, true
			if i%2 == 1 {
				tok, wantOK = bad, false
			}
			if _, err := v.Verify(t.Context(), tok); (err == nil) != wantOK {
				errs <- errors.New("unexpected result")
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func FuzzVerify(f *testing.F) {
	now := time.Now()
	keys := mustTestKeys(f)
	srv := newJWKSServer(f, keys.jwks()...)
	v := mustVerifier(f, auth.Config{HS256Secret: testSecret, JWKSURL: srv.URL, HTTPClient: srv.Client()})

	good := mustMint(f, testSecret, auth.Claims{Subject: "u", OrgID: "o", Roles: []string{"r"}}, time.Hour, now)
	f.Add(good)
	f.Add(noneToken(f, validClaims(now)))
	f.Add(mustSign(f, jwt.SigningMethodRS256, keys.rsa, map[string]any{"kid": "rsa-1"}, validClaims(now)))
	f.Add(mustSign(f, jwt.SigningMethodES256, keys.ec, nil, validClaims(now)))
	f.Add(mustSign(f, jwt.SigningMethodHS384, testSecret, nil, validClaims(now)))
	f.Add(rawToken(f, map[string]any{"alg": "HS256", "kid": 1, "crit": "x"}, map[string]any{"org_id": []int{1}}, nil))
	for _, s := range []string{"", "garbage", "a.b.c", "...", "eyJhbGciOiJub25lIn0..", "\x00\xff"} {
		f.Add(s)
	}

	f.Fuzz(func(t *testing.T, token string) {
		c, err := v.Verify(t.Context(), token)
		if err == nil {
			if c == nil || c.OrgID == "" || c.ExpiresAt.IsZero() {
				t.Fatalf("Verify accepted %q with claims %+v", token, c)
			}
			return
		}
		if c != nil {
			t.Fatalf("claims %+v returned with error %v", c, err)
		}
		var ve *vigil.Error
		if !errors.As(err, &ve) || ve.Code != vigil.EUNAUTHORIZED {
			t.Fatalf("err = %v, want unauthorized *vigil.Error", err)
		}
		if len(token) >= 8 && strings.Contains(ve.Message, token) {
			t.Fatalf("message %q contains the token", ve.Message)
		}
	})
}

func mustRSAKey(tb testing.TB) *rsa.PrivateKey {
	tb.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatalf("generate RSA key: %v", err)
	}
	return k
}

// decodeSegments returns a token's header and payload, unverified.
func decodeSegments(tb testing.TB, tok string) (header, payload map[string]any) {
	tb.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		tb.Fatalf("token has %d segments", len(parts))
	}
	dec := func(s string) map[string]any {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			tb.Fatalf("decode segment: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			tb.Fatalf("unmarshal segment: %v", err)
		}
		return m
	}
	return dec(parts[0]), dec(parts[1])
}

func jsonEqual(tb testing.TB, a, b any) bool {
	tb.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		tb.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		tb.Fatal(err)
	}
	return string(ja) == string(jb)
}

// TestVerifyStrictJSON: a token whose header or claims name a member twice
// is refused (RFC 7519 §4 and RFC 7515 §4 allow either refusing it or
// taking the last; taking the last lets a token say two things), as is a
// Vigil claim with its name in another case, which encoding/json would
// read as that claim.
func TestVerifyStrictJSON(t *testing.T) {
	v := mustVerifier(t, auth.Config{HS256Secret: testSecret})
	exp := time.Now().Add(time.Hour).Unix()
	hs := `{"alg":"HS256","typ":"JWT"}`
	tests := []struct {
		name, header, claims, wantErr string
	}{
		{"valid", hs, fmt.Sprintf(`{"org_id":"org-1","exp":%d}`, exp), ""},
		{"org_id twice", hs, fmt.Sprintf(`{"org_id":"org-1","exp":%d,"org_id":"org-2"}`, exp), `duplicate claim "org_id"`},
		{"exp twice", hs, fmt.Sprintf(`{"org_id":"org-1","exp":1,"exp":%d}`, exp), `duplicate claim "exp"`},
		{"other claim twice", hs, fmt.Sprintf(`{"org_id":"org-1","exp":%d,"x":1,"x":2}`, exp), `duplicate claim "x"`},
		{"nested duplicates are the claim's business", hs, fmt.Sprintf(`{"org_id":"org-1","exp":%d,"x":{"a":1,"a":2}}`, exp), ""},
		{"alg twice", `{"alg":"none","alg":"HS256"}`, fmt.Sprintf(`{"org_id":"org-1","exp":%d}`, exp), "malformed token"},
		{"ORG_ID for org_id", hs, fmt.Sprintf(`{"ORG_ID":"org-1","exp":%d}`, exp), `invalid claim name "ORG_ID"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := signRaw(t, tt.header, tt.claims)
			got, err := v.Verify(t.Context(), tok)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				return
			}
			wantUnauthorized(t, err, tt.wantErr, tok)
			if got != nil {
				t.Errorf("claims = %+v, want nil", got)
			}
		})
	}
}

// signRaw signs a header and claims given as JSON text, byte for byte.
func signRaw(tb testing.TB, header, claims string) string {
	tb.Helper()
	signing := base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString([]byte(claims))
	sig, err := jwt.SigningMethodHS256.Sign(signing, testSecret)
	if err != nil {
		tb.Fatal(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}
