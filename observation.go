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
	// an incident (docs/detections.md, Correlation). Not shown in responses.
	KeyNodeIDs []string `json:"-"`
	// Nodes names further nodes by type and value (normalized, see
	// NormalizeNodeValue). RecordObservation creates those the org does not
	// have, in the same transaction, and adds them to NodeIDs after the ids
	// already there; a ref's Key adds it to KeyNodeIDs.
	Nodes []NodeRef `json:"-"`
	// Title is the incident's title while this observation heads it
	// (TitleRank); Specificity ranks it among observations of its
	// severity. Set when the observation is recorded.
	Title       string `json:"-"`
	Specificity int    `json:"-"`
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
	// Nodes names nodes by type and value that the update adds, creating
	// those the org does not have, to the nodes it leaves (NodeIDs when
	// given, else the current ones); a ref's Key makes the node a key.
	Nodes []NodeRef
}

// ChangesRefs reports whether u rewrites the observation's node or
// artifact references.
func (u ObservationUpdate) ChangesRefs() bool {
	return u.NodeIDs != nil || u.ArtifactIDs != nil || len(u.Nodes) > 0
}

// KeySet returns which of nodeIDs (as returned by Apply) are key nodes
// after the update, before u.Nodes are added: all of them when u names
// the nodes (an analyst naming a node means it to join), else those that
// were keys of o.
func (u ObservationUpdate) KeySet(o *Observation, nodeIDs []string) map[string]bool {
	keys := map[string]bool{}
	if u.NodeIDs != nil {
		for _, id := range nodeIDs {
			keys[id] = true
		}
		return keys
	}
	for _, id := range o.KeyNodeIDs {
		keys[id] = true
	}
	return keys
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

// InIDOrder returns the values of byID in the order of ids (as Dedupe
// left them), leaving out the ids it does not hold: what a store's
// GetArtifacts returns from rows that came in any order.
func InIDOrder[T any](ids []string, byID map[string]T) []T {
	out := make([]T, 0, len(byID))
	for _, id := range ids {
		if v, ok := byID[id]; ok {
			out = append(out, v)
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

// Limits of observation fields (docs/api.md, Observations): they bound
// what one request may make the store write.
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

// List paging defaults and bounds (docs/api.md, Lists): a limit outside
// 1..MaxLimit is a 400, not silently clamped.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)
