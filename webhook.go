package vigil

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// Webhook is an org's subscription to its incident events: each event of
// the chosen types is POSTed to URL, signed with Secret (docs/events.md,
// Webhooks).
type Webhook struct {
	ID         string    `json:"id"`
	OrgID      string    `json:"org_id"`
	URL        string    `json:"url"`
	EventTypes []string  `json:"event_types"`
	Enabled    bool      `json:"enabled"`
	CreatedBy  string    `json:"created_by"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	// Secret signs the deliveries. It is shown once, in the reply to the
	// creation, and kept as it is (signing needs it whole); no other reply
	// and no log line shows it.
	Secret string `json:"-"`
	// Since is the position in the org's event stream at the creation:
	// the subscription gets the events after it, not the org's past.
	Since int64 `json:"-"`
}

// Wants reports whether w takes events of type typ.
func (w *Webhook) Wants(typ string) bool { return slices.Contains(w.EventTypes, typ) }

// WebhookUpdate changes a subscription; a nil field is left as it is.
type WebhookUpdate struct {
	URL        *string
	EventTypes []string
	Enabled    *bool
}

// WebhookEventTypes are the event types a subscription may take.
var WebhookEventTypes = []string{EventCreated, EventGrew, EventStatusChanged, EventCommented, EventAssigned}

// Bounds of webhooks.
const (
	// MaxWebhooks bounds the subscriptions of an org.
	MaxWebhooks      = 20
	MaxWebhookURLLen = 2048
	// A secret given by the client: printable ASCII of this many bytes.
	MinWebhookSecretLen = 16
	MaxWebhookSecretLen = 256
)

// States of a delivery.
const (
	DeliveryPending   = "pending"   // queued, or failed and waiting for its next attempt
	DeliveryDelivered = "delivered" // the receiver answered 2xx
	DeliveryFailed    = "failed"    // every attempt failed until the retries ran out
)

// WebhookDelivery is one event sent (or to be sent) to one subscription:
// a line of its delivery log.
type WebhookDelivery struct {
	// ID is the same for every attempt, so that receivers can drop a
	// delivery they already took (DeliveryID).
	ID         string `json:"id"`
	WebhookID  string `json:"webhook_id"`
	EventID    int64  `json:"event_id"`
	EventType  string `json:"event_type"`
	IncidentID string `json:"incident_id"`
	State      string `json:"state"`
	// StatusCode is the receiver's answer to the last attempt (0: none).
	StatusCode int `json:"status_code"`
	Attempts   int `json:"attempts"`
	// LastError says why the last attempt failed ("" after a success).
	LastError     string     `json:"last_error"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

// MaxDeliveryErrorLen bounds what a delivery log keeps of an error.
const MaxDeliveryErrorLen = 500

// DeliveryID returns the id of the delivery of event to webhook: derived
// from both, so that an event queued twice (a dispatcher restarted before
// it recorded its progress) is the same delivery.
func DeliveryID(webhook string, event int64) string {
	ns, err := uuid.Parse(webhook)
	if err != nil {
		ns = uuid.Nil
	}
	return uuid.NewSHA1(ns, []byte(strconv.FormatInt(event, 10))).String()
}

// WebhookStore keeps each org's webhook subscriptions, the progress of
// the dispatcher through each org's events, and the delivery logs.
type WebhookStore interface {
	// CreateWebhook stores w; ECONFLICT when org already has MaxWebhooks.
	CreateWebhook(ctx context.Context, org string, w *Webhook) error
	// GetWebhook returns one subscription of org, with its Secret;
	// ENOTFOUND if org has none with id.
	GetWebhook(ctx context.Context, org, id string) (*Webhook, error)
	// ListWebhooks returns a page of org's subscriptions, oldest first,
	// and their total.
	ListWebhooks(ctx context.Context, org string, p Page) ([]*Webhook, int, error)
	// UpdateWebhook applies u, UpdatedAt set to now; ENOTFOUND if org has
	// none with id.
	UpdateWebhook(ctx context.Context, org, id string, u WebhookUpdate, now time.Time) (*Webhook, error)
	// DeleteWebhook removes a subscription of org and its delivery log;
	// ENOTFOUND if org has none with id.
	DeleteWebhook(ctx context.Context, org, id string) error
	// AllWebhooks returns every subscription of every org, with their
	// secrets: what the dispatcher and the deliverers work from.
	AllWebhooks(ctx context.Context) ([]*Webhook, error)

	// WebhookCursor returns the position in org's event stream up to
	// which the dispatcher queued deliveries; false when it never did.
	WebhookCursor(ctx context.Context, org string) (int64, bool, error)
	// RecordWebhookDispatch records that the deliveries ds (of org) were
	// queued and that the dispatcher went through org's events up to
	// position; a delivery already logged is left as it is, and the
	// cursor never moves back.
	RecordWebhookDispatch(ctx context.Context, org string, position int64, ds []*WebhookDelivery) error
	// RecordWebhookAttempt writes d (of org) in its subscription's
	// delivery log, replacing what it said; nothing when the
	// subscription is gone.
	RecordWebhookAttempt(ctx context.Context, org string, d *WebhookDelivery) error
	// GetWebhookDelivery returns one delivery of org; ENOTFOUND if there
	// is none.
	GetWebhookDelivery(ctx context.Context, org, id string) (*WebhookDelivery, error)
	// ListWebhookDeliveries returns a page of the delivery log of
	// subscription webhook of org, newest first, and its total;
	// ENOTFOUND if org has no such subscription.
	ListWebhookDeliveries(ctx context.Context, org, webhook string, p Page) ([]*WebhookDelivery, int, error)
	// PruneWebhookDeliveries forgets, in every org, the deliveries
	// delivered or failed before before; it returns how many.
	PruneWebhookDeliveries(ctx context.Context, before time.Time) (int, error)
}
