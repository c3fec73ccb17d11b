package api_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// claimsWith returns valid claims of org-a with admin, changed by edit.
func claimsWith(edit func(c jwt.MapClaims)) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{
		"sub":         "token-tester",
		"org_id":      "org-a",
		"permissions": []string{"admin"},
		"iat":         now.Unix(),
		"exp":         now.Add(time.Hour).Unix(),
	}
	if edit != nil {
		edit(c)
	}
	return c
}

func signed(t testing.TB, m jwt.SigningMethod, key any, c jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(m, c).SignedString(key)
	if err != nil {
		t.Fatalf("sign %s: %v", m.Alg(), err)
	}
	return s
}

func b64(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

// unsigned builds header.claims. with an empty signature.
func unsigned(header map[string]any, c jwt.MapClaims) string {
	return b64(header) + "." + b64(c) + "."
}

func TestBadTokens(t *testing.T) {
	e := newEnv(t)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}

	valid := signed(t, jwt.SigningMethodHS256, testSecret, claimsWith(nil))
	parts := strings.Split(valid, ".")
	past := func(d time.Duration) int64 { return time.Now().Add(-d).Unix() }
	future := func(d time.Duration) int64 { return time.Now().Add(d).Unix() }
	hs := func(edit func(jwt.MapClaims)) string {
		return signed(t, jwt.SigningMethodHS256, testSecret, claimsWith(edit))
	}

	cases := []struct {
		name, header string
	}{
		{"garbage", "Bearer garbage"},
		{"three garbage segments", "Bearer a.b.c"},
		{"wrong HS256 key", "Bearer " + signed(t, jwt.SigningMethodHS256, []byte("another-secret-0123456789abcdef0123456789"), claimsWith(nil))},
		{"expired beyond skew", "Bearer " + hs(func(c jwt.MapClaims) { c["exp"] = past(2 * time.Minute); c["iat"] = past(time.Hour) })},
		{"exp missing", "Bearer " + hs(func(c jwt.MapClaims) { delete(c, "exp") })},
		{"exp not a number", "Bearer " + hs(func(c jwt.MapClaims) { c["exp"] = "tomorrow" })},
		{"nbf beyond skew", "Bearer " + hs(func(c jwt.MapClaims) { c["nbf"] = future(2 * time.Minute) })},
		{"iat beyond skew", "Bearer " + hs(func(c jwt.MapClaims) { c["iat"] = future(2 * time.Minute) })},
		{"alg none", "Bearer " + unsigned(map[string]any{"alg": "none", "typ": "JWT"}, claimsWith(nil))},
		{"alg None", "Bearer " + unsigned(map[string]any{"alg": "None"}, claimsWith(nil))},
		{"alg none with the HS signature kept", "Bearer " + b64(map[string]any{"alg": "none"}) + "." + parts[1] + "." + parts[2]},
		{"no alg", "Bearer " + b64(map[string]any{"typ": "JWT"}) + "." + parts[1] + "." + parts[2]},
		{"HS/RS confusion: HS256 keyed with an RSA public key", "Bearer " + signed(t, jwt.SigningMethodHS256, rsaPEM, claimsWith(nil))},
		{"RS256 without JWKS", "Bearer " + signed(t, jwt.SigningMethodRS256, rsaKey, claimsWith(nil))},
		{"ES256 without JWKS", "Bearer " + signed(t, jwt.SigningMethodES256, ecKey, claimsWith(nil))},
		{"HS384 with the right secret", "Bearer " + signed(t, jwt.SigningMethodHS384, testSecret, claimsWith(nil))},
		{"HS512 with the right secret", "Bearer " + signed(t, jwt.SigningMethodHS512, testSecret, claimsWith(nil))},
		{"tampered claims", "Bearer " + parts[0] + "." + b64(claimsWith(func(c jwt.MapClaims) { c["org_id"] = "org-b" })) + "." + parts[2]},
		{"signature stripped", "Bearer " + parts[0] + "." + parts[1] + "."},
		{"crit header", "Bearer " + func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claimsWith(nil))
			tok.Header["crit"] = []string{"exp"}
			s, _ := tok.SignedString(testSecret)
			return s
		}()},
		{"no org_id", "Bearer " + hs(func(c jwt.MapClaims) { delete(c, "org_id") })},
		{"org_id a number", "Bearer " + hs(func(c jwt.MapClaims) { c["org_id"] = 123 })},
		{"org_id an array", "Bearer " + hs(func(c jwt.MapClaims) { c["org_id"] = []string{"org-a"} })},
		{"org_id empty", "Bearer " + hs(func(c jwt.MapClaims) { c["org_id"] = "" })},
		{"org_id null", "Bearer " + hs(func(c jwt.MapClaims) { c["org_id"] = nil })},
		{"permissions a string", "Bearer " + hs(func(c jwt.MapClaims) { c["permissions"] = "admin" })},
		{"roles a number", "Bearer " + hs(func(c jwt.MapClaims) { c["roles"] = 5 })},
		{"Bearer with empty token", "Bearer "},
		{"Bearer alone", "Bearer"},
		{"Basic scheme", "Basic dXNlcjpwYXNz"},
		{"Basic scheme with a valid JWT", "Basic " + valid},
		{"token without scheme", valid},
		{"two tokens", "Bearer " + valid + " " + valid},
		{"oversized token", "Bearer " + strings.Repeat("a", 20<<10)},
	}
	targets := []struct {
		method, path string
		body         []byte
	}{
		{"GET", "/v1/incidents", nil},
		{"POST", "/api/v1/observations", []byte(`{"type":"auth","description":"by a bad token"}`)},
		{"PUT", "/v1/enrichment-settings", []byte(`{"rate_limit":1}`)},
	}
	for _, tc := range cases {
		for _, tg := range targets {
			t.Run(tc.name+"/"+tg.method+" "+tg.path, func(t *testing.T) {
				hdr := map[string]string{"Authorization": tc.header}
				if tg.body != nil {
					hdr["Content-Type"] = "application/json"
				}
				r := rawCall(t, e, tg.method, tg.path, hdr, tg.body)
				wantError(t, r, http.StatusUnauthorized, "")
				if msg, _ := r.Body["message"].(string); strings.Contains(msg, "eyJ") {
					t.Errorf("message leaks the token: %q", msg)
				}
			})
		}
	}

	t.Run("nothing was written by refused tokens", func(t *testing.T) {
		admin := e.token("org-a", "admin")
		if n := total(t, must(t, call(t, e, "GET", "/v1/observations", admin, nil), http.StatusOK)); n != 0 {
			t.Errorf("observations total = %d", n)
		}
		if got := must(t, call(t, e, "GET", "/v1/enrichment-settings", admin, nil), http.StatusOK).data()["rate_limit"]; got != float64(60) {
			t.Errorf("rate_limit = %v", got)
		}
	})

	// Controls: tokens that are valid, some only thanks to the 60 s skew.
	controls := []struct{ name, header string }{
		{"valid", "Bearer " + valid},
		{"lower-case scheme", "bearer " + valid},
		{"expired within skew", "Bearer " + hs(func(c jwt.MapClaims) { c["exp"] = past(30 * time.Second); c["iat"] = past(time.Hour) })},
		{"nbf within skew", "Bearer " + hs(func(c jwt.MapClaims) { c["nbf"] = future(30 * time.Second) })},
		{"iat within skew", "Bearer " + hs(func(c jwt.MapClaims) { c["iat"] = future(30 * time.Second) })},
		{"no sub", "Bearer " + hs(func(c jwt.MapClaims) { delete(c, "sub") })},
		{"no iat", "Bearer " + hs(func(c jwt.MapClaims) { delete(c, "iat") })},
	}
	for _, tc := range controls {
		t.Run("accepted/"+tc.name, func(t *testing.T) {
			must(t, rawCall(t, e, "GET", "/v1/incidents", map[string]string{"Authorization": tc.header}, nil), http.StatusOK)
		})
	}
}
