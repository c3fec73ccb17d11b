package vigil

import (
	"encoding/json"
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"
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

	// RawJSON, when set, is the raw line as the JSON string literal the
	// client sent it in (quotes included; valid UTF-8 without an unpaired
	// surrogate escape, so that it decodes to the line exactly), and Raw
	// is empty until DecodeRaw: the API sets it so that the queue carries
	// the line as it came, not decoded and escaped again (a Windows
	// event, a JSON document, escapes about 160 characters of 1,100).
	RawJSON []byte `json:"-"`

	// Event holds the normalized (ECS) fields once parsed; null before.
	Event json.RawMessage `json:"event"`
	// Enrichment holds per-node-value context once enriched; null before.
	Enrichment json.RawMessage `json:"enrichment"`

	// What a preview (ArtifactFilter.Preview) left out, so that a list
	// of large artifacts stays small; the artifact read by its id has
	// everything. RawTruncated: Raw is the first PreviewRawBytes of the
	// RawBytes bytes stored; EventTruncated: Event is null because the
	// event is larger than PreviewEventBytes or was parsed from a raw
	// that was cut; MetadataTruncated: Metadata is {} in place of an
	// object larger than PreviewMetadataBytes.
	RawTruncated      bool `json:"raw_truncated,omitempty"`
	RawBytes          int  `json:"raw_bytes,omitempty"`
	EventTruncated    bool `json:"event_truncated,omitempty"`
	MetadataTruncated bool `json:"metadata_truncated,omitempty"`
}

// ArtifactFilter selects artifacts of one org.
type ArtifactFilter struct {
	Source string
	Query  string
	Range  TimeRange
	Page   Page
	// Preview bounds what each artifact of the page holds: Raw cut to
	// PreviewRawBytes, a stored Event and Metadata left out when larger
	// than PreviewEventBytes and PreviewMetadataBytes; the artifact says
	// what was left out.
	Preview bool
}

// Bounds of an artifact in a preview (lists): with 1,000 artifacts a page,
// a list of 1 MiB lines would otherwise be gigabytes.
const (
	PreviewRawBytes      = 16 << 10
	PreviewEventBytes    = 64 << 10
	PreviewMetadataBytes = 16 << 10
)

// TrimPartialRune drops the end of s that is an incomplete rune: s is
// the first bytes of a longer text, cut without regard to runes.
func TrimPartialRune(s string) string {
	i := len(s) - 1
	for i > 0 && i > len(s)-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	if i >= 0 && !utf8.FullRuneInString(s[i:]) {
		return s[:i]
	}
	return s
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

// DecodeRaw sets Raw from RawJSON, if set, and clears RawJSON.
func (a *Artifact) DecodeRaw() error {
	if a.RawJSON == nil {
		return nil
	}
	var raw string
	if err := json.Unmarshal(a.RawJSON, &raw); err != nil {
		return fmt.Errorf("artifact %s: raw: %w", a.ID, err)
	}
	a.Raw, a.RawJSON = raw, nil
	return nil
}
