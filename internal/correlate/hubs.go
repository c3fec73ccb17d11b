package correlate

import (
	"context"
	"time"

	"github.com/vigil-soc/vigil"
)

// hubCache is a Tx that answers HubNodes from what it asked the store
// before in the transaction, as long as nothing has written incidents or
// their nodes since: a batch of Sigma matches on Windows events grows
// some hundred observations of the same few incidents, each asking
// whether the same host and account are hubs, and the answer changes
// only when an incident's key nodes or its state do. Every method that
// may write them forgets what it knows (the others, which read, or write
// signals, bursts, an observation's growth, the history or entity risk,
// pass through); a new method of Tx that writes incidents must be added
// here.
type hubCache struct {
	Tx
	limit int
	known map[string]bool // node id → a hub
}

func (c *hubCache) HubNodes(ctx context.Context, ids []string, limit int) ([]string, error) {
	if limit != c.limit {
		c.known, c.limit = nil, limit
	}
	var ask []string
	for _, id := range ids {
		if _, ok := c.known[id]; !ok {
			ask = append(ask, id)
		}
	}
	if len(ask) > 0 {
		hubs, err := c.Tx.HubNodes(ctx, ask, limit)
		if err != nil {
			return nil, err
		}
		if c.known == nil {
			c.known = map[string]bool{}
		}
		for _, id := range ask {
			c.known[id] = false
		}
		for _, id := range hubs {
			c.known[id] = true
		}
	}
	var out []string
	for _, id := range ids {
		if c.known[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// forget drops what c knows.
func (c *hubCache) forget() { c.known = nil }

func (c *hubCache) CreateIncident(ctx context.Context, inc NewIncident) error {
	c.forget()
	return c.Tx.CreateIncident(ctx, inc)
}

func (c *hubCache) MergeIncident(ctx context.Context, from, into string, now time.Time) error {
	c.forget()
	return c.Tx.MergeIncident(ctx, from, into, now)
}

func (c *hubCache) RebuildIncident(ctx context.Context, id string, now time.Time) error {
	c.forget()
	return c.Tx.RebuildIncident(ctx, id, now)
}

func (c *hubCache) InsertObservation(ctx context.Context, o *vigil.Observation, rank int, keys map[string]bool) error {
	c.forget()
	return c.Tx.InsertObservation(ctx, o, rank, keys)
}

func (c *hubCache) JoinIncident(ctx context.Context, incident string, o *vigil.Observation, keys map[string]bool, now time.Time) error {
	c.forget()
	return c.Tx.JoinIncident(ctx, incident, o, keys, now)
}

func (c *hubCache) UpdateObservation(ctx context.Context, o *vigil.Observation, rank int, keys map[string]bool, refs bool) error {
	c.forget()
	return c.Tx.UpdateObservation(ctx, o, rank, keys, refs)
}

func (c *hubCache) DeleteObservation(ctx context.Context, id string) error {
	c.forget()
	return c.Tx.DeleteObservation(ctx, id)
}

// GrowObservation of a roll-up's observation adds to its incident; of
// another, it writes the observation alone (GrowIncident adds to the
// incident).
func (c *hubCache) GrowObservation(ctx context.Context, g Growth) (int, int, error) {
	if g.Context {
		c.forget()
	}
	return c.Tx.GrowObservation(ctx, g)
}

func (c *hubCache) GrowIncident(ctx context.Context, g IncidentGrowth) error {
	c.forget()
	return c.Tx.GrowIncident(ctx, g)
}

func (c *hubCache) CreateRollup(ctx context.Context, r Rollup) error {
	c.forget()
	return c.Tx.CreateRollup(ctx, r)
}

func (c *hubCache) JoinRollup(ctx context.Context, incident string, o *vigil.Observation) (int, int, error) {
	c.forget()
	return c.Tx.JoinRollup(ctx, incident, o)
}

func (c *hubCache) UpdateRollup(ctx context.Context, u RollupUpdate) error {
	c.forget()
	return c.Tx.UpdateRollup(ctx, u)
}

func (c *hubCache) AddRollupSource(ctx context.Context, incident, node string, count int, at time.Time) (bool, error) {
	c.forget()
	return c.Tx.AddRollupSource(ctx, incident, node, count, at)
}

func (c *hubCache) TakeIntoRollup(ctx context.Context, obs []string, node, from, into string, now time.Time) (bool, int, bool, error) {
	c.forget()
	return c.Tx.TakeIntoRollup(ctx, obs, node, from, into, now)
}

func (c *hubCache) LeaveRollup(ctx context.Context, r Rollup, node, to string, now time.Time) ([]string, int, error) {
	c.forget()
	return c.Tx.LeaveRollup(ctx, r, node, to, now)
}

func (c *hubCache) SetRaisedBy(ctx context.Context, incident string, why vigil.RaisedBy) error {
	c.forget()
	return c.Tx.SetRaisedBy(ctx, incident, why)
}
