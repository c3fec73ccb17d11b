package vigil

import (
	"regexp"
	"time"
)

// Observation is a structured finding derived from artifacts, by a detector
// or an analyst through the API.
type Observation struct {
	ID          string    `json:"id"`
	OrgID       string    `json:"org_id"`
	Type        string    `json:"type"`
	Description string    `json:"description"`
	Severity    string    `json:"severity"`
	NodeIDs     []string  `json:"node_ids"`
	ArtifactIDs []string  `json:"artifact_ids"`
	IncidentID  string    `json:"incident_id,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`

	// KeyNodeIDs is the subset of NodeIDs that may join this observation to
	// an incident (DESIGN §8). Not stored as a field of its own in responses.
	KeyNodeIDs []string `json:"-"`
}

// ObservationFilter selects observations of one org.
type ObservationFilter struct {
	Type     string
	Severity string
	Range    TimeRange
	Page     Page
}

// ObservationUpdate lists the fields of a partial update; nil = unchanged.
type ObservationUpdate struct {
	Type        *string
	Description *string
	Severity    *string
	NodeIDs     *[]string
	ArtifactIDs *[]string
}

// Apply sets the scalar fields present in u on o, and returns the node and
// artifact ids o has after the update (deduplicated); the store replaces
// the references only when u names them.
func (u ObservationUpdate) Apply(o *Observation) (nodeIDs, artifactIDs []string) {
	set(&o.Type, u.Type)
	set(&o.Description, u.Description)
	set(&o.Severity, u.Severity)
	nodeIDs, artifactIDs = o.NodeIDs, o.ArtifactIDs
	if u.NodeIDs != nil {
		nodeIDs = Dedupe(*u.NodeIDs)
	}
	if u.ArtifactIDs != nil {
		artifactIDs = Dedupe(*u.ArtifactIDs)
	}
	return nodeIDs, artifactIDs
}

// Dedupe drops repeated ids, keeping first occurrences in order; it never
// returns nil.
func Dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// set stores *v in *dst when v is given: the one rule of partial updates.
func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

var observationTypeRE = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,63}$`)

// Limits of observation fields (DESIGN §6).
const (
	MaxDescriptionLen = 10000
	MaxRefsPerRecord  = 10000
)

// ValidateObservationType returns the issue with t, or "".
func ValidateObservationType(t string) string {
	if !observationTypeRE.MatchString(t) {
		return "must match ^[a-z][a-z0-9_.-]{0,63}$"
	}
	return ""
}

// TimeRange is a half-open interval [Start, End); a zero bound is open.
type TimeRange struct {
	Start, End time.Time
}

// Page is a window of a list.
type Page struct {
	Limit, Offset int
}

// List paging defaults and bounds (DESIGN §5).
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)
