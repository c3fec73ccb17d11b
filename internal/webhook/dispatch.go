package webhook

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/queue"
)

// Payload is the body of a delivery (docs/events.md, Webhooks).
type Payload struct {
	// ID is the delivery's id (HeaderID).
	ID        string `json:"id"`
	Type      string `json:"type"`
	OrgID     string `json:"org_id"`
	WebhookID string `json:"webhook_id"`
	// Position is the event's position in the org's event stream, as the
	// live stream's id.
	Position int64                `json:"position"`
	Event    *vigil.IncidentEvent `json:"event"`
}

// dispatchBatch bounds the events one org's pass reads at once.
const dispatchBatch = 200

// dispatch queues the deliveries of every org's events since its cursor.
// Several processes may dispatch at once: a delivery queued twice has the
// same id, which the stream drops within its duplicate window, and the
// log keeps once.
func (s *Service) dispatch(ctx context.Context) {
	orgs := map[string]bool{}
	for _, h := range *s.hooks.Load() {
		orgs[h.OrgID] = true
	}
	for org := range orgs {
		for ctx.Err() == nil {
			n, err := s.dispatchOrg(ctx, org)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("webhook: dispatch", slog.String("org", org), slog.String("error", err.Error()))
				}
				break
			}
			if n < dispatchBatch {
				break
			}
		}
	}
}

// dispatchOrg queues the deliveries of up to dispatchBatch of org's
// events after its cursor, then moves the cursor past them; it returns
// how many events it read.
func (s *Service) dispatchOrg(ctx context.Context, org string) (int, error) {
	st := s.cfg.Store
	cursor, ok, err := st.WebhookCursor(ctx, org)
	if err != nil {
		return 0, err
	}
	if !ok {
		// The first pass starts where the oldest subscription did.
		cursor = -1
		for _, h := range *s.hooks.Load() {
			if h.OrgID == org && (cursor < 0 || h.Since < cursor) {
				cursor = h.Since
			}
		}
		if cursor < 0 {
			return 0, nil
		}
	}
	events, err := st.IncidentEventsAfter(ctx, org, cursor, dispatchBatch)
	if err != nil || len(events) == 0 {
		return 0, err
	}
	// The subscriptions are read after the events: one created since
	// started at a position past them (its Since), so none is missed.
	hooks, _, err := st.ListWebhooks(ctx, org, vigil.Page{Limit: vigil.MaxWebhooks})
	if err != nil {
		return 0, err
	}
	now := s.cfg.Now()
	var msgs []queue.WebhookMsg
	var ds []*vigil.WebhookDelivery
	for _, ev := range events {
		for _, h := range hooks {
			if !h.Enabled || ev.Seq <= h.Since || !h.Wants(ev.Type) {
				continue
			}
			id := vigil.DeliveryID(h.ID, ev.ID)
			body, err := json.Marshal(Payload{ID: id, Type: ev.Type, OrgID: org, WebhookID: h.ID, Position: ev.Seq, Event: ev})
			if err != nil {
				return 0, err
			}
			msgs = append(msgs, queue.WebhookMsg{Org: org, Webhook: h.ID, Delivery: id, Incident: ev.IncidentID,
				EventID: ev.ID, EventType: ev.Type, Created: now, Payload: body})
			ds = append(ds, &vigil.WebhookDelivery{ID: id, WebhookID: h.ID, EventID: ev.ID, EventType: ev.Type,
				IncidentID: ev.IncidentID, State: vigil.DeliveryPending, CreatedAt: now, UpdatedAt: now})
		}
	}
	// Queued first, recorded after: a crash between the two queues them
	// again at the next start (the same ids), never loses them.
	if err := s.cfg.Queue.PublishWebhooks(ctx, msgs); err != nil {
		return 0, err
	}
	// The events come in stream order: the last is the furthest.
	if err := st.RecordWebhookDispatch(ctx, org, events[len(events)-1].Seq, ds); err != nil {
		return 0, err
	}
	return len(events), nil
}
