package correlate

import (
	"context"
	"time"

	"github.com/vigil-soc/vigil"
)

// Roll-ups (docs/detections.md, "Roll-ups and entity risk"): when one
// detection fires for many distinct sources within a window, at a
// severity the org rolls up, the observations of those sources make one
// incident of that detection and window — "Suricata: ET SCAN Potential
// SSH Scan from 4,812 sources" — instead of one each. Below the org's
// threshold nothing changes: each source opens its incident as always;
// when the threshold is crossed, the roll-up opens and takes in those
// incidents that hold nothing but findings of the detection. A roll-up's
// sources are context nodes of it, never keys: it joins nothing by node
// sharing, so it never pulls unrelated observations in, and never counts
// towards a hub.

// source is what recorded an observation that a detector fired: the
// detector and its finding, and the nodes the transaction created for it
// (fresh: no incident can name them yet). An observation recorded through
// the API has none, and never rolls up.
type source struct {
	detector string
	finding  vigil.Finding
	fresh    map[string]bool
}

// allFresh reports whether every key node of keys is one the transaction
// created for the observation: it can match no open incident and no hub.
func (s *source) allFresh(keys map[string]bool) bool {
	if s == nil || len(keys) == 0 {
		return false
	}
	for k := range keys {
		if !s.fresh[k] {
			return false
		}
	}
	return true
}

// name is what fired, as a roll-up is titled: the finding's Rollup, else
// the detector's name.
func (s *source) name() string {
	if s.finding.Rollup != "" {
		return s.finding.Rollup
	}
	return s.detector
}

// detection is what rolls up together and what counts as one detection
// of an entity: the detector and its roll-up name.
func (s *source) detection() string {
	if s == nil {
		return analystDetection
	}
	return s.detector + ": " + s.name()
}

// analystDetection is the detection of an observation recorded through
// the API.
const analystDetection = "analyst"

// rollsUp reports whether o, fired by src with keys (after the hubs were
// dropped) and matching no open incident, may roll up under pol: a
// detector's finding of a severity the org rolls up, naming one source.
func rollsUp(o *vigil.Observation, keys map[string]bool, src *source, pol vigil.RollupPolicy) bool {
	return src != nil && len(keys) == 1 && pol.RollsUp(o.Severity)
}

// preplace sets o.IncidentID to the open roll-up that o, fired by src
// with keys the transaction created, is sure to join: o names no
// incident's key and no earlier risk (its risk is its own), so when it
// rolls up and its own risk sets it apart from nothing, the roll-up of
// its detection open now takes it. The store then writes o into it at
// once (InsertObservation) instead of moving it there when it joins.
func preplace(ctx context.Context, tx Tx, rb *rollupBatch, o *vigil.Observation, keys map[string]bool, src *source, pol vigil.RollupPolicy) error {
	if !rollsUp(o, keys, src, pol) || pol.Risky(vigil.RiskPoints(o.Type, o.Severity), 1) {
		return nil
	}
	p, err := rb.open(ctx, tx, src.detection(), o.CreatedAt)
	if err != nil || p == nil {
		return err
	}
	o.IncidentID = p.r.IncidentID
	return nil
}

// rollUp puts o, of its only key node key, into the open roll-up of its
// detection; when there is none, and the detection has fired for at
// least the org's threshold of distinct sources within its window, it
// opens one first. It reports false when o is to open its own incident.
func (e *Engine) rollUp(ctx context.Context, tx Tx, rb *rollupBatch, o *vigil.Observation, key string, src *source, b by, pol vigil.RollupPolicy) (bool, error) {
	det, now := src.detection(), o.CreatedAt
	p, err := rb.open(ctx, tx, det, now)
	if err != nil {
		return false, err
	}
	if p == nil {
		// The risk entries of the detection (o's among them) tell how
		// many distinct sources it fired for.
		n, oldest, err := tx.DetectionSources(ctx, det, now.Add(-pol.Window))
		if err != nil || n < pol.Threshold {
			return false, err
		}
		if p, err = e.openRollup(ctx, tx, rb, o, src, oldest, b, pol); err != nil {
			return false, err
		}
	}
	return true, joinRollup(ctx, tx, p, o, key, b)
}

// openRollup opens the roll-up of src's detection, its window starting
// at oldest (the detection's oldest finding within the window), and takes
// in what the findings of the detection opened below the threshold
// (takeIn).
func (e *Engine) openRollup(ctx context.Context, tx Tx, rb *rollupBatch, o *vigil.Observation, src *source, oldest time.Time, b by, pol vigil.RollupPolicy) (*pendingRollup, error) {
	now := o.CreatedAt
	r := &Rollup{IncidentID: vigil.NewID(), Detection: src.detection(), Detector: src.detector, Name: src.name(),
		WindowStart: oldest, WindowEnd: oldest.Add(pol.Window)}
	if !r.WindowEnd.After(now) {
		r.WindowEnd = now.Add(pol.Window)
	}
	r.Title = vigil.RollupTitle(r.Name, 0)
	if err := tx.CreateIncident(ctx, NewIncident{ID: r.IncidentID, Title: r.Title, Severity: o.Severity, At: now}); err != nil {
		return nil, err
	}
	if err := tx.CreateRollup(ctx, *r); err != nil {
		return nil, err
	}
	if err := tx.RecordEvent(ctx, b.event(vigil.EventCreated, r.IncidentID, now, vigil.EventDetail{ObservationID: o.ID})); err != nil {
		return nil, err
	}
	p := rb.keep(r.Detection, r)
	return p, e.takeIn(ctx, tx, rb, p, b, pol, now)
}

// takeIn moves into roll-up p the findings of its detection that opened
// incidents of their own below the threshold, within its window: from
// each open, new incident that holds nothing but findings that roll up
// (of one source, not risky, at a severity the org rolls up), its
// findings of p's detection join p, and those of other detections join
// their open roll-ups. An incident left empty points to the roll-up that
// emptied it (merged); one left with findings of a detection that has no
// roll-up yet keeps them, for that roll-up to take when it forms.
func (e *Engine) takeIn(ctx context.Context, tx Tx, rb *rollupBatch, p *pendingRollup, b by, pol vigil.RollupPolicy, now time.Time) error {
	cands, err := tx.RollupCandidates(ctx, p.r.Detection, now.Add(-pol.Window))
	if err != nil {
		return err
	}
	for len(cands) > 0 {
		n := 1
		for n < len(cands) && cands[n].IncidentID == cands[0].IncidentID {
			n++
		}
		inc := cands[:n]
		cands = cands[n:]
		node, ok := singleSource(inc, pol)
		if !ok {
			continue
		}
		points, dets, err := tx.Risk(ctx, node, now.Add(-vigil.RiskWindow))
		if err != nil {
			return err
		}
		if pol.Risky(points, len(dets)) {
			continue
		}
		if err := takeIncident(ctx, tx, rb, p, inc, node, b, now); err != nil {
			return err
		}
	}
	return nil
}

// singleSource returns the one key node of the observations of an
// incident when every one of them rolls up under pol (a detector's
// finding of a severity the org rolls up, of that node alone).
func singleSource(inc []Candidacy, pol vigil.RollupPolicy) (string, bool) {
	node := inc[0].NodeID
	seen := map[string]bool{}
	for _, c := range inc {
		if seen[c.ObservationID] || c.NodeID != node || node == "" || c.Detection == analystDetection || !pol.RollsUp(c.Severity) {
			return "", false // an observation with two keys, or one that does not roll up
		}
		seen[c.ObservationID] = true
	}
	return node, true
}

// takeIncident moves the findings of one incident (inc, of source node)
// into roll-up p, or into the open roll-ups of their other detections,
// and records each move in the histories.
func takeIncident(ctx context.Context, tx Tx, rb *rollupBatch, p *pendingRollup, inc []Candidacy, node string, b by, now time.Time) error {
	from := inc[0].IncidentID
	byDet := map[string][]string{}
	var order []string
	for _, c := range inc {
		if _, ok := byDet[c.Detection]; !ok {
			order = append(order, c.Detection)
		}
		byDet[c.Detection] = append(byDet[c.Detection], c.ObservationID)
	}
	for _, det := range order {
		into := p
		if det != p.r.Detection {
			var err error
			if into, err = rb.open(ctx, tx, det, now); err != nil {
				return err
			}
			if into == nil {
				continue // taken in when its own roll-up forms
			}
		}
		isNew, count, emptied, err := tx.TakeIntoRollup(ctx, byDet[det], node, from, into.r.IncidentID, now)
		if err != nil {
			return err
		}
		if isNew {
			into.r.Sources++
		}
		into.r.Count += count
		into.dirty = true // retitled
		if !emptied {
			rb.touched = append(rb.touched, from)
		}
		if err := recordTaken(ctx, tx, b, byDet[det], from, into.r.IncidentID, emptied, now); err != nil {
			return err
		}
	}
	return nil
}

// recordTaken records in both histories that observations obs moved from
// incident from into roll-up into: as a merge when they were all from
// had left, else each as a move.
func recordTaken(ctx context.Context, tx Tx, b by, obs []string, from, into string, emptied bool, now time.Time) error {
	if emptied {
		if err := tx.RecordEvent(ctx, b.event(vigil.EventMerged, from, now, vigil.EventDetail{MergedInto: into})); err != nil {
			return err
		}
		return tx.RecordEvent(ctx, b.event(vigil.EventMerged, into, now, vigil.EventDetail{MergedFrom: from}))
	}
	for _, id := range obs {
		if err := tx.RecordEvent(ctx, b.event(vigil.EventObservationMoved, from, now, vigil.EventDetail{ObservationID: id, MovedTo: into})); err != nil {
			return err
		}
		if err := tx.RecordEvent(ctx, b.event(vigil.EventObservationMoved, into, now, vigil.EventDetail{ObservationID: id, MovedFrom: from})); err != nil {
			return err
		}
	}
	return nil
}

// joinRollup puts o, of source key, into roll-up p: its nodes join as
// context, key's count grows by o's artifacts new to it; the roll-up's counts,
// title and headline follow when the batch is flushed.
func joinRollup(ctx context.Context, tx Tx, p *pendingRollup, o *vigil.Observation, key string, b by) error {
	now := o.CreatedAt
	nodes, artifacts, err := tx.JoinRollup(ctx, p.r.IncidentID, o)
	if err != nil {
		return err
	}
	isNew, err := tx.AddRollupSource(ctx, p.r.IncidentID, key, artifacts, now)
	if err != nil {
		return err
	}
	if isNew {
		p.r.Sources++
		p.sources++
	}
	p.r.Count += artifacts
	p.count += artifacts
	p.nodes += nodes
	p.artifacts += artifacts
	p.grew(o.ID, b, now)
	o.IncidentID = p.r.IncidentID
	o.KeyNodeIDs = []string{key}
	return nil
}

// growRollup counts what a growing burst of source key ("": none) added
// to roll-up p: nodes and artifacts new to its incident, the artifacts on
// key.
func growRollup(ctx context.Context, tx Tx, p *pendingRollup, observation, key string, nodes, artifacts int, b by, now time.Time) error {
	if key != "" {
		if _, err := tx.AddRollupSource(ctx, p.r.IncidentID, key, artifacts, now); err != nil {
			return err
		}
	}
	p.r.Count += artifacts
	p.count += artifacts
	p.nodes += nodes
	p.artifacts += artifacts
	p.grew(observation, b, now)
	return nil
}
