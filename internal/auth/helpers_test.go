package auth_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/auth"
)

// testSecret is the shared HS256 secret of most tests.
var testSecret = []byte("test-secret-0123456789abcdef-0123")

func mustVerifier(tb testing.TB, cfg auth.Config) *auth.Verifier {
	tb.Helper()
	v, err := auth.NewVerifier(tb.Context(), cfg)
	if err != nil {
		tb.Fatalf("NewVerifier: %v", err)
	}
	return v
}

func mustMint(tb testing.TB, secret []byte, c auth.Claims, ttl time.Duration, now time.Time) string {
	tb.Helper()
	tok, err := auth.Mint(secret, c, ttl, now)
	if err != nil {
		tb.Fatalf("Mint: %v", err)
	}
	return tok
}

// mustSign signs claims with method and key, adding header fields (a nil
// value deletes a field, e.g. "typ").
func mustSign(tb testing.TB, method jwt.SigningMethod, key any, header map[string]any, claims jwt.MapClaims) string {
	tb.Helper()
	t := jwt.NewWithClaims(method, claims)
	for k, v := range header {
		if v == nil {
			delete(t.Header, k)
			continue
		}
		t.Header[k] = v
	}
	s, err := t.SignedString(key)
	if err != nil {
		tb.Fatalf("sign %s: %v", method.Alg(), err)
	}
	return s
}

// rawToken assembles a token from a header and claims of any shape and a
// signature, without signing anything.
func rawToken(tb testing.TB, header, claims any, sig []byte) string {
	tb.Helper()
	seg := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatalf("marshal: %v", err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return seg(header) + "." + seg(claims) + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// noneToken is a token with the header {"alg":"none","typ":"JWT"} and an
// empty signature.
func noneToken(tb testing.TB, claims jwt.MapClaims) string {
	tb.Helper()
	hdr := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	body, err := json.Marshal(claims)
	if err != nil {
		tb.Fatalf("marshal: %v", err)
	}
	return hdr + "." + base64.RawURLEncoding.EncodeToString(body) + "."
}

// validClaims are claims that verify at now.
func validClaims(now time.Time) jwt.MapClaims {
	return jwt.MapClaims{
		"sub":         "user-1",
		"org_id":      "org-1",
		"roles":       []string{"analyst"},
		"permissions": []string{vigil.PermIncidentsRead},
		"iat":         now.Unix(),
		"nbf":         now.Unix(),
		"exp":         now.Add(time.Hour).Unix(),
	}
}

// wantUnauthorized fails unless err is a 401 *vigil.Error with message msg
// (any message when msg is empty) that mentions none of secrets.
func wantUnauthorized(tb testing.TB, err error, msg string, secrets ...string) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("err = nil, want unauthorized %q", msg)
	}
	var ve *vigil.Error
	if !errors.As(err, &ve) {
		tb.Fatalf("err = %T %v, want *vigil.Error", err, err)
	}
	if ve.Code != vigil.EUNAUTHORIZED {
		tb.Errorf("code = %q, want %q (err: %v)", ve.Code, vigil.EUNAUTHORIZED, err)
	}
	if msg != "" && ve.Message != msg {
		tb.Errorf("message = %q, want %q (err: %v)", ve.Message, msg, err)
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		if strings.Contains(ve.Message, s) || strings.Contains(err.Error(), s) {
			tb.Errorf("error %q leaks a token or secret", err)
		}
	}
}
