package vigil

import (
	"context"
	"encoding/json"
	"time"
)

// CorrelationPolicy tunes how observations join incidents (DESIGN §8).
type CorrelationPolicy struct {
	// Window is how long after its last activity an open incident still
	// takes new observations.
	Window time.Duration
	// HubLimit is the number of open incidents a key node may already be
	// part of before it stops joining (a NAT gateway, a public resolver).
	HubLimit int
}

// DefaultCorrelationPolicy returns the defaults of DESIGN §8.
func DefaultCorrelationPolicy() CorrelationPolicy {
	return CorrelationPolicy{Window: time.Hour, HubLimit: 25}
}

// Store keeps every record of every org. Each method takes the org and
// scopes its queries by it: a record of another org is reported exactly as
// a missing one (ENOTFOUND). Methods return *Error with EINVALID when the
// request names records that do not exist, ECONFLICT on a uniqueness
// violation, and wrap anything else as internal.
type Store interface {
	// Ping reports whether the store is reachable.
	Ping(ctx context.Context) error
	Close() error
	// DeploymentID returns the identity of this database: a random id
	// generated on the first call and kept in the database, so that every
	// process using it, now or after a restart, gets the same one, and
	// concurrent first calls agree. Another database has another id.
	// What a deployment may share with others (the queue's streams on a
	// common NATS) records it to know whose it is.
	DeploymentID(ctx context.Context) (string, error)

	// InsertArtifacts stores artifacts of org. It is idempotent on ID: an
	// artifact already stored is left as it is.
	InsertArtifacts(ctx context.Context, org string, arts []*Artifact) error
	// SearchArtifacts returns a page of matching artifacts, newest first by
	// Timestamp, and the total count of matches. A malformed Query is EINVALID.
	SearchArtifacts(ctx context.Context, org string, f ArtifactFilter) ([]*Artifact, int, error)
	// SetArtifactEvent records the normalized event of a parsed artifact.
	SetArtifactEvent(ctx context.Context, org, id string, event json.RawMessage) error
	// GetArtifacts returns the artifacts of org named by ids, in the order
	// of ids, each once; ids that name no artifact of org are skipped.
	GetArtifacts(ctx context.Context, org string, ids []string) ([]*Artifact, error)
	// SetArtifactEnrichment records what enrichment found for an artifact's
	// nodes; it replaces the previous value.
	SetArtifactEnrichment(ctx context.Context, org, id string, enrichment json.RawMessage) error

	// CacheGet returns the cached look-up of (provider, key), or nil when
	// there is none.
	CacheGet(ctx context.Context, provider, key string) (*CacheEntry, error)
	// CachePut stores or replaces a cached look-up.
	CachePut(ctx context.Context, e *CacheEntry) error

	// UpsertNodes returns the nodes named by refs, creating missing ones.
	UpsertNodes(ctx context.Context, org string, refs []NodeRef) ([]Node, error)
	// GetNode returns one node of org; ENOTFOUND if org has none with id.
	GetNode(ctx context.Context, org, id string) (*Node, error)
	// ListNodes returns a page of org's matching nodes, newest first (by
	// CreatedAt, ties by id descending), and the count of all matches.
	ListNodes(ctx context.Context, org string, f NodeFilter) ([]*Node, int, error)

	// RecordObservation stores o (its ID, CreatedAt and UpdatedAt set by the
	// caller) and correlates it: it joins the open incident of org that
	// shares a key node with it and was active within p.Window, the most
	// recently active one winning; if it bridges several, they are merged
	// into the oldest; else it opens a new incident titled title. It sets
	// o.IncidentID. Unknown NodeIDs or ArtifactIDs are EINVALID. The nodes
	// of o.Nodes are created when new, in the same transaction.
	RecordObservation(ctx context.Context, org string, o *Observation, title string, p CorrelationPolicy) error
	// Detect evaluates detections of org atomically (see Detection) and
	// correlates the observations they record or grow. It returns the
	// observations recorded or grown, each with the incident it is in once
	// the transaction commits.
	Detect(ctx context.Context, org string, ds []*Detection, p CorrelationPolicy) ([]Detected, error)
	// PruneSignals forgets detection signals older than before.
	PruneSignals(ctx context.Context, before time.Time) (int, error)

	GetObservation(ctx context.Context, org, id string) (*Observation, error)
	ListObservations(ctx context.Context, org string, f ObservationFilter) ([]*Observation, int, error)
	// UpdateObservation applies u (creating the nodes of u.Nodes when new,
	// in the same transaction) and refreshes the incident it belongs to.
	UpdateObservation(ctx context.Context, org, id string, u ObservationUpdate, now time.Time) (*Observation, error)
	// DeleteObservation removes it and refreshes the incident it belonged to.
	DeleteObservation(ctx context.Context, org, id string) error

	// GetIncident returns an incident with its nodes, observations and history.
	GetIncident(ctx context.Context, org, id string) (*Incident, error)
	ListIncidents(ctx context.Context, org string, f IncidentFilter) ([]*Incident, int, error)
	// SetIncidentStatus moves an incident to status, recording who did it.
	// Setting the current status again changes nothing.
	SetIncidentStatus(ctx context.Context, org, id string, status int, actor string, now time.Time) (*Incident, error)

	// IncidentFacts returns what classification rules see of an incident.
	IncidentFacts(ctx context.Context, org, id string) (*IncidentFacts, error)
	// OpenIncidentIDs returns the ids of org's open incidents (status 1, 2).
	OpenIncidentIDs(ctx context.Context, org string) ([]string, error)
	// ClassifyIncident records that rule decided the incident's severity,
	// or, with a nil rule, returns it to its computed severity.
	ClassifyIncident(ctx context.Context, org, id string, rule *Rule, now time.Time) error

	CreateRule(ctx context.Context, org string, r *Rule) error
	GetRule(ctx context.Context, org, id string) (*Rule, error)
	// ListRules returns rules by ascending priority, older first on ties.
	ListRules(ctx context.Context, org string, p Page) ([]*Rule, int, error)
	UpdateRule(ctx context.Context, org, id string, u RuleUpdate, now time.Time) (*Rule, error)
	DeleteRule(ctx context.Context, org, id string) error

	// CreateRole stores r; a name already used in org is ECONFLICT.
	CreateRole(ctx context.Context, org string, r *Role) error
	GetRole(ctx context.Context, org, id string) (*Role, error)
	ListRoles(ctx context.Context, org string, p Page) ([]*Role, int, error)
	UpdateRole(ctx context.Context, org, id string, u RoleUpdate, now time.Time) (*Role, error)
	DeleteRole(ctx context.Context, org, id string) error
	// RolePermissions returns the union of the permissions of the named
	// roles of org; unknown names grant nothing.
	RolePermissions(ctx context.Context, org string, names []string) ([]string, error)

	// EnrichmentSettings returns org's settings, creating the defaults on
	// first read.
	EnrichmentSettings(ctx context.Context, org string) (*EnrichmentSettings, error)
	PutEnrichmentSettings(ctx context.Context, org string, s *EnrichmentSettings) error
}
