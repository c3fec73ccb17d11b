package vigil

import "time"

// DetectionRule is an org's custom detection: a Sigma rule (detection,
// correlation or filter) as its author wrote it, with what Vigil read
// from it (docs/sigma.md). Enabled rules run on every artifact the org
// ingests; their matches become observations.
type DetectionRule struct {
	ID    string `json:"id"`
	OrgID string `json:"org_id"`
	// Title, SigmaID (the rule's own id, "" when it has none), Name (its
	// name, by which correlations may name it), Kind (detection,
	// correlation or filter) and Level are read from Rule.
	Title   string `json:"title"`
	SigmaID string `json:"sigma_id"`
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Level   string `json:"level"`
	Enabled bool   `json:"enabled"`
	// Rule is the Sigma rule's text (YAML, or its JSON form) as posted.
	Rule      string    `json:"rule"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// DetectionRuleUpdate lists the fields of an update; nil = unchanged. A
// new Rule text comes with the fields read from it.
type DetectionRuleUpdate struct {
	Enabled *bool
	Rule    *DetectionRule // Title, SigmaID, Name, Kind, Level and Rule
}

// Apply sets the fields present in u on r.
func (u DetectionRuleUpdate) Apply(r *DetectionRule) {
	set(&r.Enabled, u.Enabled)
	if n := u.Rule; n != nil {
		r.Title, r.SigmaID, r.Name, r.Kind, r.Level, r.Rule = n.Title, n.SigmaID, n.Name, n.Kind, n.Level, n.Rule
	}
}

// MaxDetectionRules bounds an org's detection rules: each enabled one is
// evaluated on every artifact of its log sources.
const MaxDetectionRules = 1000

// DetectionRuleConflict is the ECONFLICT of a rule whose Sigma id or
// name another rule of the org has (err: the store's uniqueness
// violation).
func DetectionRuleConflict(err error) error {
	return &Error{Code: ECONFLICT, Message: "another detection rule of the organization has this rule's id or name",
		Details: []FieldIssue{{Field: "rule.id", Issue: "the Sigma id and the name of a rule are unique in an organization"}}, Err: err}
}
