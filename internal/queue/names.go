package queue

import (
	"fmt"
	"regexp"
	"strings"
)

// DefaultName is the queue name of a deployment that sets none. It gives
// exactly the names Vigil used before queue names existed, so that an
// upgraded deployment finds its pending messages.
const DefaultName = "vigil"

// MaxNameLen bounds a queue name: it becomes part of stream, subject,
// consumer and bucket names, which NATS tools show in narrow columns.
const MaxNameLen = 32

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// ValidateName reports whether name may be a queue name: 1 to MaxNameLen
// letters, digits, '-' or '_' (no '.', '*', '>' or spaces, which mean
// something in NATS subjects).
func ValidateName(name string) error {
	if len(name) < 1 || len(name) > MaxNameLen || !validName.MatchString(name) {
		return fmt.Errorf("queue name %q: want 1 to %d letters, digits, '-' or '_'", name, MaxNameLen)
	}
	return nil
}

// Names are the JetStream names of one queue name: the streams, subjects,
// consumer and owner bucket that a deployment uses on its NATS. Two
// deployments on one NATS must have different queue names, or their
// workers would take each other's artifacts.
type Names struct {
	// Queue is the queue name, in lower case: a queue name is not case
	// sensitive, so that "TeamA" and "teama" cannot be two deployments
	// fighting over one stream TEAMA_ARTIFACTS.
	Queue string
	// Stream holds the artifacts accepted by the API until a worker is
	// done with them (a work queue), published to Subject.
	Stream, Subject string
	// DeadStream keeps the messages the pipeline gave up on, published to
	// DeadSubject.
	DeadStream, DeadSubject string
	// Consumer is the durable consumer all workers of the deployment share.
	Consumer string
	// Committed prefixes the core-NATS notices that a batch is stored.
	Committed string
	// OwnerBucket is the key-value bucket recording the database the
	// queue belongs to (stream KV_<OwnerBucket>; see owner.go).
	OwnerBucket string
	// WebhookStream holds the webhook deliveries waiting to be sent, on
	// WebhookSubject plus the subscription's id; each subscription has a
	// consumer of its own, WebhookConsumer plus its id (webhooks.go).
	WebhookStream, WebhookSubject, WebhookConsumer string
}

// NamesFor returns the names of queue name (DefaultName when name is "").
// For a name N: streams <N>_ARTIFACTS and <N>_DEAD (upper case), subjects
// <n>.artifacts.in and <n>.dead.artifacts, consumer <n>-workers and notices
// <n>.committed.<batch> (lower case), bucket <N>_OWNER; webhook deliveries
// in stream <N>_WEBHOOKS on <n>.webhooks.<id>, consumers <n>-webhook-<id>.
func NamesFor(name string) (Names, error) {
	if name == "" {
		name = DefaultName
	}
	if err := ValidateName(name); err != nil {
		return Names{}, err
	}
	up, low := strings.ToUpper(name), strings.ToLower(name)
	return Names{
		Queue:       low,
		Stream:      up + "_ARTIFACTS",
		Subject:     low + ".artifacts.in",
		DeadStream:  up + "_DEAD",
		DeadSubject: low + ".dead.artifacts",
		Consumer:    low + "-workers",
		Committed:   low + ".committed.",
		OwnerBucket: up + "_OWNER",

		WebhookStream:   up + "_WEBHOOKS",
		WebhookSubject:  low + ".webhooks.",
		WebhookConsumer: low + "-webhook-",
	}, nil
}
