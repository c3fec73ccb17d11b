package correlate

import (
	"context"
	"time"

	"github.com/vigil-soc/vigil"
)

// Store runs the engine's transactions. Both stores implement it with
// their SQL; the decisions (which incident an observation joins, when a
// burst fires or grows, which observation heads an incident) are the
// Engine's.
//
// An incident's headline is its observation of the highest rank
// (vigil.TitleRank, computed by the Engine), the newest on ties (by
// created_at, then id): every refresh of an incident (join, growth,
// merge, rebuild) sets its title to that observation's title (kept when
// it has none, as observations recorded before titles were stored) and
// its computed severity to that observation's severity.
type Store interface {
	// Correlate runs fn in one write transaction whose reads and writes
	// are all of org's records, committing when fn returns nil. A store
	// may run fn again when the database aborted the transaction to break
	// a deadlock, so fn sets its results and never accumulates them.
	Correlate(ctx context.Context, org string, fn func(Tx) error) error
}

// Tx is one correlation transaction of one org: every method reads and
// writes that org's records only. Errors other than those documented are
// the store's own (wrapped as internal, or transient when the database
// cannot write now).
type Tx interface {
	// CheckRefs returns EINVALID (field node_ids or artifact_ids) naming
	// the first of nodeIDs, then of artifactIDs, that is no record of the
	// org.
	CheckRefs(ctx context.Context, nodeIDs, artifactIDs []string) error
	// UpsertNodes returns the nodes named by refs, in their order,
	// creating at now those the org does not have: those have CreatedAt
	// now, the others a zero CreatedAt. A ref of an unknown type or
	// without a value is EINVALID.
	UpsertNodes(ctx context.Context, refs []vigil.NodeRef, now time.Time) ([]vigil.Node, error)

	// LockKeys makes the correlations of observations sharing one of the
	// key nodes ids run one after the other until the transaction ends,
	// so that the second sees the incident the first opened.
	LockKeys(ctx context.Context, ids []string) error
	// HubNodes returns those of ids that are key nodes of at least limit
	// open incidents.
	HubNodes(ctx context.Context, ids []string, limit int) ([]string, error)
	// OpenIncidents returns the open incidents (new or in progress, not
	// merged) in which one of keys is a key node and which were active
	// at or after since, each locked until the transaction ends.
	OpenIncidents(ctx context.Context, keys []string, since time.Time) ([]Candidate, error)
	// CreateIncident opens an incident.
	CreateIncident(ctx context.Context, inc NewIncident) error
	// MergeIncident moves the observations, nodes and artifacts of
	// incident from into incident into, leaves from as a pointer to into
	// with no counts of its own, and refreshes into's counts and headline.
	// Both are locked by OpenIncidents.
	MergeIncident(ctx context.Context, from, into string, now time.Time) error
	// RecordEvent adds ev to the history of the org's incident
	// ev.IncidentID, with the incident's artifact count as the
	// transaction has made it so far.
	RecordEvent(ctx context.Context, ev vigil.IncidentEvent) error
	// RecordEvents is RecordEvent of each of evs, in order (a store may
	// write them in one statement): the events of one incident that a
	// batch's growths recorded, a hundred a batch on the Windows mix.
	RecordEvents(ctx context.Context, evs []vigil.IncidentEvent) error
	// RebuildIncident recomputes an incident's nodes and artifacts from its
	// observations, then its counts and headline; a roll-up's nodes stay
	// context and its sources are counted again from its observations.
	RebuildIncident(ctx context.Context, id string, now time.Time) error

	// InsertObservation stores o, in incident o.IncidentID when the
	// engine set it (the roll-up it is sure to join: JoinRollup then has
	// nothing to move; a store may also leave it in none until it joins),
	// else in no incident yet, with its title,
	// specificity and rank (vigil.TitleRank), its nodes in order
	// (keys[id] marking the key nodes) and its artifacts in order.
	InsertObservation(ctx context.Context, o *vigil.Observation, rank int, keys map[string]bool) error
	// JoinIncident puts observation o into incident: it adds o's nodes
	// (a key node stays a key) and artifacts to the incident's, advances
	// its artifact count by those new to it, and refreshes its node count
	// and headline, active at now unless it was active later.
	JoinIncident(ctx context.Context, incident string, o *vigil.Observation, keys map[string]bool, now time.Time) error
	// LockObservation returns an observation with its refs, title and
	// specificity, locked with its incident until the transaction ends;
	// ENOTFOUND if the org has none with id.
	LockObservation(ctx context.Context, id string) (*vigil.Observation, error)
	// UpdateObservation writes o's type, description, severity, rank and
	// UpdatedAt and, when refs, replaces its nodes (keys[id] marking the
	// key nodes) and artifacts with o.NodeIDs and o.ArtifactIDs.
	UpdateObservation(ctx context.Context, o *vigil.Observation, rank int, keys map[string]bool, refs bool) error
	// DeleteObservation removes an observation (locked by LockObservation).
	DeleteObservation(ctx context.Context, id string) error
	// GrowObservation applies g to a detected observation, locking its
	// incident first. With g.Context (a roll-up) it also adds g's nodes
	// (as context) and artifacts to the incident, without counting them
	// on it or refreshing it, and returns how many were new to it:
	// UpdateRollup counts them, once a batch. Else the incident is left
	// as it is (what it returns may be zero): GrowIncident adds what the
	// batch's growths of its observations brought, once.
	GrowObservation(ctx context.Context, g Growth) (nodes, artifacts int, err error)
	// GrowIncident adds g's nodes (a key stays a key) and artifacts to
	// an incident that GrowObservation locked, advances its counts by
	// those new to it and widens its event times to theirs, and
	// refreshes its headline, active at g.At unless it was active later.
	GrowIncident(ctx context.Context, g IncidentGrowth) error
	// ObservationIncidents returns the incident each of the observations
	// ids is in now.
	ObservationIncidents(ctx context.Context, ids []string) (map[string]string, error)

	// LockDetections makes the evaluations of the (detector, key) pairs
	// run one after the other until the transaction ends.
	LockDetections(ctx context.Context, pairs []DetectionKey) error
	// RecordSignals records the signals of one (detector, key), once per
	// artifact, with their weights and units, and returns those not
	// recorded before, in their order.
	RecordSignals(ctx context.Context, k DetectionKey, sigs []vigil.Signal) ([]vigil.Signal, error)
	// RecordedUnits returns those of units that signals of one (detector,
	// key) at times in [from, to] (Unix nanoseconds) were recorded with.
	RecordedUnits(ctx context.Context, k DetectionKey, units []string, from, to int64) ([]string, error)
	// Bursts returns the bursts of one (detector, key) whose last signal
	// is at or after since (Unix nanoseconds), in no particular order.
	Bursts(ctx context.Context, k DetectionKey, since int64) ([]Burst, error)
	// SignalsFrom returns the time, weight and member of the oldest limit signals
	// of one (detector, key) at or after from, oldest first.
	SignalsFrom(ctx context.Context, k DetectionKey, from int64, limit int) ([]vigil.Signal, error)
	// NewestSignals returns the time, weight and member of the newest limit
	// signals of one (detector, key) in [from, to], newest first.
	NewestSignals(ctx context.Context, k DetectionKey, from, to int64, limit int) ([]vigil.Signal, error)
	// WindowSignals returns the first limit signals of one (detector, key)
	// in [from, to] with their nodes, oldest first (ties by artifact id).
	WindowSignals(ctx context.Context, k DetectionKey, from, to int64, limit int) ([]vigil.Signal, error)
	// StartBurst records a burst that fired.
	StartBurst(ctx context.Context, b Burst) error
	// ExtendBurst sets a grown burst's last signal time and count.
	ExtendBurst(ctx context.Context, k DetectionKey, observationID string, last int64, signals int) error

	RollupTx
}

// RollupTx is the state of roll-ups and entity risk in a correlation
// transaction (rollup.go, risk.go): the decisions are the Engine's.
type RollupTx interface {
	// AddRisk records what observation r.ObservationID added to the risk
	// of node r.NodeID (its points, its detection, at r.At); an entry it
	// holds already takes the higher points.
	AddRisk(ctx context.Context, r RiskEntry) error
	// Risk returns the risk of node from since on: the sum of its
	// entries' points and its distinct detections, sorted.
	Risk(ctx context.Context, node string, since time.Time) (points int, detections []string, err error)
	// DetectionSources returns how many distinct nodes have a risk entry
	// of detection from since on, and the time of the oldest entry.
	DetectionSources(ctx context.Context, detection string, since time.Time) (int, time.Time, error)
	// LockRollup makes the roll-up decisions of one detection run one
	// after the other until the transaction ends, so that two workers
	// never open two roll-ups of it.
	LockRollup(ctx context.Context, detection string) error
	// OpenRollup returns the open (new or in progress, not merged) roll-up
	// of detection whose window has not ended at at, locked until the
	// transaction ends, or nil. (A finding timed before the window's
	// start joins it too: a worker takes its time before it waits for
	// the lock under which another opened the roll-up.)
	OpenRollup(ctx context.Context, detection string, at time.Time) (*Rollup, error)
	// RollupOf returns the roll-up that incident is, or nil.
	RollupOf(ctx context.Context, incident string) (*Rollup, error)
	// CreateRollup records that incident r.IncidentID (created already)
	// is a roll-up.
	CreateRollup(ctx context.Context, r Rollup) error
	// JoinRollup puts observation o into roll-up incident: it adds o's
	// nodes (as context) and artifacts to the incident's and returns how
	// many of each were new to it, without counting them on the incident
	// or refreshing it: UpdateRollup does, once per batch.
	JoinRollup(ctx context.Context, incident string, o *vigil.Observation) (nodes, artifacts int, err error)
	// UpdateRollup writes what a batch did to a roll-up (u).
	UpdateRollup(ctx context.Context, u RollupUpdate) error
	// AddRollupSource adds count to the source node of roll-up incident
	// (active at), creating it when new, and reports whether it was new.
	AddRollupSource(ctx context.Context, incident, node string, count int, at time.Time) (bool, error)
	// RollupCandidates returns the observations of the incidents that a
	// roll-up of detection may take in when it forms: incidents holding a
	// finding of detection recorded from since on (by its risk entries),
	// each open and new, not merged, not assigned and no roll-up; every
	// observation of each, with its detection and key node by its risk
	// entries (a row per key node; none: "" for both), by incident, oldest
	// first.
	RollupCandidates(ctx context.Context, detection string, since time.Time) ([]Candidacy, error)
	// TakeIntoRollup moves observations obs of incident from, all of
	// source node, into roll-up into: their nodes join it as context,
	// their artifacts new to it count on node (a source new to it when it
	// had none) and on its counts, and it is refreshed. Incident from is
	// then rebuilt from the observations it has left or, when none, left
	// as a pointer to into with no counts of its own. It reports whether
	// node was new to into, the count added and whether from was emptied.
	TakeIntoRollup(ctx context.Context, obs []string, node, from, into string, now time.Time) (isNew bool, count int, emptied bool, err error)
	// RollupsOf returns the open roll-ups of which node is a source.
	RollupsOf(ctx context.Context, node string) ([]Rollup, error)
	// LeaveRollup moves the observations of roll-up r whose key node is
	// node into incident to, with their nodes (keys as they are in each
	// observation) and artifacts, removes node and those artifacts from
	// r and node from its sources, and refreshes both incidents. It
	// returns the observations moved and the source's count.
	LeaveRollup(ctx context.Context, r Rollup, node, to string, now time.Time) ([]string, int, error)
	// SetRaisedBy records why incident stands apart, unless it says so
	// already.
	SetRaisedBy(ctx context.Context, incident string, why vigil.RaisedBy) error
	// Node returns the org's node id (for what an incident says of it).
	Node(ctx context.Context, id string) (vigil.Node, error)
}

// RollupUpdate is what a batch of findings did to a roll-up: counts to
// add to the roll-up's (Sources, Count) and to its incident's (Nodes,
// Artifacts), and its title (kept when empty), which its incident takes
// too; the incident's headline is refreshed at At, and with Active it is
// active at At unless it was active later.
type RollupUpdate struct {
	IncidentID                       string
	Sources, Count, Nodes, Artifacts int
	Title                            string
	At                               time.Time
	Active                           bool
}

// Candidacy is one observation of an incident a forming roll-up may take
// in: its severity, and the detection and key node of one of its risk
// entries.
type Candidacy struct {
	IncidentID    string
	ObservationID string
	Severity      string
	Detection     string
	NodeID        string
}

// RiskEntry is what one observation adds to the risk of one of its key
// nodes.
type RiskEntry struct {
	ObservationID string
	NodeID        string
	Detection     string
	Points        int
	At            time.Time
}

// Rollup is the recorded state of a roll-up incident.
type Rollup struct {
	IncidentID string
	// Detection is what rolls up: the detector and the finding's roll-up
	// name (detection). Detector and Name are its parts.
	Detection   string
	Detector    string
	Name        string
	WindowStart time.Time
	WindowEnd   time.Time
	Sources     int
	Count       int
	Title       string
}

// Candidate is an open incident an observation may join.
type Candidate struct {
	ID        string
	CreatedAt time.Time
}

// NewIncident is an incident an observation opens.
type NewIncident struct {
	ID       string
	Title    string
	Severity string
	At       time.Time // created, updated and last active
}

// Growth is what a growing burst adds to its observation: nodes
// (keys[id] marking key nodes) and artifacts, appended to the
// observation's (its artifacts up to vigil.MaxObservationArtifacts), and
// with Context (a roll-up) added to the incident's, every node as
// context; the observation's new description, severity and rank, at Now.
type Growth struct {
	ObservationID string
	IncidentID    string
	NodeIDs       []string
	Keys          map[string]bool
	Context       bool
	ArtifactIDs   []string
	Description   string
	Severity      string
	TitleRank     int
	Now           time.Time
}

// IncidentGrowth is what the growths of a batch bring one incident: the
// nodes (keys[id] marking key nodes) and artifacts of its observations'
// growths, each once, at At, the time of the newest.
type IncidentGrowth struct {
	IncidentID  string
	NodeIDs     []string
	Keys        map[string]bool
	ArtifactIDs []string
	At          time.Time
}

// SpillRecorder is a Tx that records the signals of many (detector, key)s
// at once (RecordSignals of each, returning nothing): the keys a full
// Tally spills, hundreds a batch on an internet-facing host.
type SpillRecorder interface {
	RecordSpilled(ctx context.Context, ks []KeySignals) error
}

// KeySignals are signals of one (detector, key).
type KeySignals struct {
	DetectionKey
	Signals []vigil.Signal
}

// DetectionKey names the state of one detector's key: its signals and
// bursts.
type DetectionKey struct {
	Detector string
	Key      string
}

// Burst is the recorded state of a burst that fired: its observation,
// the times (Unix nanoseconds) of its first and last signals and what
// they count (Signals: the sum of their weights). Read back, it also says where its observation is: the incident,
// whether that incident is open, and the observation's severity.
type Burst struct {
	DetectionKey
	ObservationID string
	First, Last   int64
	Signals       int

	IncidentID string
	Open       bool
	Severity   string
	// Rollup: that incident is a roll-up.
	Rollup bool
}
