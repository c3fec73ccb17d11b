package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"log/slog"
	"net/http"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/vigil-soc/vigil"
	"golang.org/x/time/rate"
)

const (
	jwksRefreshInterval = time.Hour
	jwksHTTPTimeout     = 10 * time.Second

	// An unknown kid triggers a refetch (key rotation) at most this often,
	// so that made-up kids cannot turn into a flood of requests to the
	// identity provider.
	jwksUnknownKIDEvery = 5 * time.Minute
	// How long a request may wait for the unknown-kid limiter and the
	// refetch together. The limiter fails at once when its next slot is
	// further away than this.
	jwksUnknownKIDWait = 5 * time.Second
)

// newJWKSStorage returns the key store for cfg.JWKSURL, whose refresh
// goroutine ends with ctx.
func newJWKSStorage(ctx context.Context, cfg Config) (jwkset.Storage, error) {
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: jwksHTTPTimeout}
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	where := vigil.RedactURL(cfg.JWKSURL)
	remote, err := jwkset.NewStorageFromHTTP(cfg.JWKSURL, jwkset.HTTPClientStorageOptions{
		Client:                    client,
		Ctx:                       ctx,
		HTTPTimeout:               jwksHTTPTimeout,
		NoErrorReturnFirstHTTPReq: true,
		RefreshInterval:           jwksRefreshInterval,
		RefreshErrorHandler: func(ctx context.Context, err error) {
			logger.WarnContext(ctx, "JWKS refresh failed", "url", where, "err", vigil.RedactURLError(err))
		},
	})
	if err != nil {
		return nil, err
	}
	return jwkset.NewHTTPClient(jwkset.HTTPClientOptions{
		HTTPURLs:          map[string]jwkset.Storage{cfg.JWKSURL: remote},
		RateLimitWaitMax:  jwksUnknownKIDWait,
		RefreshUnknownKID: rate.NewLimiter(rate.Every(jwksUnknownKIDEvery), 1),
	})
}

// jwksKey returns the public key that must have signed t, whose algorithm
// is one of RS256, ES256, EdDSA (enforced by the caller and the parser).
// The key is found by kid; a token without kid may use the only key of the
// right type, if there is exactly one.
func (v *Verifier) jwksKey(ctx context.Context, t *jwt.Token) (any, error) {
	alg := t.Method.Alg()
	if raw, ok := t.Header["kid"]; ok {
		kid, ok := raw.(string)
		if !ok || kid == "" {
			return nil, unauthorized("invalid kid header", nil)
		}
		jwk, err := v.keys.KeyRead(ctx, kid)
		if err != nil {
			return nil, unauthorized("unknown signing key", err)
		}
		key, ok := usableKey(jwk, alg)
		if !ok {
			return nil, unauthorized("signing key does not match algorithm", nil)
		}
		return key, nil
	}

	all, err := v.keys.KeyReadAll(ctx)
	if err != nil {
		return nil, unauthorized("unknown signing key", err)
	}
	var (
		found any
		n     int
	)
	for _, jwk := range all {
		if key, ok := usableKey(jwk, alg); ok {
			found = key
			n++
		}
	}
	switch n {
	case 0:
		return nil, unauthorized("unknown signing key", nil)
	case 1:
		return found, nil
	}
	return nil, unauthorized("token has no kid", nil)
}

// usableKey returns jwk's public key if it may verify a signature made with
// alg: a signing key (use absent or "sig"), whose declared alg, if any, is
// alg, and whose type fits alg. Symmetric ("oct") keys never qualify.
func usableKey(jwk jwkset.JWK, alg string) (any, bool) {
	m := jwk.Marshal()
	if m.USE != "" && m.USE != jwkset.UseSig {
		return nil, false
	}
	if m.ALG != "" && string(m.ALG) != alg {
		return nil, false
	}
	key := jwk.Key()
	if priv, ok := key.(interface{ Public() crypto.PublicKey }); ok {
		// A JWKS should hold public keys only, but never mind if not.
		key = priv.Public()
	}
	switch alg {
	case algRS256:
		if k, ok := key.(*rsa.PublicKey); ok {
			return k, true
		}
	case algES256:
		if k, ok := key.(*ecdsa.PublicKey); ok && k.Curve == elliptic.P256() {
			return k, true
		}
	case algEdDSA:
		if k, ok := key.(ed25519.PublicKey); ok && len(k) == ed25519.PublicKeySize {
			return k, true
		}
	}
	return nil, false
}
