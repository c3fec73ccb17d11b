package vigil

import (
	"encoding/json"
	"regexp"
	"time"
)

// Artifact is one raw security signal as received, plus what the pipeline
// derived from it.
type Artifact struct {
	ID        string          `json:"id"`
	OrgID     string          `json:"org_id"`
	Source    string          `json:"source"`
	Raw       string          `json:"raw"`
	Timestamp time.Time       `json:"timestamp"`
	Metadata  json.RawMessage `json:"metadata"`
	CreatedAt time.Time       `json:"created_at"`

	// TimestampDefaulted is true when the sender gave no timestamp; the
	// event time parsed from Raw then replaces the server time.
	TimestampDefaulted bool `json:"-"`

	// Event holds the normalized (ECS) fields once parsed; null before.
	Event json.RawMessage `json:"event"`
	// Enrichment holds per-node-value context once enriched; null before.
	Enrichment json.RawMessage `json:"enrichment"`
}

// ArtifactFilter selects artifacts of one org.
type ArtifactFilter struct {
	Source string
	Query  string
	Range  TimeRange
	Page   Page
}

// Artifact limits promised to API users (docs/api.md, Artifacts): an item
// breaking one is rejected on its own, a batch breaking one is a 400.
const (
	MaxRawBytes     = 1 << 20
	MaxBatchItems   = 10000
	MaxSourceLen    = 64
	MaxMetadataSize = 64 << 10
)

var sourceRE = regexp.MustCompile(`^[a-z0-9_.-]{1,64}$`)

// ValidateSource returns the issue with a source identifier, or "".
func ValidateSource(s string) string {
	if !sourceRE.MatchString(s) {
		return "must be 1..64 characters of [a-z0-9_.-]"
	}
	return ""
}

// Artifact timestamps lie in [1900, 2200): no sensor logs outside it, and
// every store keeps nanoseconds in 64 bits. A client's timestamp outside
// is refused; a parsed time outside is ignored (the time of receipt stays).
var (
	minTimestamp = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTimestamp = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// ValidTimestamp reports whether t is in the range artifacts may have.
func ValidTimestamp(t time.Time) bool {
	return !t.Before(minTimestamp) && t.Before(maxTimestamp)
}
