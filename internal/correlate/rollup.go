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
// detector and its finding. An observation recorded through the API has
// none, and never rolls up.
type source struct {
	detector string
	finding  vigil.Finding
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

// rollUp puts o, of its only key node key, into the open roll-up of its
// detection; when there is none, and the detection has fired for at
// least the org's threshold of distinct sources within its window, it
// opens one first. It reports false when o is to open its own incident.
func (e *Engine) rollUp(ctx context.Context, tx Tx, o *vigil.Observation, key string, src *source, b by, pol vigil.RollupPolicy) (bool, error) {
	det, now := src.detection(), o.CreatedAt
	if err := tx.LockRollup(ctx, det); err != nil {
		return false, err
	}
	r, err := tx.OpenRollup(ctx, det, now)
	if err != nil {
		return false, err
	}
	if r == nil {
		// The risk entries of the detection (o's among them) tell how
		// many distinct sources it fired for.
		n, oldest, err := tx.DetectionSources(ctx, det, now.Add(-pol.Window))
		if err != nil || n < pol.Threshold {
			return false, err
		}
		if r, err = e.openRollup(ctx, tx, o, src, oldest, b, pol); err != nil {
			return false, err
		}
	}
	return true, e.joinRollup(ctx, tx, r, o, key, b)
}

// openRollup opens the roll-up of src's detection, its window starting
// at oldest (the detection's oldest finding within the window), and takes
// in the incidents that hold nothing but findings of it.
func (e *Engine) openRollup(ctx context.Context, tx Tx, o *vigil.Observation, src *source, oldest time.Time, b by, pol vigil.RollupPolicy) (*Rollup, error) {
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
	absorb, err := tx.Absorbable(ctx, r.Detection, now.Add(-pol.Window))
	if err != nil {
		return nil, err
	}
	for _, id := range absorb {
		n, count, err := tx.AbsorbIntoRollup(ctx, id, r.IncidentID, now)
		if err != nil {
			return nil, err
		}
		r.Sources += n
		r.Count += count
		if err := tx.RecordEvent(ctx, b.event(vigil.EventMerged, id, now, vigil.EventDetail{MergedInto: r.IncidentID})); err != nil {
			return nil, err
		}
		if err := tx.RecordEvent(ctx, b.event(vigil.EventMerged, r.IncidentID, now, vigil.EventDetail{MergedFrom: id})); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// joinRollup puts o, of source key, into roll-up r: its nodes join as
// context, key's count grows by o's artifacts, and the title says how
// many sources the roll-up holds.
func (e *Engine) joinRollup(ctx context.Context, tx Tx, r *Rollup, o *vigil.Observation, key string, b by) error {
	now := o.CreatedAt
	count := len(o.ArtifactIDs)
	isNew, err := tx.AddRollupSource(ctx, r.IncidentID, key, count, now)
	if err != nil {
		return err
	}
	added := 0
	if isNew {
		added = 1
	}
	r.Sources += added
	r.Count += count
	r.Title = vigil.RollupTitle(r.Name, r.Sources)
	if err := tx.UpdateRollup(ctx, r.IncidentID, added, count, r.Title); err != nil {
		return err
	}
	if err := tx.JoinIncident(ctx, r.IncidentID, o, nil, now); err != nil {
		return err
	}
	if err := tx.RecordEvent(ctx, b.event(vigil.EventGrew, r.IncidentID, now, vigil.EventDetail{ObservationID: o.ID})); err != nil {
		return err
	}
	o.IncidentID = r.IncidentID
	o.KeyNodeIDs = []string{key}
	return nil
}

// growRollup counts what a growing burst of source key added to roll-up
// incident: artifacts artifacts.
func growRollup(ctx context.Context, tx Tx, incident, key string, artifacts int, now time.Time) error {
	if _, err := tx.AddRollupSource(ctx, incident, key, artifacts, now); err != nil {
		return err
	}
	return tx.UpdateRollup(ctx, incident, 0, artifacts, "")
}

// retitleRollup sets the title of incident, when it is a roll-up, after
// its sources were counted again (an observation of it edited or
// deleted).
func retitleRollup(ctx context.Context, tx Tx, incident string) error {
	r, err := tx.RollupOf(ctx, incident)
	if err != nil || r == nil {
		return err
	}
	return tx.UpdateRollup(ctx, incident, 0, 0, vigil.RollupTitle(r.Name, r.Sources))
}
