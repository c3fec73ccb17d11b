package vigil

import (
	"slices"
	"strings"
	"time"
)

// Incident statuses, as the API carries them: 1 and 2 are open (an
// incident may still grow), 3, 4 and 5 closed.
const (
	StatusNew           = 1
	StatusInvestigating = 2
	StatusResolved      = 3
	StatusClosed        = 4
	StatusDisrupted     = 5
)

// Classifications that follow from a status.
const (
	TruePositive  = "true_positive"
	FalsePositive = "false_positive"
)

// StatusName returns the name of a status, or "" if unknown.
func StatusName(s int) string {
	switch s {
	case StatusNew:
		return "New"
	case StatusInvestigating:
		return "Investigating"
	case StatusResolved:
		return "Resolved"
	case StatusClosed:
		return "Closed"
	case StatusDisrupted:
		return "Disrupted"
	}
	return ""
}

// ValidStatus reports whether s is a status ID 1..5.
func ValidStatus(s int) bool { return s >= StatusNew && s <= StatusDisrupted }

// StatusOpen reports whether an incident in status s may still grow.
func StatusOpen(s int) bool { return s == StatusNew || s == StatusInvestigating }

// StatusClassification returns the classification that status s implies,
// or nil for open statuses.
func StatusClassification(s int) *string {
	var c string
	switch s {
	case StatusResolved, StatusDisrupted:
		c = TruePositive
	case StatusClosed:
		c = FalsePositive
	default:
		return nil
	}
	return &c
}

// Incident aggregates related observations, their artifacts and nodes.
type Incident struct {
	ID             string     `json:"id"`
	OrgID          string     `json:"org_id"`
	Title          string     `json:"title"`
	Severity       string     `json:"severity"`
	Status         int        `json:"status"`
	StatusName     string     `json:"status_name"`
	Classification *string    `json:"classification"`
	ClassifiedBy   *RuleRef   `json:"classified_by"`
	ArtifactCount  int        `json:"artifact_count"`
	NodeCount      int        `json:"node_count"`
	MergedInto     *string    `json:"merged_into,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	LastActivityAt time.Time  `json:"last_activity_at"`
	ResolvedAt     *time.Time `json:"resolved_at"`
	// FirstEventAt and LastEventAt are when what the incident is about
	// happened, where CreatedAt is when Vigil saw it: the earliest and
	// latest event times of its observations, an observation's being its
	// artifacts' timestamps or, when it names no artifact, its creation
	// time. Kept as observations join, grow, merge, change or go; nil
	// when the incident has no observation left (all deleted, or merged
	// into another incident).
	FirstEventAt *time.Time `json:"first_event_at"`
	LastEventAt  *time.Time `json:"last_event_at"`
	// Case work, absent when none: who works the incident, its tags.
	Assignee *string  `json:"assignee,omitempty"`
	Tags     []string `json:"tags,omitempty"`
	// Rollup, on a roll-up only: the detection and window it gathers and
	// its sources (GET /v1/incidents/{id}/sources lists them).
	Rollup *Rollup `json:"rollup,omitempty"`
	// RaisedBy, on an incident an entity's risk set apart from a
	// roll-up: why.
	RaisedBy *RaisedBy `json:"raised_by,omitempty"`

	// Only in the single-incident response, each list at most
	// MaxIncidentRefs long (node_count says how many nodes there are; a
	// roll-up lists its heaviest sources first, each with its count).
	Nodes        []Node           `json:"nodes,omitempty"`
	Observations []ObservationRef `json:"observations,omitempty"`
	History      []StatusChange   `json:"history,omitempty"`
}

// MaxIncidentRefs bounds the nodes and the observations that the
// single-incident response lists: a roll-up of a million sources is
// listed by pages of its sources instead.
const MaxIncidentRefs = 1000

// ObservationRef is the short form of an observation inside an incident.
type ObservationRef struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	Description string `json:"description"`
	Severity    string `json:"severity"`
}

// StatusChange is one entry of an incident's history.
type StatusChange struct {
	Actor string    `json:"actor"`
	At    time.Time `json:"at"`
	From  int       `json:"from"`
	To    int       `json:"to"`
}

// RuleRef names the classification rule that set an incident's severity.
type RuleRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// IncidentFilter selects incidents of one org.
type IncidentFilter struct {
	Status   int // 0 = any
	Severity string
	Assignee string // "" = any
	Tag      string // "" = any
	// Node, a node's id, keeps the incidents that name it ("" = any).
	Node string
	// Range filters on CreatedAt; EventRange keeps the incidents whose
	// events span [FirstEventAt, LastEventAt] meets it (start <= last
	// and first < end), which those without event times never do.
	Range      TimeRange
	EventRange TimeRange
	// ResolvedSince, when set, keeps the incidents last closed (ResolvedAt)
	// at or after it: closed incidents, as open ones have none.
	ResolvedSince time.Time
	// Text, when set, keeps the incidents whose title contains it,
	// case-insensitively (ASCII letters).
	Text string
	// Sort is the order of the list: IncidentSortCreated (the default),
	// IncidentSortActivity, IncidentSortSeverity, IncidentSortFirstEvent
	// or IncidentSortLastEvent.
	Sort string
	// Merged says what of the incidents merged into another the list
	// holds: MergedExclude ("", the default: they left the queue),
	// MergedInclude or MergedOnly.
	Merged string
	Page   Page
}

// What of the merged incidents a list holds.
const (
	MergedExclude = "exclude"
	MergedInclude = "include"
	MergedOnly    = "only"
)

// ValidMerged reports whether m says what of the merged incidents a list
// holds ("" is the default, MergedExclude).
func ValidMerged(m string) bool {
	return m == "" || m == MergedExclude || m == MergedInclude || m == MergedOnly
}

// MergedSQL is the condition of an incident list on merged incidents, the
// same on both stores, or "" for none.
func MergedSQL(m string) string {
	switch m {
	case MergedInclude:
		return ""
	case MergedOnly:
		return "merged_into IS NOT NULL"
	}
	return "merged_into IS NULL"
}

// MergedIncident is the error of a change an incident merged into another
// cannot take (its status): it names the incident that holds its
// observations now.
func MergedIncident(into string) *Error {
	return &Error{Code: ECONFLICT, Message: "incident was merged into " + into + "; change that incident instead",
		Details: []FieldIssue{{Field: "id", Issue: "was merged into incident " + into}}}
}

// Orders of an incident list. Each ends with the id, descending, so that
// pages never overlap.
const (
	// IncidentSortCreated: newest first by created_at.
	IncidentSortCreated = "created"
	// IncidentSortActivity: most recently active first (last_activity_at).
	IncidentSortActivity = "last_activity"
	// IncidentSortSeverity: critical first, then by last activity.
	IncidentSortSeverity = "severity"
	// IncidentSortFirstEvent: the most recently started first (by
	// first_event_at), those without event times last.
	IncidentSortFirstEvent = "first_event"
	// IncidentSortLastEvent: the most recently active first by event time
	// (last_event_at), those without event times last.
	IncidentSortLastEvent = "last_event"
)

// IncidentSorts are the orders of incident lists, the default first.
var IncidentSorts = []string{IncidentSortCreated, IncidentSortActivity, IncidentSortSeverity, IncidentSortFirstEvent, IncidentSortLastEvent}

// ValidIncidentSort reports whether s names an order of incident lists
// ("" is the default).
func ValidIncidentSort(s string) bool { return s == "" || slices.Contains(IncidentSorts, s) }

// IncidentOrderSQL is the ORDER BY clause of an incident list, the same
// on both stores (their columns and severity texts are alike).
func IncidentOrderSQL(sort string) string {
	switch sort {
	case IncidentSortActivity:
		return "last_activity_at DESC, id DESC"
	case IncidentSortSeverity:
		return "CASE severity WHEN 'critical' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 WHEN 'low' THEN 1 ELSE 0 END DESC, last_activity_at DESC, id DESC"
	case IncidentSortFirstEvent:
		return "first_event_at DESC NULLS LAST, id DESC"
	case IncidentSortLastEvent:
		return "last_event_at DESC NULLS LAST, id DESC"
	}
	return "created_at DESC, id DESC"
}

// LikePattern returns a LIKE pattern matching text anywhere, with the
// pattern characters of text escaped by a backslash (ESCAPE '\').
func LikePattern(text string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(text) + "%"
}
