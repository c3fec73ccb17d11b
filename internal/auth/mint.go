package auth

import (
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/vigil-soc/vigil"
)

// shortSecret says why a secret is refused.
const shortSecret = "HS256 secret must be at least 32 bytes"

// mintClaims is the wire form of a minted token's claims.
type mintClaims struct {
	jwt.RegisteredClaims
	OrgID       string   `json:"org_id"`
	Roles       []string `json:"roles,omitempty"`
	Permissions []string `json:"permissions,omitempty"`
}

// Mint returns an HS256 token signed with secret carrying c's subject, org,
// roles and permissions (empty ones omitted), issued and valid from now and
// expiring after ttl; c.ExpiresAt is ignored. Times have second precision.
// Mint returns EINVALID if secret is shorter than MinSecretLen, c.OrgID is
// not a vigil.ValidOrgID, c.Subject is not a possible subject, ttl is not positive
// or now is zero.
func Mint(secret []byte, c Claims, ttl time.Duration, now time.Time) (string, error) {
	const op = "auth.Mint"
	switch {
	case len(secret) == 0:
		return "", &vigil.Error{Code: vigil.EINVALID, Op: op, Message: "empty secret"}
	case len(secret) < MinSecretLen:
		return "", &vigil.Error{Code: vigil.EINVALID, Op: op, Message: shortSecret}
	case c.OrgID == "":
		return "", &vigil.Error{Code: vigil.EINVALID, Op: op, Message: "empty org_id"}
	case !vigil.ValidOrgID(c.OrgID):
		return "", &vigil.Error{Code: vigil.EINVALID, Op: op, Message: "org_id must be " + vigil.OrgIDRule}
	case c.Subject != "" && !validSubject(c.Subject):
		return "", &vigil.Error{Code: vigil.EINVALID, Op: op, Message: "sub must be at most 256 bytes of text without control characters"}
	case ttl <= 0:
		return "", &vigil.Error{Code: vigil.EINVALID, Op: op, Message: "non-positive ttl"}
	case now.IsZero():
		return "", &vigil.Error{Code: vigil.EINVALID, Op: op, Message: "zero time"}
	}
	claims := mintClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   c.Subject,
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		OrgID:       c.OrgID,
		Roles:       c.Roles,
		Permissions: c.Permissions,
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
	if err != nil {
		return "", &vigil.Error{Code: vigil.EINTERNAL, Op: op, Message: "cannot sign token", Err: err}
	}
	return s, nil
}
