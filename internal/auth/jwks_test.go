package auth_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/vigil-soc/vigil/internal/auth"
)

// testKeys are the identity provider's keys in these tests. RSA key
// generation is slow, so they are made once.
type testKeys struct {
	rsa *rsa.PrivateKey
	ec  *ecdsa.PrivateKey
	ed  ed25519.PrivateKey
}

var (
	testKeysOnce sync.Once
	testKeysVal  testKeys
	testKeysErr  error
)

func mustTestKeys(tb testing.TB) testKeys {
	tb.Helper()
	testKeysOnce.Do(func() {
		var k testKeys
		if k.rsa, testKeysErr = rsa.GenerateKey(rand.Reader, 2048); testKeysErr != nil {
			return
		}
		if k.ec, testKeysErr = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); testKeysErr != nil {
			return
		}
		if _, k.ed, testKeysErr = ed25519.GenerateKey(rand.Reader); testKeysErr != nil {
			return
		}
		testKeysVal = k
	})
	if testKeysErr != nil {
		tb.Fatalf("generate keys: %v", testKeysErr)
	}
	return testKeysVal
}

// jwks returns the public JWKs of k: "rsa-1" (RS256), "ec-1" (ES256) and
// "ed-1" (EdDSA), none declaring an alg except Ed25519, which always does.
func (k testKeys) jwks() []jwkset.JWKMarshal {
	return []jwkset.JWKMarshal{
		mustJWK(nil, &k.rsa.PublicKey, "rsa-1", ""),
		mustJWK(nil, &k.ec.PublicKey, "ec-1", ""),
		mustJWK(nil, k.ed.Public(), "ed-1", ""),
	}
}

// mustJWK returns the JWK of key. A nil tb panics on error, for use in
// value construction outside a test.
func mustJWK(tb testing.TB, key any, kid string, alg jwkset.ALG) jwkset.JWKMarshal {
	if tb != nil {
		tb.Helper()
	}
	_, symmetric := key.([]byte)
	j, err := jwkset.NewJWKFromKey(key, jwkset.JWKOptions{
		Marshal:  jwkset.JWKMarshalOptions{Private: symmetric},
		Metadata: jwkset.JWKMetadataOptions{KID: kid, ALG: alg},
	})
	if err != nil {
		if tb == nil {
			panic(err)
		}
		tb.Fatalf("JWK for %q: %v", kid, err)
	}
	return j.Marshal()
}

// jwksServer serves a JWK Set that tests may change or break.
type jwksServer struct {
	*httptest.Server
	hits atomic.Int32

	mu     sync.Mutex
	body   []byte
	status int
}

func newJWKSServer(tb testing.TB, keys ...jwkset.JWKMarshal) *jwksServer {
	tb.Helper()
	s := &jwksServer{status: http.StatusOK}
	s.set(tb, keys...)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		body, status := s.body, s.status
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(body)
	}))
	tb.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(tb testing.TB, keys ...jwkset.JWKMarshal) {
	tb.Helper()
	if keys == nil {
		keys = []jwkset.JWKMarshal{}
	}
	b, err := json.Marshal(jwkset.JWKSMarshal{Keys: keys})
	if err != nil {
		tb.Fatalf("marshal JWKS: %v", err)
	}
	s.mu.Lock()
	s.body = b
	s.mu.Unlock()
}

func (s *jwksServer) setStatus(status int) {
	s.mu.Lock()
	s.status = status
	s.mu.Unlock()
}

func (s *jwksServer) jwksJSON() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.body)
}

func rsaPublicPEM(tb testing.TB, k *rsa.PublicKey) []byte {
	tb.Helper()
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		tb.Fatalf("marshal public key: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func kid(id string) map[string]any { return map[string]any{"kid": id} }

func TestVerifyJWKS(t *testing.T) {
	keys := mustTestKeys(t)
	symKey := []byte("a symmetric key published in the JWKS")
	srv := newJWKSServer(t, append(keys.jwks(), mustJWK(t, symKey, "sym", ""))...)
	v := mustVerifier(t, auth.Config{HS256Secret: testSecret, JWKSURL: srv.URL, HTTPClient: srv.Client()})
	now := time.Now()

	otherRSA := mustRSAKey(t)
	otherEC, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecP384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := rsaPublicPEM(t, &keys.rsa.PublicKey)
	jwksJSON := srv.jwksJSON()

	tests := []struct {
		name    string
		token   string
		wantErr string // "" = valid
	}{
		{"RS256 by kid", mustSign(t, jwt.SigningMethodRS256, keys.rsa, kid("rsa-1"), validClaims(now)), ""},
		{"ES256 by kid", mustSign(t, jwt.SigningMethodES256, keys.ec, kid("ec-1"), validClaims(now)), ""},
		{"EdDSA by kid", mustSign(t, jwt.SigningMethodEdDSA, keys.ed, kid("ed-1"), validClaims(now)), ""},
		{"RS256 without kid, one RSA key", mustSign(t, jwt.SigningMethodRS256, keys.rsa, nil, validClaims(now)), ""},
		{"ES256 without kid, one EC key", mustSign(t, jwt.SigningMethodES256, keys.ec, nil, validClaims(now)), ""},
		{"EdDSA without kid, one Ed25519 key", mustSign(t, jwt.SigningMethodEdDSA, keys.ed, nil, validClaims(now)), ""},
		{"HS256 with the shared secret", mustSign(t, jwt.SigningMethodHS256, testSecret, nil, validClaims(now)), ""},

		{"RS256 expired", mustSign(t, jwt.SigningMethodRS256, keys.rsa, kid("rsa-1"), set2(validClaims(now), "exp", now.Add(-time.Hour).Unix())), "token expired"},
		{"ES256 without org_id", mustSign(t, jwt.SigningMethodES256, keys.ec, kid("ec-1"), set2(validClaims(now), "org_id", nil)), "token has no org_id"},
		{"unknown kid", mustSign(t, jwt.SigningMethodRS256, otherRSA, kid("rsa-unknown"), validClaims(now)), "unknown signing key"},
		{"unknown key without kid", mustSign(t, jwt.SigningMethodRS256, otherRSA, nil, validClaims(now)), "invalid token signature"},
		{"unknown EC key under a known kid", mustSign(t, jwt.SigningMethodES256, otherEC, kid("ec-1"), validClaims(now)), "invalid token signature"},
		{"unknown RSA key under a known kid", mustSign(t, jwt.SigningMethodRS256, otherRSA, kid("rsa-1"), validClaims(now)), "invalid token signature"},
		{"empty kid", mustSign(t, jwt.SigningMethodRS256, keys.rsa, kid(""), validClaims(now)), "invalid kid header"},
		{"kid not a string", mustSign(t, jwt.SigningMethodRS256, keys.rsa, map[string]any{"kid": 1}, validClaims(now)), "invalid kid header"},
		{"RS256 naming the EC key", mustSign(t, jwt.SigningMethodRS256, keys.rsa, kid("ec-1"), validClaims(now)), "signing key does not match algorithm"},
		{"ES256 naming the RSA key", mustSign(t, jwt.SigningMethodES256, keys.ec, kid("rsa-1"), validClaims(now)), "signing key does not match algorithm"},
		{"RS256 naming the symmetric key", mustSign(t, jwt.SigningMethodRS256, keys.rsa, kid("sym"), validClaims(now)), "signing key does not match algorithm"},
		{"ES384 with P-384 key", mustSign(t, jwt.SigningMethodES384, ecP384, nil, validClaims(now)), "unsupported signing algorithm"},
		{"PS256 with the RSA key", mustSign(t, jwt.SigningMethodPS256, keys.rsa, kid("rsa-1"), validClaims(now)), "unsupported signing algorithm"},
		{"RS384 with the RSA key", mustSign(t, jwt.SigningMethodRS384, keys.rsa, kid("rsa-1"), validClaims(now)), "unsupported signing algorithm"},
		{"RS512 with the RSA key", mustSign(t, jwt.SigningMethodRS512, keys.rsa, kid("rsa-1"), validClaims(now)), "unsupported signing algorithm"},
		{"alg none naming a key", rawToken(t, map[string]any{"alg": "none", "kid": "rsa-1"}, validClaims(now), nil), "unsupported signing algorithm"},

		// Algorithm confusion: HS256 tokens keyed with public or
		// published material go to the shared secret and fail there.
		{"HS256 keyed with the RSA public key PEM", mustSign(t, jwt.SigningMethodHS256, pemKey, nil, validClaims(now)), "invalid token signature"},
		{"HS256 keyed with the RSA public key PEM, kid", mustSign(t, jwt.SigningMethodHS256, pemKey, kid("rsa-1"), validClaims(now)), "invalid token signature"},
		{"HS256 keyed with the JWKS JSON", mustSign(t, jwt.SigningMethodHS256, jwksJSON, nil, validClaims(now)), "invalid token signature"},
		{"HS256 keyed with the JWKS JSON, kid", mustSign(t, jwt.SigningMethodHS256, jwksJSON, kid("rsa-1"), validClaims(now)), "invalid token signature"},
		{"HS256 keyed with the JWKS symmetric key", mustSign(t, jwt.SigningMethodHS256, symKey, kid("sym"), validClaims(now)), "invalid token signature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.Verify(t.Context(), tt.token)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if got.OrgID != "org-1" || got.Subject != "user-1" {
					t.Errorf("claims = %+v", got)
				}
				return
			}
			wantUnauthorized(t, err, tt.wantErr, tt.token, string(testSecret))
		})
	}
}

// TestVerifyAlgorithmConfusion checks each source against the other's
// algorithms when only one is configured.
func TestVerifyAlgorithmConfusion(t *testing.T) {
	keys := mustTestKeys(t)
	symKey := []byte("a symmetric key published in the JWKS")
	srv := newJWKSServer(t, append(keys.jwks(), mustJWK(t, symKey, "sym", ""))...)
	now := time.Now()
	pemKey := rsaPublicPEM(t, &keys.rsa.PublicKey)
	jwksJSON := srv.jwksJSON()

	jwksOnly := mustVerifier(t, auth.Config{JWKSURL: srv.URL, HTTPClient: srv.Client()})
	hsOnly := mustVerifier(t, auth.Config{HS256Secret: testSecret})

	tests := []struct {
		name    string
		v       *auth.Verifier
		token   string
		wantErr string
	}{
		{"JWKS only: RS256 valid", jwksOnly, mustSign(t, jwt.SigningMethodRS256, keys.rsa, kid("rsa-1"), validClaims(now)), ""},
		{"JWKS only: HS256 keyed with the RSA public key PEM", jwksOnly, mustSign(t, jwt.SigningMethodHS256, pemKey, nil, validClaims(now)), "unsupported signing algorithm"},
		{"JWKS only: HS256 keyed with the PEM, kid", jwksOnly, mustSign(t, jwt.SigningMethodHS256, pemKey, kid("rsa-1"), validClaims(now)), "unsupported signing algorithm"},
		{"JWKS only: HS256 keyed with the JWKS JSON", jwksOnly, mustSign(t, jwt.SigningMethodHS256, jwksJSON, nil, validClaims(now)), "unsupported signing algorithm"},
		{"JWKS only: HS256 keyed with the JWKS symmetric key", jwksOnly, mustSign(t, jwt.SigningMethodHS256, symKey, kid("sym"), validClaims(now)), "unsupported signing algorithm"},
		{"JWKS only: HS256 keyed with a secret", jwksOnly, mustSign(t, jwt.SigningMethodHS256, testSecret, nil, validClaims(now)), "unsupported signing algorithm"},
		{"HS only: HS256 valid", hsOnly, mustSign(t, jwt.SigningMethodHS256, testSecret, nil, validClaims(now)), ""},
		{"HS only: RS256", hsOnly, mustSign(t, jwt.SigningMethodRS256, keys.rsa, kid("rsa-1"), validClaims(now)), "unsupported signing algorithm"},
		{"HS only: ES256", hsOnly, mustSign(t, jwt.SigningMethodES256, keys.ec, nil, validClaims(now)), "unsupported signing algorithm"},
		{"HS only: EdDSA", hsOnly, mustSign(t, jwt.SigningMethodEdDSA, keys.ed, nil, validClaims(now)), "unsupported signing algorithm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.v.Verify(t.Context(), tt.token)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				return
			}
			wantUnauthorized(t, err, tt.wantErr, tt.token, string(testSecret))
		})
	}
}

func TestVerifyJWKSKeySelection(t *testing.T) {
	keys := mustTestKeys(t)
	second := mustRSAKey(t)
	now := time.Now()

	tests := []struct {
		name    string
		jwks    []jwkset.JWKMarshal
		token   string
		wantErr string
	}{
		{
			name:    "two RSA keys, no kid",
			jwks:    []jwkset.JWKMarshal{mustJWK(t, &keys.rsa.PublicKey, "a", ""), mustJWK(t, &second.PublicKey, "b", "")},
			token:   mustSign(t, jwt.SigningMethodRS256, second, nil, validClaims(now)),
			wantErr: "token has no kid",
		},
		{
			name:  "two RSA keys, kid",
			jwks:  []jwkset.JWKMarshal{mustJWK(t, &keys.rsa.PublicKey, "a", ""), mustJWK(t, &second.PublicKey, "b", "")},
			token: mustSign(t, jwt.SigningMethodRS256, second, kid("b"), validClaims(now)),
		},
		{
			name:  "one RSA key among others, no kid",
			jwks:  []jwkset.JWKMarshal{mustJWK(t, &keys.ec.PublicKey, "ec", ""), mustJWK(t, &second.PublicKey, "rsa", "")},
			token: mustSign(t, jwt.SigningMethodRS256, second, nil, validClaims(now)),
		},
		{
			name:    "no RSA key, no kid",
			jwks:    []jwkset.JWKMarshal{mustJWK(t, &keys.ec.PublicKey, "ec", "")},
			token:   mustSign(t, jwt.SigningMethodRS256, second, nil, validClaims(now)),
			wantErr: "unknown signing key",
		},
		{
			name:  "key declaring its alg",
			jwks:  []jwkset.JWKMarshal{mustJWK(t, &keys.rsa.PublicKey, "a", jwkset.AlgRS256)},
			token: mustSign(t, jwt.SigningMethodRS256, keys.rsa, kid("a"), validClaims(now)),
		},
		{
			name:    "key declaring another alg",
			jwks:    []jwkset.JWKMarshal{mustJWK(t, &keys.rsa.PublicKey, "a", jwkset.AlgPS256)},
			token:   mustSign(t, jwt.SigningMethodRS256, keys.rsa, kid("a"), validClaims(now)),
			wantErr: "signing key does not match algorithm",
		},
		{
			name: "encryption key",
			jwks: func() []jwkset.JWKMarshal {
				m := mustJWK(t, &keys.rsa.PublicKey, "a", "")
				m.USE = jwkset.UseEnc
				return []jwkset.JWKMarshal{m}
			}(),
			token:   mustSign(t, jwt.SigningMethodRS256, keys.rsa, kid("a"), validClaims(now)),
			wantErr: "signing key does not match algorithm",
		},
		{
			name:    "ES256 with a P-384 key in the set",
			jwks:    []jwkset.JWKMarshal{mustJWK(t, &mustP384(t).PublicKey, "p384", "")},
			token:   mustSign(t, jwt.SigningMethodES256, keys.ec, kid("p384"), validClaims(now)),
			wantErr: "signing key does not match algorithm",
		},
		{
			name:    "empty set",
			jwks:    nil,
			token:   mustSign(t, jwt.SigningMethodEdDSA, keys.ed, nil, validClaims(now)),
			wantErr: "unknown signing key",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newJWKSServer(t, tt.jwks...)
			v := mustVerifier(t, auth.Config{JWKSURL: srv.URL, HTTPClient: srv.Client()})
			_, err := v.Verify(t.Context(), tt.token)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				return
			}
			wantUnauthorized(t, err, tt.wantErr, tt.token)
		})
	}
}

// TestVerifyJWKSRotation checks that a new kid triggers one refetch, and
// that further unknown kids do not hammer the identity provider.
func TestVerifyJWKSRotation(t *testing.T) {
	keys := mustTestKeys(t)
	next := mustRSAKey(t)
	now := time.Now()
	srv := newJWKSServer(t, mustJWK(t, &keys.rsa.PublicKey, "rsa-1", ""))
	v := mustVerifier(t, auth.Config{JWKSURL: srv.URL, HTTPClient: srv.Client()})
	if n := srv.hits.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times at start, want 1", n)
	}

	srv.set(t, mustJWK(t, &keys.rsa.PublicKey, "rsa-1", ""), mustJWK(t, &next.PublicKey, "rsa-2", ""))
	if _, err := v.Verify(t.Context(), mustSign(t, jwt.SigningMethodRS256, next, kid("rsa-2"), validClaims(now))); err != nil {
		t.Fatalf("Verify with rotated key: %v", err)
	}
	if n := srv.hits.Load(); n != 2 {
		t.Fatalf("JWKS fetched %d times after rotation, want 2", n)
	}

	for i := range 5 {
		tok := mustSign(t, jwt.SigningMethodRS256, next, kid("made-up-"+string(rune('a'+i))), validClaims(now))
		_, err := v.Verify(t.Context(), tok)
		wantUnauthorized(t, err, "unknown signing key", tok)
	}
	if n := srv.hits.Load(); n != 2 {
		t.Errorf("JWKS fetched %d times after unknown kids, want still 2", n)
	}
	// Known keys still work from the cache.
	if _, err := v.Verify(t.Context(), mustSign(t, jwt.SigningMethodRS256, keys.rsa, kid("rsa-1"), validClaims(now))); err != nil {
		t.Fatalf("Verify with cached key: %v", err)
	}
}

// TestVerifyJWKSUnavailableAtStart checks that an identity provider down
// at start is logged, not fatal, and that its keys are picked up later.
func TestVerifyJWKSUnavailableAtStart(t *testing.T) {
	keys := mustTestKeys(t)
	srv := newJWKSServer(t, keys.jwks()...)
	srv.setStatus(http.StatusServiceUnavailable)

	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	v := mustVerifier(t, auth.Config{JWKSURL: srv.URL, HTTPClient: srv.Client(), Logger: logger})
	if got := logs.String(); !strings.Contains(got, "JWKS refresh failed") {
		t.Errorf("log = %q, want a refresh failure", got)
	}

	srv.setStatus(http.StatusOK)
	tok := mustSign(t, jwt.SigningMethodES256, keys.ec, kid("ec-1"), validClaims(time.Now()))
	if _, err := v.Verify(t.Context(), tok); err != nil {
		t.Fatalf("Verify after recovery: %v", err)
	}
}

// TestVerifyJWKSHTTPClient checks that the configured client is used.
func TestVerifyJWKSHTTPClient(t *testing.T) {
	keys := mustTestKeys(t)
	srv := newJWKSServer(t, keys.jwks()...)
	var used atomic.Int32
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		used.Add(1)
		return srv.Client().Transport.RoundTrip(r)
	})}
	v := mustVerifier(t, auth.Config{JWKSURL: srv.URL, HTTPClient: client})
	if used.Load() == 0 {
		t.Fatal("configured HTTP client not used")
	}
	tok := mustSign(t, jwt.SigningMethodEdDSA, keys.ed, kid("ed-1"), validClaims(time.Now()))
	if _, err := v.Verify(t.Context(), tok); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func mustP384(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func set2(c jwt.MapClaims, k string, v any) jwt.MapClaims {
	c[k] = v
	return c
}

// TestJWKSLogHidesCredentials: a failed key-set fetch is logged without
// the token of the JWKS URL's user info or the key of its query.
func TestJWKSLogHidesCredentials(t *testing.T) {
	keys := mustTestKeys(t)
	srv := newJWKSServer(t, keys.jwks()...)
	srv.setStatus(http.StatusServiceUnavailable)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	for name, base := range map[string]string{"HTTP error": srv.URL, "unreachable": gone.URL} {
		t.Run(name, func(t *testing.T) {
			var logs syncBuffer
			u := strings.Replace(base, "http://", "http://SEKRIT1@", 1) + "/jwks?key=SEKRIT2"
			mustVerifier(t, auth.Config{JWKSURL: u, HTTPClient: srv.Client(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			got := logs.String()
			if !strings.Contains(got, "JWKS refresh failed") {
				t.Fatalf("log = %q, want a refresh failure", got)
			}
			if strings.Contains(got, "SEKRIT") {
				t.Errorf("log shows a credential of the JWKS URL: %s", got)
			}
		})
	}
}
