package correlate

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/vigil-soc/vigil"
)

// pendingGrowth is what the growths of a batch bring one incident that
// is no roll-up, written once (flushGrowths) instead of once a growth: a
// Sigma rule set that matches a few hundred times a batch grows tens of
// observations of the same few incidents, each naming the same host,
// account and artifacts, and each growth added them to the incident and
// refreshed it. Its "grew" events, one per growth as before, are
// recorded after it is written, all at once, each with the incident's
// artifact count as the batch leaves it.
type pendingGrowth struct {
	nodes     []string
	keys      map[string]bool
	artifacts []string
	seen      map[string]bool // nodes and artifacts in nodes or artifacts
	at        time.Time
	events    []vigil.IncidentEvent
}

// grew records that a growth of one of incident's observations brings it
// nodeIDs (keys marking key nodes) and artifactIDs at at, and ev, its
// event.
func (rb *rollupBatch) grew(incident string, nodeIDs []string, keys map[string]bool, artifactIDs []string, at time.Time, ev vigil.IncidentEvent) {
	if rb.growing == nil {
		rb.growing = map[string]*pendingGrowth{}
	}
	p := rb.growing[incident]
	if p == nil {
		p = &pendingGrowth{keys: map[string]bool{}, seen: map[string]bool{}}
		rb.growing[incident] = p
	}
	for _, id := range nodeIDs {
		if keys[id] {
			p.keys[id] = true
		}
		if !p.seen["n"+id] {
			p.seen["n"+id] = true
			p.nodes = append(p.nodes, id)
		}
	}
	for _, id := range artifactIDs {
		if !p.seen["a"+id] {
			p.seen["a"+id] = true
			p.artifacts = append(p.artifacts, id)
		}
	}
	p.at = maxTime(p.at, at)
	p.events = append(p.events, ev)
}

// flushGrowths writes what the batch's growths brought each incident, in
// the order of the incidents' ids, and then their events. Anything that
// reads or moves an incident's nodes, artifacts or counts otherwise (a
// new observation joining or merging incidents, a rise in risk) runs
// after it: only growths wait for the batch's end.
func (rb *rollupBatch) flushGrowths(ctx context.Context, tx Tx) error {
	for _, id := range slices.Sorted(maps.Keys(rb.growing)) {
		p := rb.growing[id]
		if err := tx.GrowIncident(ctx, IncidentGrowth{IncidentID: id, NodeIDs: p.nodes, Keys: p.keys, ArtifactIDs: p.artifacts, At: p.at}); err != nil {
			return err
		}
		if err := tx.RecordEvents(ctx, p.events); err != nil {
			return err
		}
		delete(rb.growing, id)
	}
	return nil
}
