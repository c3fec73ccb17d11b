package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/vigil-soc/vigil"
)

// An API key's secret is "vgk_", the key's id, "_" and 32 random bytes in
// unpadded base64url: it names its key, so that any of the ways shippers
// present a credential (a bearer token, a Basic password whatever the
// user name, Elasticsearch's ApiKey header) carries all that is needed,
// and it is recognisable in a leaked file. 256 random bits make a fast
// hash (SHA-256) as safe to store as a slow one.
const (
	keyPrefix    = "vgk_"
	keyIDLen     = 36 // a vigil.NewID
	keySecretLen = 43 // base64url of 32 bytes
	keyLen       = len(keyPrefix) + keyIDLen + 1 + keySecretLen
)

// DefaultKeyTTL is how long a process trusts what it read of a key: a
// revoked key stops working on every process within it.
const DefaultKeyTTL = 5 * time.Second

// keyTouchEvery is how often a process records a key's last use: at most
// one write per key and process in that time, whatever the request rate.
const keyTouchEvery = time.Minute

// maxCachedKeys bounds the cache; it is emptied when full (callers naming
// random ids cannot grow it without bound).
const maxCachedKeys = 10000

// NewAPIKey returns a new secret for the key id, and its hash to store.
func NewAPIKey(id string) (secret string, hash []byte) {
	var b [32]byte
	rand.Read(b[:])
	secret = keyPrefix + id + "_" + base64.RawURLEncoding.EncodeToString(b[:])
	return secret, HashAPIKey(secret)
}

// HashAPIKey is what the store keeps of a secret.
func HashAPIKey(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// EncodedAPIKey is the value of an "Authorization: ApiKey" header for a
// key, as Elasticsearch clients build it from "id:api_key".
func EncodedAPIKey(id, secret string) string {
	return base64.StdEncoding.EncodeToString([]byte(id + ":" + secret))
}

// IsAPIKey reports whether a bearer token is an API key secret (else it
// is a JWT).
func IsAPIKey(token string) bool { return strings.HasPrefix(token, keyPrefix) }

// keyID returns the id a secret names, or false when it is no secret.
func keyID(secret string) (string, bool) {
	if len(secret) != keyLen || !IsAPIKey(secret) || secret[len(keyPrefix)+keyIDLen] != '_' {
		return "", false
	}
	id := secret[len(keyPrefix) : len(keyPrefix)+keyIDLen]
	return id, vigil.ValidID(id)
}

// APIKeyCredential returns the API key secret an Authorization header
// carries and whether it carries one: "Bearer <secret>", "Basic" with the
// secret as password (any user name), or "ApiKey" with base64("id:secret")
// (the id must be the secret's) or the secret itself. A header of one of
// these schemes that carries something else is not an API key (a JWT
// bearer token), or a malformed one (ok true, secret ""), refused.
func APIKeyCredential(header string) (secret string, ok bool) {
	scheme, value, _ := strings.Cut(strings.TrimSpace(header), " ")
	value = strings.TrimSpace(value)
	switch strings.ToLower(scheme) {
	case "bearer":
		if IsAPIKey(value) {
			return value, true
		}
		return "", false
	case "basic":
		dec, err := base64.StdEncoding.DecodeString(value)
		if err != nil {
			return "", true
		}
		_, pass, found := strings.Cut(string(dec), ":")
		if !found || !IsAPIKey(pass) {
			return "", true
		}
		return pass, true
	case "apikey":
		if IsAPIKey(value) {
			return value, true
		}
		dec, err := base64.StdEncoding.DecodeString(value)
		if err != nil {
			return "", true
		}
		id, sec, found := strings.Cut(string(dec), ":")
		if own, ok := keyID(sec); !found || !ok || own != id {
			return "", true
		}
		return sec, true
	}
	return "", false
}

// KeyStore is what KeyVerifier reads and writes of API keys.
type KeyStore interface {
	LookupAPIKey(ctx context.Context, id string) (*vigil.APIKey, error)
	TouchAPIKey(ctx context.Context, org, id string, t time.Time) error
}

// KeyVerifier checks API key secrets against the store, trusting what it
// read of a key for a TTL, and records when each key was last used (at
// most once a minute per key). It is safe for concurrent use.
type KeyVerifier struct {
	store KeyStore
	ttl   time.Duration
	now   func() time.Time
	log   *slog.Logger

	mu      sync.Mutex
	keys    map[string]cachedKey // by id
	touched map[string]time.Time // by id: when this process last recorded a use
}

type cachedKey struct {
	key  *vigil.APIKey // nil: no such key
	read time.Time
}

// NewKeyVerifier returns a KeyVerifier over store; ttl 0 is DefaultKeyTTL.
func NewKeyVerifier(store KeyStore, ttl time.Duration, now func() time.Time, log *slog.Logger) *KeyVerifier {
	if ttl <= 0 {
		ttl = DefaultKeyTTL
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &KeyVerifier{store: store, ttl: ttl, now: now, log: log, keys: map[string]cachedKey{}, touched: map[string]time.Time{}}
}

// Verify returns the key whose secret this is. A malformed, unknown,
// wrong or revoked secret is EUNAUTHORIZED with a message that never
// holds the secret; a store that cannot answer is its error.
func (v *KeyVerifier) Verify(ctx context.Context, secret string) (*vigil.APIKey, error) {
	id, ok := keyID(secret)
	if !ok {
		return nil, unauthorizedKey("malformed API key")
	}
	now := v.now()
	v.mu.Lock()
	c, hit := v.keys[id]
	v.mu.Unlock()
	if !hit || now.Sub(c.read) >= v.ttl || now.Before(c.read) {
		k, err := v.store.LookupAPIKey(ctx, id)
		switch {
		case vigil.ErrorCode(err) == vigil.ENOTFOUND:
			k = nil
		case err != nil:
			return nil, err
		}
		c = cachedKey{key: k, read: now}
		v.mu.Lock()
		if len(v.keys) >= maxCachedKeys {
			clear(v.keys)
		}
		v.keys[id] = c
		v.mu.Unlock()
	}
	k := c.key
	if k == nil || subtle.ConstantTimeCompare(HashAPIKey(secret), k.Hash) != 1 {
		return nil, unauthorizedKey("invalid API key")
	}
	if k.RevokedAt != nil {
		return nil, unauthorizedKey("API key revoked")
	}
	v.touch(k, now)
	return k, nil
}

// Forget drops what this process read of key id: a key revoked through
// this process stops working here at once (others within the TTL).
func (v *KeyVerifier) Forget(id string) {
	v.mu.Lock()
	delete(v.keys, id)
	v.mu.Unlock()
}

// touch records a use of k at now in the background when this process
// has not recorded one for keyTouchEvery: last_used_at is exact to that.
func (v *KeyVerifier) touch(k *vigil.APIKey, now time.Time) {
	v.mu.Lock()
	last, seen := v.touched[k.ID]
	due := !seen || now.Sub(last) >= keyTouchEvery
	if due {
		if len(v.touched) >= maxCachedKeys {
			clear(v.touched)
		}
		v.touched[k.ID] = now
	}
	v.mu.Unlock()
	if !due {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := v.store.TouchAPIKey(ctx, k.OrgID, k.ID, now); err != nil {
			v.log.Warn("API key: last use not recorded", slog.String("key_id", k.ID), slog.String("org", k.OrgID),
				slog.String("error", vigil.ErrorMessage(err)))
		}
	}()
}

func unauthorizedKey(msg string) *vigil.Error {
	return &vigil.Error{Code: vigil.EUNAUTHORIZED, Op: "auth.KeyVerifier", Message: msg}
}
