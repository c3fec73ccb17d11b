package vigil

import (
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

// Bounds of a rule's name and priority (a 32-bit integer in every store).
const (
	MaxRuleNameLen  = 200
	MaxRulePriority = 1<<31 - 1
)
