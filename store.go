package vigil

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"time"
)

// CorrelationPolicy tunes how observations join incidents
// (docs/detections.md, Correlation).
type CorrelationPolicy struct {
	// Window is how long after its last activity an open incident still
	// takes new observations.
	Window time.Duration
	// HubLimit is the number of open incidents a key node may already be
	// part of before it stops joining (a NAT gateway, a public resolver).
	HubLimit int
}

// DefaultCorrelationPolicy returns the defaults: an incident quiet for an
// hour takes no more observations, and a key node shared by 25 open
// incidents (a NAT gateway, a public resolver) stops joining.
func DefaultCorrelationPolicy() CorrelationPolicy {
	return CorrelationPolicy{Window: time.Hour, HubLimit: 25}
}

// The store contract, split by concern so that each caller names what it
// needs. Every method that takes an org scopes its queries by it: a record
// of another org is reported exactly as a missing one (ENOTFOUND). Methods
// return *Error with EINVALID when the request names records that do not
// exist, ECONFLICT on a uniqueness violation, EUNAVAILABLE or ENOSPACE
// when the database cannot take the write now (see Transient), and wrap
// anything else as internal. Correlation (recording, updating and deleting
// observations, evaluating detections) is not here: it runs in the
// transactions of internal/correlate, which both stores also implement.

// Store is everything a store keeps: what a process opens and hands to
// its parts, each of which takes the smaller interface it uses.
type Store interface {
	Database
	ArtifactStore
	LookupCache
	NodeStore
	TriageStore
	HistoryStore
	CaseStore
	ClassificationStore
	RuleStore
	RoleStore
	SettingsStore
	SuppressionStore
	DetectionRuleStore
	SignalStore
	APIKeyStore
	WebhookStore
	AuditStore
}

// Database is the store as a whole.
type Database interface {
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
}

// ArtifactStore keeps the raw artifacts and their full-text index.
type ArtifactStore interface {
	// InsertArtifacts stores artifacts of org. It is idempotent on ID: an
	// artifact already stored is left as it is.
	InsertArtifacts(ctx context.Context, org string, arts []*Artifact) error
	// SearchArtifacts returns a page of matching artifacts, newest first by
	// Timestamp, and the total count of matches. A malformed Query is EINVALID.
	SearchArtifacts(ctx context.Context, org string, f ArtifactFilter) ([]*Artifact, int, error)
	// GetArtifacts returns the artifacts of org named by ids, in the order
	// of ids, each once; ids that name no artifact of org are skipped.
	GetArtifacts(ctx context.Context, org string, ids []string) ([]*Artifact, error)
	// SetArtifactEnrichment records what enrichment found for an artifact's
	// nodes; it replaces the previous value.
	SetArtifactEnrichment(ctx context.Context, org, id string, enrichment json.RawMessage) error
	// DropArtifactsBefore applies retention to every org: it deletes the
	// artifacts whose Timestamp is before t (PostgreSQL: the monthly
	// partitions that lie entirely before t, and the rows of its default
	// partition before the start of t's month) and returns how many
	// artifacts (PostgreSQL: partitions) it dropped. Observations and
	// incidents keep naming the artifacts they were built from.
	DropArtifactsBefore(ctx context.Context, t time.Time) (int, error)
}

// LookupCache keeps enrichment look-ups (DNS, RDAP) for every org.
type LookupCache interface {
	// CacheGet returns the cached look-up of (provider, key), or nil when
	// there is none.
	CacheGet(ctx context.Context, provider, key string) (*CacheEntry, error)
	// CachePut stores or replaces a cached look-up.
	CachePut(ctx context.Context, e *CacheEntry) error
}

// NodeStore keeps the entities (addresses, hosts, users…) of each org.
type NodeStore interface {
	// UpsertNodes returns the nodes named by refs, creating missing ones.
	UpsertNodes(ctx context.Context, org string, refs []NodeRef) ([]Node, error)
	// GetNode returns one node of org; ENOTFOUND if org has none with id.
	GetNode(ctx context.Context, org, id string) (*Node, error)
	// ListNodes returns a page of org's matching nodes, newest first (by
	// CreatedAt, ties by id descending), and the count of all matches.
	ListNodes(ctx context.Context, org string, f NodeFilter) ([]*Node, int, error)
	// JoinAccounts records the security identifiers of Windows accounts
	// as org's events name them (AccountSID): the first name recorded for
	// a SID is its account, and every other name recorded for it joins
	// that account (the first SID it was recorded with decides), so that
	// UpsertNodes gives the account's User node for it from then on. The
	// nodes made before stay as they are.
	JoinAccounts(ctx context.Context, org string, names []AccountSID) error
}

// TriageStore reads observations and incidents, and records an analyst's
// status changes.
type TriageStore interface {
	// GetObservation returns one observation of org with its nodes and
	// artifacts; ENOTFOUND if org has none with id.
	GetObservation(ctx context.Context, org, id string) (*Observation, error)
	// ListObservations returns a page of org's matching observations,
	// newest first, and the count of all matches.
	ListObservations(ctx context.Context, org string, f ObservationFilter) ([]*Observation, int, error)
	// GetIncident returns an incident with its nodes, observations and
	// history; ENOTFOUND if org has none with id.
	GetIncident(ctx context.Context, org, id string) (*Incident, error)
	// ListIncidents returns a page of org's matching incidents and the
	// count of all matches; the incidents merged into another are left
	// out unless f.Merged asks for them.
	ListIncidents(ctx context.Context, org string, f IncidentFilter) ([]*Incident, int, error)
	// IncidentObservations returns a page of the observations of incident
	// id of org, whole (with their nodes and artifacts), in the order of
	// the incident's observations (oldest first: CreatedAt, ties by id),
	// and their total; ENOTFOUND if org has no incident id.
	IncidentObservations(ctx context.Context, org, id string, p Page) ([]*Observation, int, error)
	// IncidentNodes returns a page of the nodes of incident id of org, each
	// with its role (Key), in the order of the incident's nodes (first
	// named first: CreatedAt, ties by id), and their total; ENOTFOUND if
	// org has no incident id.
	IncidentNodes(ctx context.Context, org, id string, p Page) ([]Node, int, error)
	// IncidentArtifacts returns a page of previews (ArtifactFilter.Preview)
	// of the artifacts of incident id of org that are still stored
	// (retention drops artifacts, never the incident's record of them),
	// newest first by Timestamp (ties by id, descending), and their
	// total; ENOTFOUND if org has no incident id.
	IncidentArtifacts(ctx context.Context, org, id string, p Page) ([]*Artifact, int, error)
	// SetIncidentStatus moves an incident to status, recording who did it.
	// Setting the current status again changes nothing. An incident merged
	// into another takes no status: ECONFLICT naming the other
	// (MergedIncident).
	SetIncidentStatus(ctx context.Context, org, id string, status int, actor string, now time.Time) (*Incident, error)
	// RollupSources returns a page of the sources of roll-up incident id,
	// heaviest first (ties by node id), and how many it has; ENOTFOUND if
	// org has no roll-up with id.
	RollupSources(ctx context.Context, org, id string, p Page) ([]RollupSource, int, error)
}

// HistoryStore reads the events of incidents: each incident's history,
// and each org's stream of them. Events are written by the transactions
// that make the changes they record (correlation, status changes,
// classification, case work).
type HistoryStore interface {
	// IncidentHistory returns a page of the events of incident id of org,
	// oldest first, and their total; ENOTFOUND if org has none with id.
	IncidentHistory(ctx context.Context, org, id string, p Page) ([]*IncidentEvent, int, error)
	// IncidentEventsAfter returns up to limit events of org whose stream
	// position (Seq) is after after, in stream order: an event committed
	// later never takes a position before one already returned, and the
	// events of one incident are in the order of its history.
	IncidentEventsAfter(ctx context.Context, org string, after int64, limit int) ([]*IncidentEvent, error)
	// IncidentEventsHead returns the stream position of org's newest
	// event (0: none): a reader starting there gets only what comes next.
	IncidentEventsHead(ctx context.Context, org string) (int64, error)
}

// CaseStore keeps the case work on incidents: assignee, tags and
// comments. Each change is recorded in the incident's history in the same
// transaction, by actor.
type CaseStore interface {
	// UpdateIncidentCase applies u to incident id of org and returns it as
	// GetIncident does; what it does not change records nothing.
	// ENOTFOUND if org has no incident id.
	UpdateIncidentCase(ctx context.Context, org, id string, u CaseUpdate, actor string, now time.Time) (*Incident, error)
	// CreateComment stores c (its ID, Author and times set) on incident
	// c.IncidentID of org; ENOTFOUND if org has no such incident.
	CreateComment(ctx context.Context, org string, c *Comment) error
	// GetComment returns comment id of incident of org; ENOTFOUND if there
	// is none.
	GetComment(ctx context.Context, org, incident, id string) (*Comment, error)
	// ListComments returns a page of the comments of incident of org,
	// oldest first, and their total; ENOTFOUND if org has no incident.
	ListComments(ctx context.Context, org, incident string, p Page) ([]*Comment, int, error)
	// UpdateComment replaces the body of comment id; ENOTFOUND if the
	// incident of org has no such comment.
	UpdateComment(ctx context.Context, org, incident, id, body string, now time.Time) (*Comment, error)
	// DeleteComment removes comment id; ENOTFOUND if the incident of org
	// has no such comment.
	DeleteComment(ctx context.Context, org, incident, id string) error
}

// ClassificationStore is what classification rules read and decide of an
// incident.
type ClassificationStore interface {
	// IncidentFacts returns what classification rules see of an incident;
	// ENOTFOUND if org has none with id.
	IncidentFacts(ctx context.Context, org, id string) (*IncidentFacts, error)
	// OpenIncidentIDs returns the ids of org's open incidents (status 1, 2).
	OpenIncidentIDs(ctx context.Context, org string) ([]string, error)
	// ClassifyIncident records that rule decided the incident's severity,
	// or, with a nil rule, returns it to its computed severity.
	ClassifyIncident(ctx context.Context, org, id string, rule *Rule, now time.Time) error
}

// RuleStore keeps each org's classification rules, and whether its open
// incidents await re-classification after they changed: a rule write that
// can change how incidents are classified (Reclassifies) marks the org in
// its own transaction, so that the mark survives a crash, and
// rules.Reclassifier works the marks off in the background, in steps,
// one org after another. Several writes before a pass make one pass.
type RuleStore interface {
	// CreateRule stores r; ECONFLICT when org already has MaxRules rules.
	CreateRule(ctx context.Context, org string, r *Rule) error
	// GetRule returns one rule of org; ENOTFOUND if org has none with id.
	GetRule(ctx context.Context, org, id string) (*Rule, error)
	// ListRules returns rules by ascending priority, older first on ties.
	ListRules(ctx context.Context, org string, p Page) ([]*Rule, int, error)
	// UpdateRule applies u to rule id of org, its UpdatedAt set to now;
	// an update that changes nothing (Same) writes nothing and returns
	// the rule as it was. ENOTFOUND if org has no rule id.
	UpdateRule(ctx context.Context, org, id string, u RuleUpdate, now time.Time) (*Rule, error)
	// DeleteRule removes rule id of org; ENOTFOUND if org has none.
	DeleteRule(ctx context.Context, org, id string) error

	// ReclassifyPending reports whether org's open incidents await
	// re-classification.
	ReclassifyPending(ctx context.Context, org string) (bool, error)
	// ClaimReclassify claims until until the re-classification that has
	// waited longest among those not claimed, or whose claim expired by
	// now; nil when there is none.
	ClaimReclassify(ctx context.Context, now, until time.Time) (*Reclassification, error)
	// ReleaseReclassify ends claim c, which classified the open incidents
	// up to cursor: done (none after it remains) removes the mark, unless
	// a rule write came since the claim; else the mark keeps cursor and
	// goes to the end of the line (at now). A rule write since the claim
	// restarts the pass from the first incident. A claim that expired and
	// was taken by another changes nothing.
	ReleaseReclassify(ctx context.Context, c Reclassification, cursor string, done bool, now time.Time) error
}

// RoleStore keeps each org's roles and answers what they permit.
type RoleStore interface {
	// CreateRole stores r; a name already used in org is ECONFLICT.
	CreateRole(ctx context.Context, org string, r *Role) error
	// GetRole returns one role of org; ENOTFOUND if org has none with id.
	GetRole(ctx context.Context, org, id string) (*Role, error)
	ListRoles(ctx context.Context, org string, p Page) ([]*Role, int, error)
	UpdateRole(ctx context.Context, org, id string, u RoleUpdate, now time.Time) (*Role, error)
	DeleteRole(ctx context.Context, org, id string) error
	// RolePermissions returns the union of the permissions of the named
	// roles of org; unknown names grant nothing.
	RolePermissions(ctx context.Context, org string, names []string) ([]string, error)
}

// SettingsStore keeps each org's enrichment settings.
type SettingsStore interface {
	// EnrichmentSettings returns org's settings, creating the defaults on
	// first read.
	EnrichmentSettings(ctx context.Context, org string) (*EnrichmentSettings, error)
	PutEnrichmentSettings(ctx context.Context, org string, s *EnrichmentSettings) error
}

// SuppressionStore keeps each org's suppressions and counts what they
// swallow.
type SuppressionStore interface {
	// CreateSuppression stores s; ECONFLICT when org already has
	// MaxSuppressions.
	CreateSuppression(ctx context.Context, org string, s *Suppression) error
	// GetSuppression returns one suppression of org; ENOTFOUND if org has
	// none with id.
	GetSuppression(ctx context.Context, org, id string) (*Suppression, error)
	// ListSuppressions returns a page of org's suppressions, newest first
	// (by CreatedAt, ties by id descending), and their total.
	ListSuppressions(ctx context.Context, org string, p Page) ([]*Suppression, int, error)
	// UpdateSuppression applies u; ENOTFOUND if org has none with id.
	UpdateSuppression(ctx context.Context, org, id string, u SuppressionUpdate, now time.Time) (*Suppression, error)
	// DeleteSuppression removes one suppression of org; ENOTFOUND if org
	// has none with id.
	DeleteSuppression(ctx context.Context, org, id string) error
	// CountSuppressed records what suppressions of org swallowed at now,
	// once per (suppression, detector, key, artifact), so that a
	// redelivered artifact counts once: each suppression's count grows
	// by its hits not recorded before, and its LastSuppressedAt becomes
	// now. Hits of suppressions org no longer has are dropped. It
	// returns the hits newly counted.
	CountSuppressed(ctx context.Context, org string, hits []SuppressedSignal, now time.Time) ([]SuppressedSignal, error)
}

// DetectionRuleStore keeps each org's Sigma detection rules.
type DetectionRuleStore interface {
	// CreateDetectionRule stores r; ECONFLICT when org already has
	// MaxDetectionRules, or a rule with r's SigmaID or Name (when set).
	CreateDetectionRule(ctx context.Context, org string, r *DetectionRule) error
	// GetDetectionRule returns one rule of org; ENOTFOUND if org has none
	// with id.
	GetDetectionRule(ctx context.Context, org, id string) (*DetectionRule, error)
	// ListDetectionRules returns a page of org's rules, oldest first (by
	// CreatedAt, ties by id), and their total.
	ListDetectionRules(ctx context.Context, org string, p Page) ([]*DetectionRule, int, error)
	// UpdateDetectionRule applies u, UpdatedAt set to now; ENOTFOUND if
	// org has none with id, ECONFLICT if the new SigmaID or Name is
	// another rule's.
	UpdateDetectionRule(ctx context.Context, org, id string, u DetectionRuleUpdate, now time.Time) (*DetectionRule, error)
	// DeleteDetectionRule removes one rule of org; ENOTFOUND if org has
	// none with id.
	DeleteDetectionRule(ctx context.Context, org, id string) error
	// StarterRuleStates returns the starter rules (internal/starterrules)
	// org turned on or off, by rule id: the others have their default.
	StarterRuleStates(ctx context.Context, org string) (map[string]bool, error)
	// SetStarterRuleState records that org turned a starter rule on or
	// off.
	SetStarterRuleState(ctx context.Context, org, id string, enabled bool, now time.Time) error
}

// SignalStore is the housekeeping of the detection state that
// correlation records (signals and bursts).
type SignalStore interface {
	// PruneSignals forgets, in every org, the detection signals r does
	// not keep, the bursts whose last signal it does not keep, and the
	// record of suppressed signals counted before r.Before; it returns
	// how many detection signals it forgot.
	PruneSignals(ctx context.Context, r SignalRetention) (int, error)
}

// SignalRetention is how far back detection signals are kept: from
// Before, and for the detectors whose names start with one of Longer's
// prefixes from that prefix's time if earlier (a Sigma correlation's
// window may span days).
type SignalRetention struct {
	Before time.Time
	Longer map[string]time.Time
}

// From returns the time from which r keeps the signals of detector.
func (r SignalRetention) From(detector string) time.Time {
	from := r.Before
	for p, t := range r.Longer {
		if strings.HasPrefix(detector, p) && t.Before(from) {
			from = t
		}
	}
	return from
}

// EntityRiskBefore is the time before which entity risk is forgotten:
// a week before Before, the longest a roll-up's window may be (its
// detection's findings within the window tell whether it forms).
func (r SignalRetention) EntityRiskBefore() time.Time {
	return r.Before.Add(-time.Duration(MaxRollupWindowMinutes) * time.Minute)
}

// Prefixes returns Longer's prefixes, sorted.
func (r SignalRetention) Prefixes() []string {
	out := make([]string, 0, len(r.Longer))
	for p := range r.Longer {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// APIKeyStore keeps each org's ingest API keys.
type APIKeyStore interface {
	// CreateAPIKey stores k; ECONFLICT when org already has MaxAPIKeys.
	CreateAPIKey(ctx context.Context, org string, k *APIKey) error
	// GetAPIKey returns one key of org; ENOTFOUND if org has none with id.
	GetAPIKey(ctx context.Context, org, id string) (*APIKey, error)
	// ListAPIKeys returns a page of org's keys, newest first (by
	// CreatedAt, ties by id descending), and their total.
	ListAPIKeys(ctx context.Context, org string, p Page) ([]*APIKey, int, error)
	// RevokeAPIKey marks a key of org revoked at now and returns it; a
	// key already revoked keeps its first RevokedAt. ENOTFOUND if org has
	// none with id.
	RevokeAPIKey(ctx context.Context, org, id string, now time.Time) (*APIKey, error)
	// LookupAPIKey returns the key with id whatever its org, with its
	// Hash: what authentication needs to check a presented secret and
	// learn the org it acts for. ENOTFOUND if there is none.
	LookupAPIKey(ctx context.Context, id string) (*APIKey, error)
	// TouchAPIKey records that a key of org was used at t; an earlier t
	// than the one recorded changes nothing.
	TouchAPIKey(ctx context.Context, org, id string, t time.Time) error
}

// ArtifactEstimator is a Store whose artifact search may estimate a large
// total rather than count it: a total up to exactUpTo is exact, a larger
// one may be an estimate, and estimated says which (always more than
// exactUpTo when true). The API uses it when the store has it.
type ArtifactEstimator interface {
	SearchArtifactsEstimated(ctx context.Context, org string, f ArtifactFilter, exactUpTo int) (arts []*Artifact, total int, estimated bool, err error)
}
