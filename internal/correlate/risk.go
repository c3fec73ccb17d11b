package correlate

import (
	"context"
	"slices"
	"time"

	"github.com/vigil-soc/vigil"
)

// Entity risk (docs/detections.md, "Roll-ups and entity risk"): every
// observation adds risk to each of its key nodes (vigil.RiskPoints: by
// severity, and by what its detection found), kept for 24 hours. A node
// whose risk within 24 hours crosses the org's threshold, or that
// distinct detections enough saw, stands apart: its observations never
// roll up, and those already in a roll-up leave it for the incident of
// its newest observation — the scanner that also brute-forces SSH, logs
// in, trips a high alert or matches threat intelligence is an incident of
// its own at once, with everything it did.

// risky is a key node that stands apart, with what made it so.
type risky struct {
	node       string
	points     int
	detections []string
}

// addRisk records what o, found by src (nil: an analyst), adds to the risk
// of each of its key nodes, and returns those that stand apart under pol.
func addRisk(ctx context.Context, tx Tx, o *vigil.Observation, keys map[string]bool, src *source, pol vigil.RollupPolicy) ([]risky, error) {
	typ := o.Type
	if src == nil {
		typ = "" // an analyst's observation weighs its full severity
	}
	var fresh map[string]bool
	if src != nil {
		fresh = src.fresh
	}
	return recordRisk(ctx, tx, o.ID, keys, src.detection(), vigil.RiskPoints(typ, o.Severity), o.CreatedAt, pol, fresh)
}

// recordRisk records points of detection for observation obs on each of
// keys at now, and returns the keys that stand apart under pol. The risk
// of a node in fresh (created by the transaction) is this entry's alone.
func recordRisk(ctx context.Context, tx Tx, obs string, keys map[string]bool, detection string, points int, now time.Time, pol vigil.RollupPolicy, fresh map[string]bool) ([]risky, error) {
	var out []risky
	for _, k := range sortedKeys(keys) {
		if err := tx.AddRisk(ctx, RiskEntry{ObservationID: obs, NodeID: k, Detection: detection, Points: points, At: now}); err != nil {
			return nil, err
		}
		p, dets := points, []string{detection}
		if !fresh[k] {
			var err error
			if p, dets, err = tx.Risk(ctx, k, now.Add(-vigil.RiskWindow)); err != nil {
				return nil, err
			}
		}
		if pol.Risky(p, len(dets)) {
			out = append(out, risky{node: k, points: p, detections: dets})
		}
	}
	return out, nil
}

// raise takes the observations of each risky node out of the open
// roll-ups it is a source of, into incident target (which o, found by
// src, opened or joined), and records why target stands apart: when
// anything moved, or when o, of a severity that rolls up, opened target
// while its detection has an open roll-up that its risk kept it out of.
func (e *Engine) raise(ctx context.Context, tx Tx, rb *rollupBatch, o *vigil.Observation, target string, rs []risky, src *source, b by, pol vigil.RollupPolicy, opened bool) error {
	now := o.CreatedAt
	left, err := leaveRollups(ctx, tx, rb, rs, target, b, now)
	if err != nil {
		return err
	}
	if len(left) == 0 {
		if !opened || src == nil || !pol.RollsUp(o.Severity) {
			return nil
		}
		p, err := rb.open(ctx, tx, src.detection(), now)
		if err != nil || p == nil {
			return err
		}
	}
	return setRaisedBy(ctx, tx, target, rs[0], left, pol, now)
}

// leaveRollups moves the observations of each risky node out of the open
// roll-ups it is a source of into target, recording each move in both
// histories, and returns the roll-ups left.
func leaveRollups(ctx context.Context, tx Tx, rb *rollupBatch, rs []risky, target string, b by, now time.Time) ([]string, error) {
	var left []string
	for _, r := range rs {
		rollups, err := tx.RollupsOf(ctx, r.node)
		if err != nil {
			return nil, err
		}
		for _, ru := range rollups {
			if ru.IncidentID == target {
				continue
			}
			p, err := rb.of(ctx, tx, ru.IncidentID)
			if err != nil {
				return nil, err
			}
			moved, count, err := tx.LeaveRollup(ctx, ru, r.node, target, now)
			if err != nil {
				return nil, err
			}
			// The store took the source off the roll-up's counts; the
			// batch retitles it.
			if count > 0 || len(moved) > 0 {
				p.r.Sources--
			}
			p.r.Count -= count
			p.dirty = true
			for _, id := range moved {
				if err := tx.RecordEvent(ctx, b.event(vigil.EventObservationMoved, ru.IncidentID, now,
					vigil.EventDetail{ObservationID: id, MovedTo: target})); err != nil {
					return nil, err
				}
				if err := tx.RecordEvent(ctx, b.event(vigil.EventObservationMoved, target, now,
					vigil.EventDetail{ObservationID: id, MovedFrom: ru.IncidentID})); err != nil {
					return nil, err
				}
			}
			if !slices.Contains(left, ru.IncidentID) {
				left = append(left, ru.IncidentID)
			}
		}
	}
	return left, nil
}

// setRaisedBy records on incident that r's risk set it apart, leaving the
// roll-ups left.
func setRaisedBy(ctx context.Context, tx Tx, incident string, r risky, left []string, pol vigil.RollupPolicy, now time.Time) error {
	n, err := tx.Node(ctx, r.node)
	if err != nil {
		return err
	}
	reason := vigil.RaisedRisk
	if pol.RiskThreshold <= 0 || r.points < pol.RiskThreshold {
		reason = vigil.RaisedDetections
	}
	if left == nil {
		left = []string{}
	}
	return tx.SetRaisedBy(ctx, incident, vigil.RaisedBy{Reason: reason, Entity: n, Risk: r.points, RiskThreshold: pol.RiskThreshold,
		Detections: r.detections, DetectionsThreshold: pol.RiskDetections, Rollups: left, At: now})
}

// reassess records the risk a grown observation adds now that its
// severity rose, and sets its nodes apart when that made them risky: out
// of a roll-up (b.Rollup) into an incident of their own, titled title, or
// from other roll-ups into the incident it is in.
func (e *Engine) reassess(ctx context.Context, tx Tx, rb *rollupBatch, b *Burst, keys map[string]bool, src *source, title, sev string, by by, pol vigil.RollupPolicy, now time.Time) error {
	rs, err := recordRisk(ctx, tx, b.ObservationID, keys, src.detection(), vigil.RiskPoints(src.finding.Type, sev), now, pol, nil)
	if err != nil || len(rs) == 0 {
		return err
	}
	target := b.IncidentID
	if b.Rollup {
		target = vigil.NewID()
		if err := tx.CreateIncident(ctx, NewIncident{ID: target, Title: title, Severity: sev, At: now}); err != nil {
			return err
		}
		if err := tx.RecordEvent(ctx, by.event(vigil.EventCreated, target, now, vigil.EventDetail{ObservationID: b.ObservationID})); err != nil {
			return err
		}
	}
	left, err := leaveRollups(ctx, tx, rb, rs, target, by, now)
	if err != nil || len(left) == 0 {
		return err
	}
	return setRaisedBy(ctx, tx, target, rs[0], left, pol, now)
}
