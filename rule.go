package vigil

import (
	"bytes"
	"encoding/json"
	"time"
)

// Rule is a classification rule: when its conditions match an incident,
// it sets the incident's severity (docs/detections.md, Classification
// rules).
type Rule struct {
	ID                   string          `json:"id"`
	OrgID                string          `json:"org_id"`
	Name                 string          `json:"name"`
	Priority             int             `json:"priority"`
	Enabled              bool            `json:"enabled"`
	Severity             string          `json:"severity"`
	TargetInfrastructure bool            `json:"target_infrastructure"`
	Conditions           json.RawMessage `json:"conditions"`
	CreatedAt            time.Time       `json:"created_at"`
	UpdatedAt            time.Time       `json:"updated_at"`
}

// RuleUpdate lists the fields of a partial update; nil = unchanged.
type RuleUpdate struct {
	Name                 *string
	Priority             *int
	Enabled              *bool
	Severity             *string
	TargetInfrastructure *bool
	Conditions           *json.RawMessage
}

// Apply sets the fields present in u on r.
func (u RuleUpdate) Apply(r *Rule) {
	set(&r.Name, u.Name)
	set(&r.Priority, u.Priority)
	set(&r.Enabled, u.Enabled)
	set(&r.Severity, u.Severity)
	set(&r.TargetInfrastructure, u.TargetInfrastructure)
	set(&r.Conditions, u.Conditions)
}

// Bounds of a rule's name and priority (a 32-bit integer in every store),
// and of an org's rules: every classification reads them all, each
// incident is matched against each in turn.
const (
	MaxRuleNameLen  = 200
	MaxRulePriority = 1<<31 - 1
	MaxRules        = 1000
)

// Same reports whether r and o say the same: every field a rule's author
// sets (not ids, orgs or times).
func (r *Rule) Same(o *Rule) bool {
	return r.Name == o.Name && r.Priority == o.Priority && r.Enabled == o.Enabled && r.Severity == o.Severity &&
		r.TargetInfrastructure == o.TargetInfrastructure && bytes.Equal(r.Conditions, o.Conditions)
}

// Reclassifies reports whether a rule write from before to after (nil
// before for a create, nil after for a delete) can change how incidents
// are classified: only enabled rules classify.
func Reclassifies(before, after *Rule) bool {
	return (before != nil && before.Enabled) || (after != nil && after.Enabled)
}

// Reclassification is an org's pending re-classification of its open
// incidents, as claimed by one process: the incidents with ids after
// Cursor remain; Generation counts the rule writes that asked for it, so
// that a claim knows whether one came since.
type Reclassification struct {
	OrgID      string
	Generation int64
	Cursor     string
	// Until is when the claim expires (another process may then take it);
	// it also tells this claim from a later one.
	Until time.Time
}
