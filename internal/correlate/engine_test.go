package correlate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// fakeTx is a correlation transaction in memory that logs the primitives
// the engine calls, so that the tests check the engine's decisions and
// their order, whatever the store.
type fakeTx struct {
	log        []string
	hubs       []string
	candidates []Candidate
	bursts     map[DetectionKey][]Burst
	signals    map[DetectionKey][]vigil.Signal
	joined     string // the incident JoinIncident was given
	keys       map[string]bool
	inserted   []*vigil.Observation // as InsertObservation was given them
	ranks      []int                // the ranks of every observation written
	locked     *vigil.Observation   // what LockObservation returns

	// Roll-ups and risk (rollup_test.go).
	risk        []RiskEntry
	rollups     map[string]*Rollup        // by incident
	sources     map[string]map[string]int // incident → node → count
	candidacies []Candidacy               // what RollupCandidates returns
	left        map[string]int            // observations left in each incident TakeIntoRollup takes from
	raised      map[string]vigil.RaisedBy // by incident
	joinKeys    map[string]bool           // the keys JoinIncident was given
	newNodes    map[string]bool           // values whose nodes UpsertNodes creates
	growth      []Growth                  // as GrowObservation was given them
	created     []NewIncident             // as CreateIncident was given them
}

func (f *fakeTx) call(format string, args ...any) {
	f.log = append(f.log, fmt.Sprintf(format, args...))
}

func (f *fakeTx) CheckRefs(context.Context, []string, []string) error {
	f.call("CheckRefs")
	return nil
}
func (f *fakeTx) UpsertNodes(_ context.Context, refs []vigil.NodeRef, now time.Time) ([]vigil.Node, error) {
	f.call("UpsertNodes")
	out := make([]vigil.Node, len(refs))
	for i, r := range refs {
		out[i] = vigil.Node{ID: "node:" + r.Value, Type: r.Type, Value: r.Value}
		if f.newNodes[r.Value] {
			out[i].CreatedAt = now
		}
	}
	return out, nil
}
func (f *fakeTx) LockKeys(_ context.Context, ids []string) error {
	f.call("LockKeys %v", ids)
	return nil
}
func (f *fakeTx) HubNodes(_ context.Context, ids []string, limit int) ([]string, error) {
	f.call("HubNodes %v %d", ids, limit)
	return f.hubs, nil
}
func (f *fakeTx) OpenIncidents(_ context.Context, keys []string, _ time.Time) ([]Candidate, error) {
	f.call("OpenIncidents %v", keys)
	return f.candidates, nil
}
func (f *fakeTx) CreateIncident(_ context.Context, inc NewIncident) error {
	f.call("CreateIncident %s", inc.Title)
	f.created = append(f.created, inc)
	return nil
}
func (f *fakeTx) MergeIncident(_ context.Context, from, into string, _ time.Time) error {
	f.call("MergeIncident %s into %s", from, into)
	return nil
}
func (f *fakeTx) RecordEvent(_ context.Context, ev vigil.IncidentEvent) error {
	d := ev.Detail
	moved := ""
	if d.MovedTo != "" || d.MovedFrom != "" {
		moved = " moved " + d.MovedFrom + ">" + d.MovedTo
	}
	f.call("RecordEvent %s %s by %s/%s %s%s%s%s", ev.Type, ev.IncidentID, ev.Actor, ev.Via, d.ObservationID, d.MergedFrom, d.MergedInto, moved)
	return nil
}
func (f *fakeTx) RecordEvents(ctx context.Context, evs []vigil.IncidentEvent) error {
	for _, ev := range evs {
		if err := f.RecordEvent(ctx, ev); err != nil {
			return err
		}
	}
	return nil
}
func (f *fakeTx) RebuildIncident(_ context.Context, id string, _ time.Time) error {
	f.call("RebuildIncident %s", id)
	return nil
}
func (f *fakeTx) InsertObservation(_ context.Context, o *vigil.Observation, rank int, keys map[string]bool) error {
	f.call("InsertObservation")
	f.keys = keys
	f.inserted = append(f.inserted, o)
	f.ranks = append(f.ranks, rank)
	return nil
}
func (f *fakeTx) JoinIncident(_ context.Context, incident string, _ *vigil.Observation, keys map[string]bool, _ time.Time) error {
	f.call("JoinIncident")
	f.joined, f.joinKeys = incident, keys
	return nil
}
func (f *fakeTx) LockObservation(context.Context, string) (*vigil.Observation, error) {
	if f.locked == nil {
		return nil, vigil.NotFound("observation")
	}
	return f.locked, nil
}
func (f *fakeTx) UpdateObservation(_ context.Context, o *vigil.Observation, rank int, _ map[string]bool, _ bool) error {
	f.call("UpdateObservation %s", o.Severity)
	f.ranks = append(f.ranks, rank)
	return nil
}
func (f *fakeTx) DeleteObservation(context.Context, string) error { return nil }
func (f *fakeTx) GrowObservation(_ context.Context, g Growth) (int, int, error) {
	f.call("GrowObservation %s %s", g.ObservationID, g.Severity)
	f.growth = append(f.growth, g)
	f.ranks = append(f.ranks, g.TitleRank)
	return 0, len(g.ArtifactIDs), nil
}
func (f *fakeTx) GrowIncident(_ context.Context, g IncidentGrowth) error {
	f.call("GrowIncident %s %d %d", g.IncidentID, len(g.NodeIDs), len(g.ArtifactIDs))
	return nil
}
func (f *fakeTx) ObservationIncidents(_ context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	for _, id := range ids {
		out[id] = "incident-of-" + id
	}
	return out, nil
}
func (f *fakeTx) LockDetections(_ context.Context, pairs []DetectionKey) error {
	f.call("LockDetections %v", pairs)
	return nil
}
func (f *fakeTx) RecordSignals(_ context.Context, k DetectionKey, sigs []vigil.Signal) ([]vigil.Signal, error) {
	f.call("RecordSignals")
	f.signals[k] = append(f.signals[k], sigs...)
	slices.SortFunc(f.signals[k], func(a, b vigil.Signal) int { return a.At.Compare(b.At) })
	return sigs, nil
}
func (f *fakeTx) RecordedUnits(_ context.Context, k DetectionKey, units []string, from, to int64) ([]string, error) {
	f.call("RecordedUnits")
	var out []string
	for _, sg := range f.signals[k] {
		if sg.Unit != "" && slices.Contains(units, sg.Unit) && !slices.Contains(out, sg.Unit) &&
			sg.At.UnixNano() >= from && sg.At.UnixNano() <= to {
			out = append(out, sg.Unit)
		}
	}
	return out, nil
}
func (f *fakeTx) Bursts(_ context.Context, k DetectionKey, since int64) ([]Burst, error) {
	f.call("Bursts %s", k.Detector)
	var out []Burst
	for _, b := range f.bursts[k] {
		if b.Last >= since {
			out = append(out, b)
		}
	}
	return out, nil
}
func (f *fakeTx) SignalsFrom(_ context.Context, k DetectionKey, from int64, _ int) ([]vigil.Signal, error) {
	f.call("SignalsFrom")
	var out []vigil.Signal
	for _, sg := range f.signals[k] {
		if nanos(sg.At) >= from {
			out = append(out, sg)
		}
	}
	return out, nil
}
func (f *fakeTx) NewestSignals(_ context.Context, k DetectionKey, from, to int64, _ int) ([]vigil.Signal, error) {
	f.call("NewestSignals")
	return f.signals[k], nil
}
func (f *fakeTx) WindowSignals(_ context.Context, k DetectionKey, from, to int64, _ int) ([]vigil.Signal, error) {
	f.call("WindowSignals")
	return f.signals[k], nil
}
func (f *fakeTx) StartBurst(_ context.Context, b Burst) error {
	f.call("StartBurst %s", b.ObservationID)
	return nil
}
func (f *fakeTx) ExtendBurst(_ context.Context, _ DetectionKey, id string, _ int64, signals int) error {
	f.call("ExtendBurst %s %d", id, signals)
	return nil
}

// fakeStore runs every transaction on one fakeTx.
type fakeStore struct{ tx *fakeTx }

func (s fakeStore) Correlate(_ context.Context, _ string, fn func(Tx) error) error { return fn(s.tx) }

func newFake() *fakeTx {
	return &fakeTx{bursts: map[DetectionKey][]Burst{}, signals: map[DetectionKey][]vigil.Signal{},
		rollups: map[string]*Rollup{}, sources: map[string]map[string]int{}, raised: map[string]vigil.RaisedBy{}, left: map[string]int{}}
}

// calls returns the primitives of the log, without their arguments.
func calls(log []string) []string {
	out := make([]string, len(log))
	for i, l := range log {
		out[i], _, _ = strings.Cut(l, " ")
	}
	return out
}

var t0 = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

func TestRecordJoinsTheOldestAndMergesTheRest(t *testing.T) {
	tx := newFake()
	// The store lists candidates in no particular order.
	tx.candidates = []Candidate{{ID: "c", CreatedAt: t0.Add(time.Minute)}, {ID: "b", CreatedAt: t0}, {ID: "a", CreatedAt: t0}}
	tx.hubs = []string{"hub"}
	e := NewEngine(fakeStore{tx}, nil, vigil.CorrelationPolicy{Window: time.Hour, HubLimit: 3})
	o := &vigil.Observation{ID: "o", Severity: vigil.SeverityLow, NodeIDs: []string{"k2", "hub", "k1", "ctx"},
		KeyNodeIDs: []string{"k2", "hub", "k1"}, CreatedAt: t0, UpdatedAt: t0}
	if err := e.Record(vigil.WithActor(t.Context(), "ana"), "org", o, "title"); err != nil {
		t.Fatal(err)
	}
	want := []string{"CheckRefs", "LockKeys", "HubNodes", "InsertObservation", "OpenIncidents", "AddRisk", "Risk", "AddRisk", "Risk",
		"MergeIncident", "RecordEvent", "RecordEvent", "MergeIncident", "RecordEvent", "RecordEvent", "JoinIncident", "RecordEvent"}
	if got := calls(tx.log); !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v (lock the keys before reading anything of them)", tx.log, want)
	}
	if tx.log[1] != "LockKeys [hub k1 k2]" || tx.log[4] != "OpenIncidents [k1 k2]" {
		t.Errorf("locks %q and candidates %q: want every key locked, in order, and the hub left out of the search", tx.log[1], tx.log[4])
	}
	if tx.log[9] != "MergeIncident b into a" || tx.log[12] != "MergeIncident c into a" || tx.joined != "a" || o.IncidentID != "a" {
		t.Errorf("merges %v, joined %s: want b and c into a, the oldest (ties by id)", tx.log[9:13], tx.joined)
	}
	// Each merge is in the history of both incidents, and the join in
	// the target's, by the actor who posted the observation.
	events := []string{tx.log[10], tx.log[11], tx.log[13], tx.log[14], tx.log[16]}
	wantEvents := []string{"RecordEvent incident.merged b by ana/ a", "RecordEvent incident.merged a by ana/ b",
		"RecordEvent incident.merged c by ana/ a", "RecordEvent incident.merged a by ana/ c", "RecordEvent incident.grew a by ana/ o"}
	if !slices.Equal(events, wantEvents) {
		t.Errorf("events %q, want %q", events, wantEvents)
	}
	if !slices.Equal(o.KeyNodeIDs, []string{"k2", "k1"}) || tx.keys["hub"] {
		t.Errorf("key nodes %v, want the hub recorded as context", o.KeyNodeIDs)
	}
}

func TestRecordOpensAnIncident(t *testing.T) {
	tx := newFake()
	e := NewEngine(fakeStore{tx}, nil, vigil.DefaultCorrelationPolicy())
	o := &vigil.Observation{ID: "o", CreatedAt: t0, UpdatedAt: t0}
	if err := e.Record(t.Context(), "org", o, "lonely"); err != nil {
		t.Fatal(err)
	}
	want := []string{"CheckRefs", "LockKeys", "InsertObservation", "CreateIncident", "JoinIncident", "RecordEvent"}
	if got := calls(tx.log); !slices.Equal(got, want) || tx.log[3] != "CreateIncident lonely" || o.IncidentID == "" || o.IncidentID != tx.joined {
		t.Fatalf("calls %v, incident %q; want a new incident without looking for candidates", tx.log, o.IncidentID)
	}
	if want := "RecordEvent incident.created " + o.IncidentID + " by system/ o"; tx.log[5] != want {
		t.Errorf("event %q, want %q (no actor in the context: the system)", tx.log[5], want)
	}
}

// detection returns a detection of n signals of key 1 s apart from start.
func detection(start time.Time, n int) *vigil.Detection {
	d := &vigil.Detection{Detector: "bf", Key: "k", Span: time.Minute, MinCount: 3,
		Describe: func(key string, w vigil.WindowState) vigil.Finding {
			return vigil.Finding{Type: "t", Severity: vigil.SeverityMedium, Title: key, Description: fmt.Sprint(w.Count, w.Grown)}
		}}
	for i := range n {
		d.Signals = append(d.Signals, vigil.Signal{ArtifactID: fmt.Sprint(start.Unix(), i), At: start.Add(time.Duration(i) * time.Second),
			Nodes: []vigil.NodeRef{{Type: vigil.NodeIP, Value: "203.0.113.7", Key: true}}})
	}
	return d
}

func TestDetectGrowsTheNewestOpenBurst(t *testing.T) {
	tx := newFake()
	k := DetectionKey{"bf", "k"}
	tx.bursts[k] = []Burst{
		{DetectionKey: k, ObservationID: "closed", Last: nanos(t0), Open: false},
		{DetectionKey: k, ObservationID: "older", Last: nanos(t0.Add(-10 * time.Second)), Open: true, Severity: vigil.SeverityHigh, Signals: 4},
		{DetectionKey: k, ObservationID: "gone", Last: nanos(t0.Add(-time.Hour)), Open: true},
	}
	e := NewEngine(fakeStore{tx}, nil, vigil.DefaultCorrelationPolicy())
	got, err := e.Detect(t.Context(), "org", []*vigil.Detection{detection(t0.Add(time.Second), 2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ObservationID != "older" || got[0].IncidentID != "incident-of-older" {
		t.Fatalf("Detect = %+v, want the open burst within span grown", got)
	}
	if !slices.Contains(tx.log, "GrowObservation older high") || !slices.Contains(tx.log, "ExtendBurst older 6") {
		t.Errorf("log %v: want growth that keeps the higher severity and counts 4+2 signals", tx.log)
	}
	if i, j := slices.Index(calls(tx.log), "LockKeys"), slices.Index(calls(tx.log), "GrowObservation"); i < 0 || i > j {
		t.Errorf("log %v: want the key nodes locked before the growth", tx.log)
	}
}

func TestDetectFiresAfterTheClosedBurst(t *testing.T) {
	tx := newFake()
	k := DetectionKey{"bf", "k"}
	// A closed burst ended at t0: its signals never count again.
	tx.signals[k] = detection(t0.Add(-2*time.Second), 3).Signals
	tx.bursts[k] = []Burst{{DetectionKey: k, ObservationID: "closed", Last: nanos(t0), Open: false}}
	e := NewEngine(fakeStore{tx}, nil, vigil.DefaultCorrelationPolicy())
	if got, _ := e.Detect(t.Context(), "org", []*vigil.Detection{detection(t0.Add(time.Second), 2)}); len(got) != 0 {
		t.Fatalf("Detect = %+v: 2 signals after the closed burst fired", got)
	}
	got, err := e.Detect(t.Context(), "org", []*vigil.Detection{detection(t0.Add(10*time.Second), 1)})
	if err != nil || len(got) != 1 {
		t.Fatalf("Detect = %+v, %v; want the third signal after the closed burst to fire", got, err)
	}
	if !slices.Contains(calls(tx.log), "StartBurst") {
		t.Errorf("log %v: want the burst recorded", tx.log)
	}
}

func TestDetectRequires(t *testing.T) {
	tx := newFake()
	d := detection(t0, 3)
	d.Requires = "other"
	e := NewEngine(fakeStore{tx}, nil, vigil.DefaultCorrelationPolicy())
	if got, _ := e.Detect(t.Context(), "org", []*vigil.Detection{d}); len(got) != 0 {
		t.Fatalf("fired %+v without the required burst", got)
	}
	if tx.log[0] != "LockDetections [{bf k} {other k}]" {
		t.Errorf("first call %q, want both keys locked", tx.log[0])
	}
	// A required burst that began after the signals does not count.
	req := DetectionKey{"other", "k"}
	tx.bursts[req] = []Burst{{DetectionKey: req, First: nanos(t0.Add(time.Hour)), Last: nanos(t0.Add(time.Hour))}}
	d = detection(t0.Add(3*time.Second), 3)
	d.Requires = "other"
	if got, _ := e.Detect(t.Context(), "org", []*vigil.Detection{d}); len(got) != 0 {
		t.Fatalf("fired %+v on a required burst begun later", got)
	}
	tx.bursts[req] = []Burst{{DetectionKey: req, First: nanos(t0.Add(-time.Minute)), Last: nanos(t0)}}
	d = detection(t0.Add(6*time.Second), 3)
	d.Requires = "other"
	if got, _ := e.Detect(t.Context(), "org", []*vigil.Detection{d}); len(got) != 1 {
		t.Fatalf("fired %+v, want one observation while the required burst is under way", got)
	}
}

// TestRanks: the engine ranks every observation it writes by its
// severity and specificity (vigil.TitleRank), which the stores keep to
// name and rate the incident: a recorded observation with the title it
// was given, a fired burst with its finding's title and specificity, a
// grown one by the severity it keeps, an updated one by its new severity.
func TestRanks(t *testing.T) {
	tx := newFake()
	e := NewEngine(fakeStore{tx}, nil, vigil.DefaultCorrelationPolicy())
	o := &vigil.Observation{ID: "o", Severity: vigil.SeverityLow, Specificity: vigil.SpecificityAnalyst, CreatedAt: t0, UpdatedAt: t0}
	if err := e.Record(t.Context(), "org", o, "analyst's"); err != nil {
		t.Fatal(err)
	}
	if o.Title != "analyst's" || tx.ranks[0] != vigil.TitleRank(vigil.SeverityLow, vigil.SpecificityAnalyst) {
		t.Errorf("recorded: title %q rank %d", o.Title, tx.ranks[0])
	}

	tx = newFake()
	e = NewEngine(fakeStore{tx}, nil, vigil.DefaultCorrelationPolicy())
	d := detection(t0, 3)
	d.Describe = func(key string, w vigil.WindowState) vigil.Finding {
		return vigil.Finding{Type: "t", Severity: vigil.SeverityHigh, Title: "sig " + key, Specificity: vigil.SpecificitySignature}
	}
	if _, err := e.Detect(t.Context(), "org", []*vigil.Detection{d}); err != nil {
		t.Fatal(err)
	}
	if len(tx.inserted) != 1 || tx.inserted[0].Title != "sig k" || tx.inserted[0].Specificity != vigil.SpecificitySignature ||
		tx.ranks[0] != vigil.TitleRank(vigil.SeverityHigh, vigil.SpecificitySignature) {
		t.Fatalf("fired: %+v ranks %v", tx.inserted, tx.ranks)
	}

	tx = newFake()
	k := DetectionKey{"bf", "k"}
	tx.bursts[k] = []Burst{{DetectionKey: k, ObservationID: "b", Last: nanos(t0), Open: true, Severity: vigil.SeverityCritical, Signals: 3}}
	e = NewEngine(fakeStore{tx}, nil, vigil.DefaultCorrelationPolicy())
	if _, err := e.Detect(t.Context(), "org", []*vigil.Detection{d}); err != nil {
		t.Fatal(err)
	}
	if want := vigil.TitleRank(vigil.SeverityCritical, vigil.SpecificitySignature); len(tx.ranks) != 1 || tx.ranks[0] != want {
		t.Errorf("grown: ranks %v, want [%d] (the severity it keeps)", tx.ranks, want)
	}

	tx = newFake()
	tx.locked = &vigil.Observation{ID: "o", Severity: vigil.SeverityLow, Specificity: vigil.SpecificityIndicator, IncidentID: "i"}
	e = NewEngine(fakeStore{tx}, nil, vigil.DefaultCorrelationPolicy())
	crit := vigil.SeverityCritical
	if _, err := e.Update(t.Context(), "org", "o", vigil.ObservationUpdate{Severity: &crit}, t0); err != nil {
		t.Fatal(err)
	}
	if want := vigil.TitleRank(vigil.SeverityCritical, vigil.SpecificityIndicator); len(tx.ranks) != 1 || tx.ranks[0] != want ||
		!slices.Contains(tx.log, "RebuildIncident i") {
		t.Errorf("updated: ranks %v, log %v; want [%d] and the incident rebuilt", tx.ranks, tx.log, want)
	}
}

func TestTitleRankOrder(t *testing.T) {
	// Severity first; within one severity, specificity.
	order := []int{
		vigil.TitleRank(vigil.SeverityLow, vigil.SpecificityEngineEvent),
		vigil.TitleRank(vigil.SeverityLow, vigil.SpecificityAnalyst),
		vigil.TitleRank(vigil.SeverityMedium, vigil.SpecificityEngineEvent),
		vigil.TitleRank(vigil.SeverityMedium, vigil.SpecificityBehavior),
		vigil.TitleRank(vigil.SeverityMedium, vigil.SpecificitySignature),
		vigil.TitleRank(vigil.SeverityMedium, vigil.SpecificityIndicator),
		vigil.TitleRank(vigil.SeverityHigh, vigil.SpecificityEngineEvent),
		vigil.TitleRank(vigil.SeverityCritical, -100000),
	}
	for i := 1; i < len(order); i++ {
		if order[i] <= order[i-1] {
			t.Errorf("ranks %v, want strictly ascending", order)
			break
		}
	}
}
