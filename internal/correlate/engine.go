// Package correlate turns observations into incidents and windowed
// detections into observations. Its Engine is the one place where Vigil
// decides which incident an observation joins and when a burst of signals
// fires or grows; it runs over the transactional primitives (Tx) that each
// store implements with its SQL, and classifies what it changed.
package correlate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/vigil-soc/vigil"
)

// Classifier applies an org's classification rules to its incidents.
type Classifier interface {
	// Incidents classifies the incidents ids of org.
	Incidents(ctx context.Context, org string, ids []string) error
}

// ErrClassify marks an error of the classification that follows a
// correlation: the correlation itself was committed.
var ErrClassify = errors.New("classify")

// Engine records observations into incidents and evaluates detections,
// each in one store transaction, and then classifies the incidents it
// touched. Its methods are safe for concurrent use.
type Engine struct {
	store    Store
	classify Classifier
	policy   vigil.CorrelationPolicy
	now      func() time.Time
	// tally counts detections' signals in memory until they may fire:
	// the store's own (Tallied), when it has one.
	tally *Tally
	// policies gives each org's roll-up and risk settings (nil: the
	// defaults).
	policies Policies
}

// Policies gives each org's roll-up and risk settings.
type Policies interface {
	RollupPolicy(ctx context.Context, org string) (vigil.RollupPolicy, error)
}

// WithPolicies makes e read each org's roll-up and risk settings from p
// instead of using the defaults.
func (e *Engine) WithPolicies(p Policies) *Engine {
	e.policies = p
	return e
}

// policyOf returns org's roll-up and risk settings.
func (e *Engine) policyOf(ctx context.Context, org string) (vigil.RollupPolicy, error) {
	if e.policies == nil {
		return vigil.DefaultRollupPolicy(), nil
	}
	p, err := e.policies.RollupPolicy(ctx, org)
	if err != nil {
		return p, fmt.Errorf("roll-up settings: %w", err)
	}
	return p, nil
}

// Tallied is a Store whose detection signals are counted in memory until
// they may fire (see Tally): a store that one process alone writes.
type Tallied interface {
	Tally() *Tally
}

// NewEngine returns an Engine correlating under policy in store and
// classifying with classify; a nil classify leaves every incident at its
// computed severity.
func NewEngine(store Store, classify Classifier, policy vigil.CorrelationPolicy) *Engine {
	if policy.Window == 0 {
		policy = vigil.DefaultCorrelationPolicy()
	}
	e := &Engine{store: store, classify: classify, policy: policy, now: vigil.Now}
	if t, ok := store.(Tallied); ok {
		e.tally = t.Tally()
	}
	return e
}

// Record stores o (its ID, CreatedAt and UpdatedAt set by the caller) and
// correlates it: it joins the open incident of org that shares a key node
// with it and was active within the policy's window; if it bridges
// several, they are merged into the oldest; else it opens a new incident.
// title is the incident's title while o heads it (vigil.TitleRank: the
// most severe, then most specific, then newest observation names and
// rates its incident). A key node that is already a key of HubLimit open
// incidents (a NAT gateway, a public resolver) stays in the observation
// as context and joins nothing. The nodes of o.Nodes are created when
// new, in the same transaction. Record sets o.IncidentID and o.KeyNodeIDs,
// then classifies the incident. Unknown NodeIDs or ArtifactIDs are
// EINVALID.
func (e *Engine) Record(ctx context.Context, org string, o *vigil.Observation, title string) error {
	o.OrgID = org
	o.Title = title
	o.NodeIDs = vigil.Dedupe(o.NodeIDs)
	o.ArtifactIDs = vigil.Dedupe(o.ArtifactIDs)
	givenIDs, givenKeys := o.NodeIDs, o.KeyNodeIDs
	pol, err := e.policyOf(ctx, org)
	if err != nil {
		return err
	}
	var touched []string
	err = e.store.Correlate(ctx, org, func(tx Tx) error {
		o.NodeIDs, o.KeyNodeIDs = givenIDs, givenKeys
		if err := tx.CheckRefs(ctx, givenIDs, o.ArtifactIDs); err != nil {
			return err
		}
		keys := make(map[string]bool, len(givenKeys))
		for _, id := range givenKeys {
			keys[id] = true
		}
		if len(o.Nodes) > 0 {
			nodes, err := tx.UpsertNodes(ctx, o.Nodes, o.CreatedAt)
			if err != nil {
				return err
			}
			o.NodeIDs = vigil.AddNodes(slices.Clone(givenIDs), keys, nodes, o.Nodes)
		}
		rb := newRollupBatch()
		if err := e.correlate(ctx, tx, rb, o, keys, title, by{actor: vigil.ActorFrom(ctx)}, nil, pol); err != nil {
			return err
		}
		if err := rb.flush(ctx, tx, o.CreatedAt); err != nil {
			return err
		}
		touched = rb.touched
		return vigil.Audit(ctx, org, vigil.AuditObservation, o.ID, nil, o)
	})
	if err != nil {
		return fmt.Errorf("record observation: %w", err)
	}
	return e.classifyIncidents(ctx, org, append([]string{o.IncidentID}, touched...))
}

// Update applies u to observation id of org, creating the nodes of
// u.Nodes when new, and rebuilds the incident it belongs to from its
// observations, then classifies it. The observation keeps its incident.
// ENOTFOUND if org has no observation id; unknown refs are EINVALID.
func (e *Engine) Update(ctx context.Context, org, id string, u vigil.ObservationUpdate, now time.Time) (*vigil.Observation, error) {
	var out *vigil.Observation
	err := e.store.Correlate(ctx, org, func(tx Tx) error {
		o, err := tx.LockObservation(ctx, id)
		if err != nil {
			return err
		}
		before := *o
		nodeIDs, artifactIDs := u.Apply(o)
		if err := tx.CheckRefs(ctx, nodeIDs, artifactIDs); err != nil {
			return err
		}
		keys := u.KeySet(o, nodeIDs)
		if len(u.Nodes) > 0 {
			nodes, err := tx.UpsertNodes(ctx, u.Nodes, now)
			if err != nil {
				return err
			}
			nodeIDs = vigil.AddNodes(slices.Clone(nodeIDs), keys, nodes, u.Nodes)
		}
		o.UpdatedAt = now
		if u.ChangesRefs() {
			o.NodeIDs, o.ArtifactIDs = nodeIDs, artifactIDs
			o.KeyNodeIDs = keyList(nodeIDs, keys)
		}
		if err := tx.UpdateObservation(ctx, o, vigil.TitleRank(o.Severity, o.Specificity), keys, u.ChangesRefs()); err != nil {
			return err
		}
		if o.IncidentID != "" {
			if err := rebuild(ctx, tx, o.IncidentID, now); err != nil {
				return err
			}
			if err := tx.RecordEvent(ctx, vigil.IncidentEvent{IncidentID: o.IncidentID, Type: vigil.EventObservationUpdated,
				Actor: vigil.ActorFrom(ctx), At: now, Detail: vigil.EventDetail{ObservationID: id}}); err != nil {
				return err
			}
		}
		out = o
		return vigil.Audit(ctx, org, vigil.AuditObservation, id, &before, o)
	})
	if err != nil {
		return nil, fmt.Errorf("update observation: %w", err)
	}
	return out, e.classifyIncidents(ctx, org, []string{out.IncidentID})
}

// Delete removes observation id of org and rebuilds the incident it
// belonged to from the observations left, then classifies it. ENOTFOUND
// if org has no observation id.
func (e *Engine) Delete(ctx context.Context, org, id string) error {
	var incident string
	err := e.store.Correlate(ctx, org, func(tx Tx) error {
		o, err := tx.LockObservation(ctx, id)
		if err != nil {
			return err
		}
		incident = o.IncidentID
		if err := tx.DeleteObservation(ctx, id); err != nil {
			return err
		}
		if err := vigil.Audit(ctx, org, vigil.AuditObservation, id, o, nil); err != nil {
			return err
		}
		if incident == "" {
			return nil
		}
		now := e.now()
		if err := rebuild(ctx, tx, incident, now); err != nil {
			return err
		}
		return tx.RecordEvent(ctx, vigil.IncidentEvent{IncidentID: incident, Type: vigil.EventObservationDeleted,
			Actor: vigil.ActorFrom(ctx), At: now, Detail: vigil.EventDetail{ObservationID: id}})
	})
	if err != nil {
		return fmt.Errorf("delete observation: %w", err)
	}
	return e.classifyIncidents(ctx, org, []string{incident})
}

// rebuild recomputes incident from its observations, and a roll-up's
// title from its sources counted again.
func rebuild(ctx context.Context, tx Tx, incident string, now time.Time) error {
	if err := tx.RebuildIncident(ctx, incident, now); err != nil {
		return err
	}
	rb := newRollupBatch()
	p, err := rb.of(ctx, tx, incident)
	if err != nil || p == nil {
		return err
	}
	p.dirty = true
	return rb.flush(ctx, tx, now)
}

func (e *Engine) classifyIncidents(ctx context.Context, org string, ids []string) error {
	ids = slices.DeleteFunc(ids, func(id string) bool { return id == "" })
	if e.classify == nil || len(ids) == 0 {
		return nil
	}
	if err := e.classify.Incidents(ctx, org, ids); err != nil {
		return fmt.Errorf("%w: %w", ErrClassify, err)
	}
	return nil
}

// by is who the history events of a correlation name: the sub of the
// token that posted an observation, or the system and the detector.
type by struct{ actor, via string }

// event returns an event of type typ on incident by b at now.
func (b by) event(typ, incident string, now time.Time, d vigil.EventDetail) vigil.IncidentEvent {
	return vigil.IncidentEvent{IncidentID: incident, Type: typ, Actor: b.actor, Via: b.via, At: now, Detail: d}
}

// correlate inserts o and attaches it to an incident (what it does to
// roll-ups pending in rb), in the order that
// keeps concurrent correlations apart: lock the key nodes, drop the hubs,
// insert, find the candidate incidents (locking them), add o's risk to its
// key nodes, then roll up, or open, merge and join, then take the
// observations of nodes that stand apart out of their roll-ups; each
// incident it changes records what changed, by b. src is the detection
// that fired o (nil: recorded through the API), pol the org's roll-up and
// risk settings.
func (e *Engine) correlate(ctx context.Context, tx Tx, rb *rollupBatch, o *vigil.Observation, keys map[string]bool, title string, b by, src *source, pol vigil.RollupPolicy) error {
	now := o.CreatedAt
	ids := sortedKeys(keys)
	if err := tx.LockKeys(ctx, ids); err != nil {
		return err
	}
	// Key nodes the transaction created for o (a scanner seen for the
	// first time) are keys of no incident yet: no hub, no candidate.
	fresh := src.allFresh(keys)
	o.IncidentID = ""
	if !fresh {
		if err := e.dropHubs(ctx, tx, keys, ids); err != nil {
			return err
		}
	} else if err := preplace(ctx, tx, rb, o, keys, src, pol); err != nil {
		return err
	}
	if err := tx.InsertObservation(ctx, o, vigil.TitleRank(o.Severity, o.Specificity), keys); err != nil {
		return err
	}
	var candidates []Candidate
	if len(keys) > 0 && !fresh {
		var err error
		if candidates, err = tx.OpenIncidents(ctx, sortedKeys(keys), now.Add(-e.policy.Window)); err != nil {
			return err
		}
	}
	risky, err := addRisk(ctx, tx, o, keys, src, pol)
	if err != nil {
		return err
	}
	if len(candidates) == 0 && len(risky) == 0 && rollsUp(o, keys, src, pol) {
		done, err := e.rollUp(ctx, tx, rb, o, sortedKeys(keys)[0], src, b, pol)
		if err != nil || done {
			return err
		}
	}
	var target string
	if len(candidates) == 0 {
		target = vigil.NewID()
		if err := tx.CreateIncident(ctx, NewIncident{ID: target, Title: title, Severity: o.Severity, At: now}); err != nil {
			return err
		}
	} else {
		// The observation bridges every candidate: they merge into the
		// oldest, which keeps its id and history; its title and severity
		// follow its observations, as always.
		slices.SortFunc(candidates, func(a, b Candidate) int {
			if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		})
		target = candidates[0].ID
		for _, c := range candidates[1:] {
			if err := tx.MergeIncident(ctx, c.ID, target, now); err != nil {
				return err
			}
			if err := tx.RecordEvent(ctx, b.event(vigil.EventMerged, c.ID, now, vigil.EventDetail{MergedInto: target})); err != nil {
				return err
			}
			if err := tx.RecordEvent(ctx, b.event(vigil.EventMerged, target, now, vigil.EventDetail{MergedFrom: c.ID})); err != nil {
				return err
			}
		}
	}
	if err := tx.JoinIncident(ctx, target, o, keys, now); err != nil {
		return err
	}
	typ := vigil.EventGrew
	if len(candidates) == 0 {
		typ = vigil.EventCreated
	}
	if err := tx.RecordEvent(ctx, b.event(typ, target, now, vigil.EventDetail{ObservationID: o.ID})); err != nil {
		return err
	}
	o.IncidentID = target
	o.KeyNodeIDs = keyList(o.NodeIDs, keys)
	if len(risky) > 0 {
		return e.raise(ctx, tx, rb, o, target, risky, src, b, pol, len(candidates) == 0)
	}
	return nil
}

// dropHubs removes from keys (whose sorted ids are ids) the nodes that are
// already keys of HubLimit or more open incidents: such a hub would
// otherwise collapse unrelated incidents into one.
func (e *Engine) dropHubs(ctx context.Context, tx Tx, keys map[string]bool, ids []string) error {
	if len(ids) == 0 || e.policy.HubLimit <= 0 {
		return nil
	}
	hubs, err := tx.HubNodes(ctx, ids, e.policy.HubLimit)
	if err != nil {
		return err
	}
	for _, id := range hubs {
		delete(keys, id)
	}
	return nil
}

// sortedKeys returns the members of a set in ascending order: the order in
// which stores take locks, so that two transactions never wait on each
// other's.
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// keyList returns the ids of nodeIDs that are in keys, in order.
func keyList(nodeIDs []string, keys map[string]bool) []string {
	var out []string
	for _, id := range nodeIDs {
		if keys[id] {
			out = append(out, id)
		}
	}
	return out
}

// PolicyFunc is a Policies that is a function.
type PolicyFunc func(ctx context.Context, org string) (vigil.RollupPolicy, error)

// RollupPolicy returns f(ctx, org).
func (f PolicyFunc) RollupPolicy(ctx context.Context, org string) (vigil.RollupPolicy, error) {
	return f(ctx, org)
}

// SettingsReader reads an org's settings (a vigil.SettingsStore).
type SettingsReader interface {
	EnrichmentSettings(ctx context.Context, org string) (*vigil.EnrichmentSettings, error)
}

// StoredPolicies reads each org's roll-up and risk settings from s at
// every correlation: for a process that correlates seldom (the API's
// observations) and keeps no cache of them.
func StoredPolicies(s SettingsReader) Policies {
	return PolicyFunc(func(ctx context.Context, org string) (vigil.RollupPolicy, error) {
		set, err := s.EnrichmentSettings(ctx, org)
		if err != nil {
			return vigil.RollupPolicy{}, err
		}
		return set.RollupPolicy(), nil
	})
}
