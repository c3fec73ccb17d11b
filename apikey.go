package vigil

import "time"

// APIKey is a long-lived credential of an org for shippers and
// listeners: it grants only PermSignalsWrite, on the ingest routes, until
// revoked. Its secret is shown once, when it is created; the store keeps
// only its hash.
type APIKey struct {
	ID          string     `json:"id"`
	OrgID       string     `json:"org_id"`
	Name        string     `json:"name"`
	Permissions []string   `json:"permissions"`
	CreatedBy   string     `json:"created_by"`
	CreatedAt   time.Time  `json:"created_at"`
	LastUsedAt  *time.Time `json:"last_used_at"`
	RevokedAt   *time.Time `json:"revoked_at"`
	// Hash is the SHA-256 of the secret: the secret is 256 random bits,
	// so a fast hash is as safe as a slow one and costs nothing per
	// request.
	Hash []byte `json:"-"`
}

// Bounds of API keys.
const (
	// MaxAPIKeys bounds the keys an org keeps, revoked ones included.
	MaxAPIKeys       = 1000
	MaxAPIKeyNameLen = 200
	APIKeyPermission = PermSignalsWrite
)
