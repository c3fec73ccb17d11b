// Package auth verifies and mints the JWTs that authenticate callers of
// Vigil's API, and holds the permission logic as pure functions.
//
// Two key sources are supported, each bound to its own algorithms: HS256
// with a shared secret, and RS256, ES256 and EdDSA with public keys fetched
// from a JWKS URL. A token is only ever verified against the source its
// algorithm belongs to, so an HS256 token can never be checked with a JWKS
// public key used as an HMAC secret, nor an RS256 token with the shared
// secret. Every other algorithm, "none" included, is refused. Keys named by
// the token itself (jku, x5u, jwk headers) are ignored.
package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/vigil-soc/vigil"
)

// Algorithms accepted from each key source.
const (
	algHS256 = "HS256"
	algRS256 = "RS256"
	algES256 = "ES256"
	algEdDSA = "EdDSA"
)

// DefaultLeeway is the clock skew allowed on exp, nbf and iat when
// Config.Leeway is zero.
const DefaultLeeway = 60 * time.Second

// MinSecretLen is the shortest HS256 secret accepted, in bytes: RFC 7518
// §3.2 requires a key at least as long as the hash output (256 bits), and
// a shorter one can be found by brute force from a single token.
const MinSecretLen = 32

// maxTokenLen bounds the work an unauthenticated caller can cause. Real
// tokens are a few hundred bytes to a few KiB.
const maxTokenLen = 16 << 10

// Claims are the verified claims of a token.
type Claims struct {
	Subject     string   // "sub"
	OrgID       string   // "org_id", required, vigil.ValidOrgID
	Roles       []string // "roles" (role names of that org), optional
	Permissions []string // "permissions", optional
	ExpiresAt   time.Time
}

// Config configures a Verifier. At least one of HS256Secret and JWKSURL
// must be set.
type Config struct {
	HS256Secret []byte        // shared secret, at least MinSecretLen bytes; nil/empty disables HS256
	JWKSURL     string        // RS256/ES256/EdDSA keys; "" disables JWKS
	Issuer      string        // optional: when set, "iss" must equal it
	Audience    string        // optional: when set, "aud" must contain it
	Leeway      time.Duration // clock skew, default 60s when zero
	HTTPClient  *http.Client  // optional for JWKS fetching
	Logger      *slog.Logger  // optional: JWKS refresh failures are logged here
}

// Verifier checks tokens. It is safe for concurrent use.
type Verifier struct {
	secret []byte         // nil when HS256 is disabled
	keys   jwkset.Storage // nil when JWKS is disabled

	// One parser per key source, each allowing only that source's
	// algorithms: the second line of defence against algorithm confusion
	// after the dispatch in Verify.
	hmacParser *jwt.Parser
	jwksParser *jwt.Parser

	issuer   string
	audience string
}

// NewVerifier returns a Verifier for cfg. When cfg.JWKSURL is set it
// fetches the key set once and refreshes it hourly, and on an unknown kid
// (rate limited), until ctx is done. A key set that cannot be fetched at
// start is logged, not fatal: tokens from that source fail until a refresh
// succeeds. NewVerifier returns an error if neither a secret nor a JWKS URL
// is configured, or if the configuration is otherwise unusable.
func NewVerifier(ctx context.Context, cfg Config) (*Verifier, error) {
	const op = "auth.NewVerifier"
	if len(cfg.HS256Secret) == 0 && cfg.JWKSURL == "" {
		return nil, &vigil.Error{Code: vigil.EINVALID, Op: op, Message: "no HS256 secret and no JWKS URL configured"}
	}
	if len(cfg.HS256Secret) > 0 && len(cfg.HS256Secret) < MinSecretLen {
		return nil, &vigil.Error{Code: vigil.EINVALID, Op: op, Message: shortSecret}
	}
	if cfg.Leeway < 0 {
		return nil, &vigil.Error{Code: vigil.EINVALID, Op: op, Message: "negative leeway"}
	}
	leeway := cfg.Leeway
	if leeway == 0 {
		leeway = DefaultLeeway
	}

	v := &Verifier{issuer: cfg.Issuer, audience: cfg.Audience}
	common := []jwt.ParserOption{
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(leeway),
	}
	if cfg.Issuer != "" {
		common = append(common, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		common = append(common, jwt.WithAudience(cfg.Audience))
	}

	if len(cfg.HS256Secret) > 0 {
		// Copied so that a caller reusing its buffer cannot change the key.
		v.secret = append([]byte(nil), cfg.HS256Secret...)
		v.hmacParser = jwt.NewParser(append(common, jwt.WithValidMethods([]string{algHS256}))...)
	}
	if cfg.JWKSURL != "" {
		keys, err := newJWKSStorage(ctx, cfg)
		if err != nil {
			return nil, &vigil.Error{Code: vigil.EINVALID, Op: op, Message: "invalid JWKS configuration", Err: err}
		}
		v.keys = keys
		v.jwksParser = jwt.NewParser(append(common, jwt.WithValidMethods([]string{algRS256, algES256, algEdDSA}))...)
	}
	return v, nil
}

// Verify checks token's signature and claims and returns the claims. Any
// failure is a *vigil.Error with code EUNAUTHORIZED and a short message
// that is safe to show; the token itself never appears in it.
func (v *Verifier) Verify(ctx context.Context, token string) (*Claims, error) {
	if token == "" {
		return nil, unauthorized("missing token", nil)
	}
	if len(token) > maxTokenLen {
		return nil, unauthorized("token too large", nil)
	}
	header, err := decodeHeader(token)
	if err != nil {
		return nil, unauthorized("malformed token", err)
	}
	if _, ok := header["crit"]; ok {
		// RFC 7515 §4.1.11: extensions we do not understand must be refused.
		return nil, unauthorized("unsupported token header", nil)
	}

	// Choose the key source from the algorithm before anything else, so
	// that each source only ever sees its own algorithms.
	alg, _ := header["alg"].(string)
	var (
		parser  *jwt.Parser
		keyFunc jwt.Keyfunc
	)
	switch alg {
	case algHS256:
		if v.secret == nil {
			return nil, unauthorized("unsupported signing algorithm", nil)
		}
		parser = v.hmacParser
		keyFunc = func(*jwt.Token) (any, error) { return v.secret, nil }
	case algRS256, algES256, algEdDSA:
		if v.keys == nil {
			return nil, unauthorized("unsupported signing algorithm", nil)
		}
		parser = v.jwksParser
		keyFunc = func(t *jwt.Token) (any, error) { return v.jwksKey(ctx, t) }
	default:
		return nil, unauthorized("unsupported signing algorithm", nil)
	}

	var tc tokenClaims
	parsed, err := parser.ParseWithClaims(token, &tc, keyFunc)
	if err != nil {
		return nil, v.classify(err, &tc)
	}
	// The signature is good: now what the library read leniently.
	payload, err := parser.DecodeSegment(strings.Split(parsed.Raw, ".")[1])
	if err != nil {
		return nil, unauthorized("malformed token", err)
	}
	if err := checkClaimsJSON(payload); err != nil {
		return nil, err
	}
	return tc.claims()
}

// decodeHeader decodes a token's JOSE header the way jwt.Parser does
// (unpadded base64url, keys matched exactly).
func decodeHeader(token string) (map[string]any, error) {
	seg, _, ok := strings.Cut(token, ".")
	if !ok {
		return nil, errors.New("no header segment")
	}
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return nil, err
	}
	// A parameter named twice is refused (RFC 7515 §4 allows it): the JWT
	// library and this function would each take the last, but a token
	// should not say two things.
	if err := members(raw, func(string, json.Token) error { return nil },
		func(name string) error { return fmt.Errorf("header parameter %.64q twice", name) }); err != nil {
		return nil, err
	}
	var h map[string]any
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, errors.New("header is not an object")
	}
	return h, nil
}

// classify turns a parse error into the 401 shown to the caller. When the
// validator reports several problems, the first match below wins.
func (v *Verifier) classify(err error, tc *tokenClaims) *vigil.Error {
	var ve *vigil.Error
	switch {
	case errors.As(err, &ve): // from our key lookup
		return ve
	case errors.Is(err, jwt.ErrTokenMalformed):
		return unauthorized("malformed token", err)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return unauthorized("invalid token signature", err)
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return unauthorized("unverifiable token", err)
	case errors.Is(err, jwt.ErrTokenExpired):
		return unauthorized("token expired", err)
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return unauthorized("token not valid yet", err)
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return unauthorized("token issued in the future", err)
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		switch {
		case tc.ExpiresAt == nil:
			return unauthorized("token has no exp", err)
		case v.issuer != "" && tc.Issuer == "":
			return unauthorized("invalid token issuer", err)
		case v.audience != "" && len(tc.Audience) == 0:
			return unauthorized("invalid token audience", err)
		}
		return unauthorized("token is missing a required claim", err)
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return unauthorized("invalid token issuer", err)
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return unauthorized("invalid token audience", err)
	}
	return unauthorized("invalid token", err)
}

func unauthorized(msg string, err error) *vigil.Error {
	return &vigil.Error{Code: vigil.EUNAUTHORIZED, Op: "auth.Verify", Message: msg, Err: err}
}

// tokenClaims is the wire form of the claims. The Vigil claims are kept raw
// so that a wrong type is reported as such, after the signature is checked,
// rather than as a malformed token.
type tokenClaims struct {
	jwt.RegisteredClaims
	OrgID       json.RawMessage `json:"org_id"`
	Roles       json.RawMessage `json:"roles"`
	Permissions json.RawMessage `json:"permissions"`
}

func (tc *tokenClaims) claims() (*Claims, error) {
	if len(tc.OrgID) == 0 {
		return nil, unauthorized("token has no org_id", nil)
	}
	var org string
	if err := json.Unmarshal(tc.OrgID, &org); err != nil {
		return nil, unauthorized("invalid org_id claim", nil)
	}
	if org == "" { // also JSON null
		return nil, unauthorized("token has no org_id", nil)
	}
	if !vigil.ValidOrgID(org) {
		return nil, unauthorized("invalid org_id claim", nil)
	}
	if tc.Subject != "" && !validSubject(tc.Subject) {
		return nil, unauthorized("invalid sub claim", nil)
	}
	roles, ok := stringList(tc.Roles)
	if ok {
		for _, r := range roles {
			ok = ok && validRoleName(r)
		}
	}
	if !ok {
		return nil, unauthorized("invalid roles claim", nil)
	}
	perms, ok := stringList(tc.Permissions)
	if !ok {
		return nil, unauthorized("invalid permissions claim", nil)
	}
	return &Claims{
		Subject:     tc.Subject,
		OrgID:       org,
		Roles:       roles,
		Permissions: perms,
		ExpiresAt:   tc.ExpiresAt.Time, // non-nil: exp is required
	}, nil
}

// stringList decodes an optional array of strings. Absent or null is an
// empty list; anything else, including null elements, is refused.
func stringList(raw json.RawMessage) ([]string, bool) {
	if len(raw) == 0 {
		return nil, true
	}
	var items []any
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, false
	}
	if len(items) == 0 {
		return nil, true
	}
	out := make([]string, len(items))
	for i, it := range items {
		s, ok := it.(string)
		if !ok {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}
