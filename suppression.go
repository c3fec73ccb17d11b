package vigil

import (
	"encoding/json"
	"time"
)

// Suppression is an org's exception to detection: a signal of a built-in
// detector that matches its conditions (the classification rules'
// condition language over the signal's fields) is not counted, so it
// feeds no burst and opens no observation; its artifact stays stored and
// searchable. It applies while enabled and before ExpiresAt, if set.
type Suppression struct {
	ID         string          `json:"id"`
	OrgID      string          `json:"org_id"`
	Name       string          `json:"name"`
	Enabled    bool            `json:"enabled"`
	Reason     string          `json:"reason"`
	Conditions json.RawMessage `json:"conditions"`
	ExpiresAt  *time.Time      `json:"expires_at"`
	// SuppressedCount is how many signals (one per detector, key and
	// artifact) it has swallowed, LastSuppressedAt when it last did.
	SuppressedCount  int64      `json:"suppressed_count"`
	LastSuppressedAt *time.Time `json:"last_suppressed_at"`
	CreatedBy        string     `json:"created_by"`
	CreatedAt        time.Time  `json:"created_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
}

// Active reports whether s applies at now: enabled and not expired.
func (s *Suppression) Active(now time.Time) bool {
	return s.Enabled && (s.ExpiresAt == nil || now.Before(*s.ExpiresAt))
}

// SuppressionUpdate lists the fields of a partial update; nil = unchanged.
// SetExpiresAt replaces ExpiresAt with the value given, nil clearing it.
type SuppressionUpdate struct {
	Name         *string
	Enabled      *bool
	Reason       *string
	Conditions   *json.RawMessage
	SetExpiresAt bool
	ExpiresAt    *time.Time
}

// Apply sets the fields present in u on s.
func (u SuppressionUpdate) Apply(s *Suppression) {
	set(&s.Name, u.Name)
	set(&s.Enabled, u.Enabled)
	set(&s.Reason, u.Reason)
	set(&s.Conditions, u.Conditions)
	if u.SetExpiresAt {
		s.ExpiresAt = u.ExpiresAt
	}
}

// SuppressedSignal is one signal a suppression swallowed: the detector
// and key it would have been counted under, and its artifact.
type SuppressedSignal struct {
	SuppressionID string
	Detector      string
	Key           string
	ArtifactID    string
}

// Bounds of suppressions.
const (
	// MaxSuppressions bounds an org's suppressions, each of which is
	// evaluated on every signal.
	MaxSuppressions         = 1000
	MaxSuppressionNameLen   = 200
	MaxSuppressionReasonLen = 2000
)
