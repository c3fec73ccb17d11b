package auth_test

import (
	"context"
	"encoding/base64"
	"sync"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/auth"
)

func TestAPIKeyCredential(t *testing.T) {
	id := vigil.NewID()
	secret, _ := auth.NewAPIKey(id)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name, header string
		want         string
		isKey        bool
	}{
		{"bearer key", "Bearer " + secret, secret, true},
		{"bearer case and blanks", "bearer   " + secret + " ", secret, true},
		{"bearer JWT", "Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig", "", false},
		{"no header", "", "", false},
		{"ApiKey encoded", "ApiKey " + auth.EncodedAPIKey(id, secret), secret, true},
		{"ApiKey bare secret", "ApiKey " + secret, secret, true},
		{"ApiKey other id", "ApiKey " + b64(vigil.NewID()+":"+secret), "", true},
		{"ApiKey no colon", "ApiKey " + b64(secret), "", true},
		{"ApiKey not base64", "ApiKey ***", "", true},
		{"ApiKey a JWT", "ApiKey " + b64(id+":eyJhbGciOiJIUzI1NiJ9.e30.sig"), "", true},
		{"Basic any user", "Basic " + b64("elastic:"+secret), secret, true},
		{"Basic empty user", "Basic " + b64(":"+secret), secret, true},
		{"Basic password", "Basic " + b64("admin:hunter2"), "", true},
		{"Basic no colon", "Basic " + b64(secret), "", true},
		{"Basic not base64", "Basic ***", "", true},
		{"other scheme", "Digest " + secret, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, isKey := auth.APIKeyCredential(tc.header)
			if got != tc.want || isKey != tc.isKey {
				t.Errorf("APIKeyCredential(%q) = %q, %v; want %q, %v", tc.header, got, isKey, tc.want, tc.isKey)
			}
		})
	}
}

// keyStore is an in-memory auth.KeyStore counting reads and touches.
type keyStore struct {
	mu      sync.Mutex
	keys    map[string]*vigil.APIKey
	reads   int
	touches chan time.Time
}

func (s *keyStore) LookupAPIKey(_ context.Context, id string) (*vigil.APIKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	k, ok := s.keys[id]
	if !ok {
		return nil, vigil.NotFound("API key")
	}
	c := *k
	return &c, nil
}

func (s *keyStore) TouchAPIKey(_ context.Context, _, _ string, t time.Time) error {
	s.touches <- t
	return nil
}

func TestKeyVerifier(t *testing.T) {
	id := vigil.NewID()
	secret, hash := auth.NewAPIKey(id)
	st := &keyStore{keys: map[string]*vigil.APIKey{id: {ID: id, OrgID: "org-a", Hash: hash,
		Permissions: []string{vigil.PermSignalsWrite}}}, touches: make(chan time.Time, 10)}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	v := auth.NewKeyVerifier(st, 5*time.Second, clock, nil)
	ctx := context.Background()

	verify := func(what, s string, wantOK bool) {
		t.Helper()
		k, err := v.Verify(ctx, s)
		if wantOK && (err != nil || k.OrgID != "org-a") {
			t.Fatalf("%s: %v, %v; want org-a's key", what, k, err)
		}
		if !wantOK && vigil.ErrorCode(err) != vigil.EUNAUTHORIZED {
			t.Fatalf("%s: %v, %v; want unauthorized", what, k, err)
		}
	}
	verify("first use", secret, true)
	if got := <-st.touches; !got.Equal(now) {
		t.Errorf("touched at %v, want %v", got, now)
	}
	now = now.Add(4 * time.Second)
	verify("within the TTL", secret, true)
	verify("wrong secret", secret[:len(secret)-1]+"x", false)
	if st.reads != 1 {
		t.Errorf("%d store reads within the TTL, want 1", st.reads)
	}

	// Revoked in the store: still trusted until the TTL passes, then refused.
	revoked := now
	st.mu.Lock()
	st.keys[id].RevokedAt = &revoked
	st.mu.Unlock()
	now = now.Add(500 * time.Millisecond)
	verify("revoked, cached", secret, true)
	now = now.Add(5 * time.Second)
	verify("revoked, TTL passed", secret, false)
	if st.reads != 2 {
		t.Errorf("%d store reads, want 2", st.reads)
	}

	// Forget: re-read at once.
	st.mu.Lock()
	st.keys[id].RevokedAt = nil
	st.mu.Unlock()
	v.Forget(id)
	verify("after Forget", secret, true)

	// One touch a minute, whatever the rate.
	select {
	case got := <-st.touches:
		t.Errorf("touched again at %v within a minute", got)
	default:
	}
	now = now.Add(time.Minute)
	verify("a minute later", secret, true)
	if got := <-st.touches; !got.Equal(now) {
		t.Errorf("touched at %v, want %v", got, now)
	}

	verify("unknown key", "vgk_"+vigil.NewID()+secret[40:], false)
	verify("malformed", "vgk_short", false)
}
