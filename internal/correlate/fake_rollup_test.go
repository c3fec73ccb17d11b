package correlate

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

// The roll-up and risk state of fakeTx, in memory.

func (f *fakeTx) AddRisk(_ context.Context, r RiskEntry) error {
	f.call("AddRisk %s %s %d", r.NodeID, r.Detection, r.Points)
	for i, e := range f.risk {
		if e.ObservationID == r.ObservationID && e.NodeID == r.NodeID {
			f.risk[i].Points = max(e.Points, r.Points)
			return nil
		}
	}
	f.risk = append(f.risk, r)
	return nil
}

func (f *fakeTx) Risk(_ context.Context, node string, since time.Time) (int, []string, error) {
	f.call("Risk %s", node)
	points, dets := 0, []string{}
	for _, e := range f.risk {
		if e.NodeID == node && !e.At.Before(since) {
			points += e.Points
			if !slices.Contains(dets, e.Detection) {
				dets = append(dets, e.Detection)
			}
		}
	}
	slices.Sort(dets)
	return points, dets, nil
}

func (f *fakeTx) DetectionSources(_ context.Context, detection string, since time.Time) (int, time.Time, error) {
	f.call("DetectionSources %s", detection)
	var nodes []string
	var oldest time.Time
	for _, e := range f.risk {
		if e.Detection == detection && !e.At.Before(since) {
			if !slices.Contains(nodes, e.NodeID) {
				nodes = append(nodes, e.NodeID)
			}
			if oldest.IsZero() || e.At.Before(oldest) {
				oldest = e.At
			}
		}
	}
	return len(nodes), oldest, nil
}

func (f *fakeTx) LockRollup(_ context.Context, detection string) error {
	f.call("LockRollup %s", detection)
	return nil
}

func (f *fakeTx) OpenRollup(_ context.Context, detection string, at time.Time) (*Rollup, error) {
	f.call("OpenRollup %s", detection)
	for _, r := range f.rollups {
		if r.Detection == detection && at.Before(r.WindowEnd) {
			c := *r
			return &c, nil
		}
	}
	return nil, nil
}

func (f *fakeTx) RollupOf(_ context.Context, incident string) (*Rollup, error) {
	f.call("RollupOf %s", incident)
	if r, ok := f.rollups[incident]; ok {
		c := *r
		return &c, nil
	}
	return nil, nil
}

func (f *fakeTx) CreateRollup(_ context.Context, r Rollup) error {
	f.call("CreateRollup %s", r.Detection)
	f.rollups[r.IncidentID] = &r
	f.sources[r.IncidentID] = map[string]int{}
	return nil
}

func (f *fakeTx) JoinRollup(_ context.Context, incident string, o *vigil.Observation) (int, int, error) {
	f.call("JoinRollup %s %s", incident, o.ID)
	f.joined, f.joinKeys = incident, nil
	return len(o.NodeIDs), len(o.ArtifactIDs), nil
}

func (f *fakeTx) UpdateRollup(_ context.Context, u RollupUpdate) error {
	f.call("UpdateRollup %d %d %s", u.Sources, u.Count, u.Title)
	r := f.rollups[u.IncidentID]
	r.Sources += u.Sources
	r.Count += u.Count
	if u.Title != "" {
		r.Title = u.Title
	}
	return nil
}

func (f *fakeTx) AddRollupSource(_ context.Context, incident, node string, count int, _ time.Time) (bool, error) {
	f.call("AddRollupSource %s %d", node, count)
	_, had := f.sources[incident][node]
	f.sources[incident][node] += count
	return !had, nil
}

func (f *fakeTx) RollupCandidates(_ context.Context, detection string, _ time.Time) ([]Candidacy, error) {
	f.call("RollupCandidates %s", detection)
	return f.candidacies, nil
}

func (f *fakeTx) TakeIntoRollup(_ context.Context, obs []string, node, from, into string, _ time.Time) (bool, int, bool, error) {
	f.call("TakeIntoRollup %v %s %s", obs, from, into)
	_, had := f.sources[into][node]
	f.sources[into][node] += len(obs)
	r := f.rollups[into]
	if !had {
		r.Sources++
	}
	r.Count += len(obs)
	f.left[from] -= len(obs)
	return !had, len(obs), f.left[from] <= 0, nil
}

func (f *fakeTx) RollupsOf(_ context.Context, node string) ([]Rollup, error) {
	f.call("RollupsOf %s", node)
	var out []Rollup
	for id, src := range f.sources {
		if _, ok := src[node]; ok {
			out = append(out, *f.rollups[id])
		}
	}
	return out, nil
}

func (f *fakeTx) LeaveRollup(_ context.Context, r Rollup, node, to string, _ time.Time) ([]string, int, error) {
	f.call("LeaveRollup %s %s", node, to)
	count := f.sources[r.IncidentID][node]
	delete(f.sources[r.IncidentID], node)
	ru := f.rollups[r.IncidentID]
	ru.Sources--
	ru.Count -= count
	return []string{"obs-of-" + node}, count, nil
}

func (f *fakeTx) SetRaisedBy(_ context.Context, incident string, why vigil.RaisedBy) error {
	f.call("SetRaisedBy %s %s", incident, why.Reason)
	if _, ok := f.raised[incident]; !ok {
		f.raised[incident] = why
	}
	return nil
}

func (f *fakeTx) Node(_ context.Context, id string) (vigil.Node, error) {
	return vigil.Node{ID: id, Type: vigil.NodeIP, Value: strings.TrimPrefix(id, "node:")}, nil
}
