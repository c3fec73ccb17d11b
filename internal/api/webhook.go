package api

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/webhook"
)

// Webhooks: an addition to the contract. An org's subscriptions to its
// incident events (docs/events.md, Webhooks), managed with admin: a
// subscription makes Vigil send the org's incidents to a URL.

type webhookBody struct {
	URL        *string  `json:"url"`
	EventTypes []string `json:"event_types"`
	Enabled    *bool    `json:"enabled"`
	Secret     *string  `json:"secret"`
}

// createdWebhook is the reply to a creation: the subscription and its
// secret, which no other reply shows.
type createdWebhook struct {
	*vigil.Webhook
	Secret string `json:"secret"`
}

// validate checks the fields present; create also requires url and
// event_types.
func (s *Server) validateWebhook(r *http.Request, b *webhookBody, create bool) error {
	var issues []vigil.FieldIssue
	bad := func(f, i string) { issues = append(issues, vigil.FieldIssue{Field: f, Issue: i}) }
	switch {
	case b.URL == nil && create:
		bad("url", "is required")
	case b.URL != nil:
		if err := s.webhooks.CheckURL(r.Context(), *b.URL); err != nil {
			issues = append(issues, err.(*vigil.Error).Details...)
		}
	}
	switch {
	case b.EventTypes == nil && create:
		bad("event_types", "is required: a list of "+typeList())
	case b.EventTypes != nil:
		if len(b.EventTypes) == 0 {
			bad("event_types", "must name at least one of "+typeList())
		}
		for _, t := range b.EventTypes {
			if !slices.Contains(vigil.WebhookEventTypes, t) {
				bad("event_types", "must each be one of "+typeList())
				break
			}
		}
	}
	if b.Secret != nil {
		if !create {
			bad("secret", "cannot be changed; create a new subscription to change the secret")
		} else if err := webhook.CheckSecret(*b.Secret); err != nil {
			issues = append(issues, err.(*vigil.Error).Details...)
		}
	}
	if !create && b.URL == nil && b.EventTypes == nil && b.Enabled == nil && b.Secret == nil {
		bad("body", "must change at least one of url, event_types, enabled")
	}
	if len(issues) > 0 {
		return vigil.Invalid(issues...)
	}
	return nil
}

func typeList() string { return strings.Join(vigil.WebhookEventTypes, ", ") }

// eventTypes returns types each once, in the order of
// vigil.WebhookEventTypes.
func eventTypes(types []string) []string {
	out := []string{}
	for _, t := range vigil.WebhookEventTypes {
		if slices.Contains(types, t) {
			out = append(out, t)
		}
	}
	return out
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) {
	var b webhookBody
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.validateWebhook(r, &b, true); err != nil {
		s.fail(w, r, err)
		return
	}
	p := principal(r.Context())
	// The subscription gets what happens from now on, not the org's past.
	head, err := s.store.IncidentEventsHead(r.Context(), p.OrgID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := s.now()
	h := &vigil.Webhook{ID: vigil.NewID(), URL: *b.URL, EventTypes: eventTypes(b.EventTypes), Enabled: true,
		CreatedBy: p.Subject, CreatedAt: now, UpdatedAt: now, Since: head}
	if b.Enabled != nil {
		h.Enabled = *b.Enabled
	}
	if b.Secret != nil {
		h.Secret = *b.Secret
	} else {
		h.Secret = webhook.NewSecret()
	}
	if err := s.store.CreateWebhook(r.Context(), p.OrgID, h); err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusCreated, "webhook created; its secret is shown only now", createdWebhook{Webhook: h, Secret: h.Secret})
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request) {
	h, err := s.store.GetWebhook(r.Context(), principal(r.Context()).OrgID, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "webhook retrieved successfully", h)
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) {
	servePage(s, w, r, "webhooks", "webhooks retrieved successfully", s.store.ListWebhooks)
}

func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request) {
	var b webhookBody
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.validateWebhook(r, &b, false); err != nil {
		s.fail(w, r, err)
		return
	}
	u := vigil.WebhookUpdate{URL: b.URL, Enabled: b.Enabled}
	if b.EventTypes != nil {
		u.EventTypes = eventTypes(b.EventTypes)
	}
	h, err := s.store.UpdateWebhook(r.Context(), principal(r.Context()).OrgID, r.PathValue("id"), u, s.now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "webhook updated", h)
}

// deleteWebhook removes a subscription, its delivery log and (within a
// few seconds, by the webhook service) the deliveries still queued.
func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	if err := s.store.DeleteWebhook(r.Context(), principal(r.Context()).OrgID, r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "webhook deleted", nil)
}

func (s *Server) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) {
	servePage(s, w, r, "deliveries", "deliveries retrieved successfully", func(ctx context.Context, org string, p vigil.Page) ([]*vigil.WebhookDelivery, int, error) {
		return s.store.ListWebhookDeliveries(ctx, org, r.PathValue("id"), p)
	})
}
