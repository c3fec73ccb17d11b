package correlate

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/vigil-soc/vigil"
)

// Recorded is an observation that a detection recorded or grew, and the
// incident it is in.
type Recorded struct {
	ObservationID string
	IncidentID    string
}

// Detect evaluates detections of org in one transaction and correlates
// the observations they record or grow, then classifies their incidents.
// For each detection it records the signals (once per artifact, so that a
// redelivered artifact counts once); when an earlier burst of the same
// key is still active (its last signal within Span, its incident open),
// that burst's observation grows; else, when a window of Span meets
// d's thresholds (Detection.Met: counts are sums of the signals'
// weights, so a recap line counts nothing), the burst fires: one
// observation with every signal of the burst so far, correlated as Record
// does. A detection that Requires another detector fires only while a
// burst of that detector for its key is under way. Detect returns the
// observations recorded or grown, each with the incident it is in once
// the transaction commits.
func (e *Engine) Detect(ctx context.Context, org string, ds []*vigil.Detection) ([]Recorded, error) {
	var r routed
	if e.tally != nil {
		r = e.tally.route(org, ds, time.Now())
		if ds = r.ds; len(ds) == 0 {
			return nil, nil
		}
	}
	locks := detectionKeys(ds)
	pol, err := e.policyOf(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("detect: %w", err)
	}
	var out []Recorded
	var touched []string
	err = e.store.Correlate(ctx, org, func(stx Tx) error {
		out = out[:0]
		rb := newRollupBatch()
		// The batch's growths ask about the same key nodes again and
		// again.
		tx := &hubCache{Tx: stx}
		if err := tx.LockDetections(ctx, locks); err != nil {
			return err
		}
		var spilled []*vigil.Detection
		for _, d := range ds {
			if r.spilled[d] {
				spilled = append(spilled, d)
				continue
			}
			// A key the store holds nothing of that counts: its signals
			// and burst are read from d, not the store.
			fresh := r.fresh[d] && e.tally.alone(org, d)
			id, err := e.detect(ctx, tx, rb, d, pol, fresh)
			if err != nil {
				return err
			}
			if id != "" {
				out = append(out, Recorded{ObservationID: id})
			}
		}
		if err := recordSpilled(ctx, stx, spilled); err != nil {
			return err
		}
		if err := rb.flush(ctx, tx, e.now()); err != nil {
			return err
		}
		touched = rb.touched
		if len(out) == 0 {
			return nil
		}
		// The incidents as they are after every merge of the batch.
		ids := make([]string, len(out))
		for i, d := range out {
			ids[i] = d.ObservationID
		}
		in, err := tx.ObservationIncidents(ctx, ids)
		if err != nil {
			return err
		}
		for i := range out {
			out[i].IncidentID = in[out[i].ObservationID]
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("detect: %w", err)
	}
	if e.tally != nil {
		e.tally.committed(r)
	}
	incidents := make([]string, len(out), len(out)+len(touched))
	for i, d := range out {
		incidents[i] = d.IncidentID
	}
	// The rules run over the incidents the observations joined, and
	// those the batch changed otherwise (a roll-up a source left).
	incidents = append(incidents, touched...)
	return out, e.classifyIncidents(ctx, org, incidents)
}

// detectionKeys returns the (detector, key) pairs that ds read or write:
// their own and those they require.
func detectionKeys(ds []*vigil.Detection) []DetectionKey {
	var out []DetectionKey
	for _, d := range ds {
		out = append(out, DetectionKey{d.Detector, d.Key})
		if d.Requires != "" {
			out = append(out, DetectionKey{d.Requires, d.Key})
		}
	}
	slices.SortFunc(out, func(a, b DetectionKey) int {
		if c := cmp.Compare(a.Detector, b.Detector); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	return slices.Compact(out)
}

// detect evaluates one detection and returns the observation it recorded
// or grew, if any. newKey says the store holds no signal and no burst of
// d's key that counts with d's signals (routed.fresh): the signals it
// records are all the burst can read, and are read from d.
func (e *Engine) detect(ctx context.Context, tx Tx, rb *rollupBatch, d *vigil.Detection, pol vigil.RollupPolicy, newKey bool) (string, error) {
	k := DetectionKey{d.Detector, d.Key}
	fresh, err := record(ctx, tx, k, d.Signals)
	if err != nil || len(fresh) == 0 {
		return "", err // nothing new: a redelivery
	}
	var recorded *recordedSignals
	if newKey && len(fresh) < maxBurstScan {
		recorded = newRecordedSignals(k, fresh)
	}
	oldest, newest := fresh[0].At, fresh[0].At
	for _, sg := range fresh[1:] {
		oldest, newest = minTime(oldest, sg.At), maxTime(newest, sg.At)
	}
	since := newest.Add(-d.Span)
	if d.Requires != "" {
		// A success logged before the brute force began is no success
		// after it: the required burst must have begun by newest.
		req, err := tx.Bursts(ctx, DetectionKey{d.Requires, d.Key}, nanos(since))
		if err != nil {
			return "", err
		}
		if !slices.ContainsFunc(req, func(b Burst) bool { return b.First <= nanos(newest) }) {
			return "", nil
		}
	}
	// Every burst that may matter: those active at since, and those that
	// ended within Span of the oldest fresh signal, whose signals a new
	// burst must not count again.
	floor := nanos(oldest.Add(-d.Span))
	var bursts []Burst
	if recorded == nil {
		if bursts, err = tx.Bursts(ctx, k, floor); err != nil {
			return "", err
		}
	}
	now := e.now()
	if b := activeBurst(bursts, nanos(since)); b != nil {
		return b.ObservationID, e.grow(ctx, tx, rb, d, b, fresh, since, newest, now, pol)
	}
	// Signals of an earlier burst (its incident closed since) stay out:
	// the next burst counts only what came after it.
	for _, b := range bursts {
		floor = max(floor, b.Last+1)
	}
	var sigs []vigil.Signal
	if recorded != nil {
		sigs = recorded.from(floor)
	} else if sigs, err = tx.SignalsFrom(ctx, k, floor, maxBurstScan); err != nil {
		return "", err
	}
	from, to, ok := findBurst(sigs, d.Span, d.Met, d.Order, oldest, newest)
	if !ok {
		return "", nil
	}
	var st vigil.WindowState
	if len(sigs) < maxBurstScan {
		// sigs holds every signal from floor on, so every signal of the
		// burst: no need to read them again.
		st = summarize(slices.DeleteFunc(sigs, func(sg vigil.Signal) bool { return nanos(sg.At) < from || nanos(sg.At) > to }))
	} else {
		newestSigs, err := tx.NewestSignals(ctx, k, from, to, maxBurstScan)
		if err != nil {
			return "", err
		}
		st = summarize(newestSigs)
	}
	return e.fire(ctx, tx, rb, d, st, from, to, now, pol, recorded)
}

// record records the signals of k, the lines of a unit counting once,
// and returns those not recorded before.
func record(ctx context.Context, tx Tx, k DetectionKey, sigs []vigil.Signal) ([]vigil.Signal, error) {
	batch, err := countUnitsOnce(ctx, tx, k, sigs)
	if err != nil {
		return nil, err
	}
	return tx.RecordSignals(ctx, k, batch)
}

// recordSpilled records the signals of the detections the Tally spilled
// (routed.spilled: recorded, not evaluated), all at once when tx is a
// SpillRecorder, except those of a key whose signals name units (counted
// once with what the store holds: record).
func recordSpilled(ctx context.Context, tx Tx, ds []*vigil.Detection) error {
	sr, ok := tx.(SpillRecorder)
	var batch []KeySignals
	for _, d := range ds {
		k := DetectionKey{d.Detector, d.Key}
		if ok && !slices.ContainsFunc(d.Signals, func(sg vigil.Signal) bool { return sg.Unit != "" }) {
			batch = append(batch, KeySignals{k, d.Signals})
			continue
		}
		if _, err := record(ctx, tx, k, d.Signals); err != nil {
			return err
		}
	}
	if len(batch) == 0 {
		return nil
	}
	return sr.RecordSpilled(ctx, batch)
}

// unitSpan is how far apart the lines of one unit may be: BIND writes a
// query's lines within milliseconds, and a client that asks again much
// later from the same port (an old resolver with a fixed source port)
// asks again.
const unitSpan = time.Minute

// countUnitsOnce returns sigs with every signal of a unit that counts
// already — recorded for k within unitSpan of it, or earlier in sigs — made
// evidence, so that the lines of one event (a query BIND logs twice) count
// once. A redelivered line is marked too, and then not recorded again.
func countUnitsOnce(ctx context.Context, tx Tx, k DetectionKey, sigs []vigil.Signal) ([]vigil.Signal, error) {
	var units []string
	var from, to time.Time
	for _, sg := range sigs {
		if sg.Unit == "" || sg.Evidence {
			continue
		}
		if len(units) == 0 {
			from, to = sg.At, sg.At
		}
		units = append(units, sg.Unit)
		from, to = minTime(from, sg.At), maxTime(to, sg.At)
	}
	if len(units) == 0 {
		return sigs, nil
	}
	recorded, err := tx.RecordedUnits(ctx, k, units, nanos(from.Add(-unitSpan)), nanos(to.Add(unitSpan)))
	if err != nil {
		return nil, err
	}
	// The time each unit last counted at (zero: recorded before, near
	// enough to every signal of the batch that may share it).
	counted := make(map[string]time.Time, len(units))
	for _, u := range recorded {
		counted[u] = time.Time{}
	}
	out := slices.Clone(sigs)
	for i, sg := range out {
		if sg.Unit == "" || sg.Evidence {
			continue
		}
		if at, ok := counted[sg.Unit]; ok && (at.IsZero() || absDur(sg.At.Sub(at)) <= unitSpan) {
			out[i].Evidence = true
			continue
		}
		counted[sg.Unit] = sg.At
	}
	return out, nil
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// activeBurst returns the burst that a detection grows: the one with the
// newest last signal at or after since whose incident is still open.
func activeBurst(bursts []Burst, since int64) *Burst {
	var best *Burst
	for i := range bursts {
		b := &bursts[i]
		if !b.Open || b.Last < since {
			continue
		}
		if best == nil || b.Last > best.Last || b.Last == best.Last && b.ObservationID > best.ObservationID {
			best = b
		}
	}
	return best
}

// fire records the observation of a burst that fired over [from, to],
// with every signal in it so far, and correlates it.
// recorded, when not nil, holds every signal of the key the store has.
func (e *Engine) fire(ctx context.Context, tx Tx, rb *rollupBatch, d *vigil.Detection, st vigil.WindowState, from, to int64, now time.Time, pol vigil.RollupPolicy, recorded *recordedSignals) (string, error) {
	k := DetectionKey{d.Detector, d.Key}
	var window []vigil.Signal
	if recorded != nil {
		window = recorded.window(from, to, vigil.MaxObservationArtifacts)
	} else {
		var err error
		if window, err = tx.WindowSignals(ctx, k, from, to, vigil.MaxObservationArtifacts); err != nil {
			return "", err
		}
	}
	refs, artifactIDs := mergeSignals(window)
	st.Nodes = refs
	f := d.Describe(d.Key, st)
	o := &vigil.Observation{ID: vigil.NewID(), Type: f.Type, Description: f.Description, Severity: f.Severity,
		ArtifactIDs: artifactIDs, CreatedAt: now, UpdatedAt: now, Title: f.Title, Specificity: f.Specificity}
	nodes, err := tx.UpsertNodes(ctx, refs, now)
	if err != nil {
		return "", err
	}
	// Each node once: two refs may name one (a name joined to an account
	// by its SID).
	keys, fresh := map[string]bool{}, map[string]bool{}
	o.NodeIDs = vigil.AddNodes(nil, keys, nodes, refs)
	for _, n := range nodes {
		if !n.CreatedAt.IsZero() {
			fresh[n.ID] = true
		}
	}
	src := &source{detector: d.Detector, finding: f, fresh: fresh}
	// It may join or merge incidents that the batch grew: they are
	// written first.
	if err := rb.flushGrowths(ctx, tx); err != nil {
		return "", err
	}
	if err := e.correlate(ctx, tx, rb, o, keys, f.Title, by{actor: vigil.ActorSystem, via: d.Detector}, src, pol); err != nil {
		return "", err
	}
	return o.ID, tx.StartBurst(ctx, Burst{DetectionKey: k, ObservationID: o.ID, First: from, Last: to, Signals: st.Count})
}

// grow adds fresh signals to active burst b: their artifacts and nodes
// join its observation and incident (a key node that is a hub joins as
// context only, and every node of a roll-up is context, its source's
// count growing by the artifacts), and the observation is described
// again. Its members are those of the last Span (at most maxGrowScan
// signals); its count is the burst's running total; its severity never
// drops as it grows, and when it rises the risk it adds is counted again
// (a source that stands apart then leaves its roll-ups). An incident that
// is no roll-up takes what the batch's growths of its observations bring
// once, at the batch's end (flushGrowths): the hubs among a growth's keys
// are those of the incidents as the batch found them.
func (e *Engine) grow(ctx context.Context, tx Tx, rb *rollupBatch, d *vigil.Detection, b *Burst, fresh []vigil.Signal, since, newest, now time.Time, pol vigil.RollupPolicy) error {
	sigs, err := tx.NewestSignals(ctx, b.DetectionKey, max(b.First, nanos(since)), max(nanos(newest), b.Last), maxGrowScan)
	if err != nil {
		return err
	}
	st := summarize(sigs)
	added := 0
	for _, sg := range fresh {
		added += sg.Weight()
	}
	st.Count, st.First, st.Grown = b.Signals+added, fromNanos(b.First), true
	refs, artifactIDs := mergeSignals(fresh)
	st.Nodes = refs
	f := d.Describe(d.Key, st)
	nodes, err := tx.UpsertNodes(ctx, refs, now)
	if err != nil {
		return err
	}
	keys := map[string]bool{}
	nodeIDs := vigil.AddNodes(nil, keys, nodes, refs)
	if !b.Rollup {
		if err := e.dropHubs(ctx, tx, keys, sortedKeys(keys)); err != nil {
			return err
		}
	}
	// The key nodes join the incident: wait for any correlation on them
	// in flight, as Record does.
	if err := tx.LockKeys(ctx, sortedKeys(keys)); err != nil {
		return err
	}
	// Its title stays the one it fired with (a growing burst must not
	// rename its incident at every batch); its rank follows its severity.
	sev := vigil.MaxSeverity(b.Severity, f.Severity)
	nodesAdded, artsAdded, err := tx.GrowObservation(ctx, Growth{ObservationID: b.ObservationID, IncidentID: b.IncidentID,
		NodeIDs: nodeIDs, Keys: keys, Context: b.Rollup, ArtifactIDs: artifactIDs, Description: f.Description,
		Severity: sev, TitleRank: vigil.TitleRank(sev, f.Specificity), Now: now})
	if err != nil {
		return err
	}
	who := by{actor: vigil.ActorSystem, via: d.Detector}
	if b.Rollup {
		// Counted, refreshed and recorded once for the batch.
		p, err := rb.of(ctx, tx, b.IncidentID)
		if err != nil {
			return err
		}
		if p != nil {
			key := ""
			if len(keys) == 1 {
				key = sortedKeys(keys)[0]
			}
			if err := growRollup(ctx, tx, p, b.ObservationID, key, nodesAdded, artsAdded, who, now); err != nil {
				return err
			}
		}
	} else {
		// Added to the incident, refreshed and recorded once for the
		// batch (flushGrowths).
		rb.grew(b.IncidentID, nodeIDs, keys, artifactIDs, now, who.event(vigil.EventGrew, b.IncidentID, now, vigil.EventDetail{ObservationID: b.ObservationID}))
	}
	if vigil.SeverityRank(sev) > vigil.SeverityRank(b.Severity) && len(keys) > 0 {
		if err := rb.flushGrowths(ctx, tx); err != nil {
			return err
		}
		src := &source{detector: d.Detector, finding: f}
		if err := e.reassess(ctx, tx, rb, b, keys, src, f.Title, sev, who, pol, now); err != nil {
			return err
		}
	}
	return tx.ExtendBurst(ctx, b.DetectionKey, b.ObservationID, max(b.Last, nanos(newest)), b.Signals+added)
}

func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
