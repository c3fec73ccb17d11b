package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Ownership of a queue name.
//
// A queue name's streams carry the artifacts of one database: a second
// deployment with another database that opened them would take half of
// the first one's artifacts into its own database, silently. So the
// first process to open a queue name records the identity of its
// database (vigil.Store.DeploymentID), and a process whose database has
// another identity refuses to start.
//
// The record is the key "database" of a key-value bucket of its own,
// <N>_OWNER, rather than the streams' Metadata or Description:
//   - Metadata needs nats-server 2.10; 2.9 drops it without a word, and the
//     check would then never fire.
//   - The description is rewritten by every CreateOrUpdateStream, also by
//     an older Vigil that knows nothing of owners, and a stream update is
//     not conditional: two deployments adopting an ownerless stream at
//     once could both believe they won.
//   - A key-value Create is conditional (it succeeds only if the key does
//     not exist, checked by the server), is kept by 2.9, and is never
//     touched by the stream updates: of any number of processes starting
//     at once, exactly one records its database, and the others read it.
//
// The record outlives the streams: deleting the streams to empty the
// queue leaves the queue name with its owner. Deleting the key (nats kv
// del <N>_OWNER database) releases the name.

// ownerKey is the key of the owner record in the bucket.
const ownerKey = "database"

// ErrOwned is returned by Open when the queue name belongs to another
// database.
var ErrOwned = errors.New("queue name belongs to another database")

// owner is the record, as JSON, so that `nats kv get` shows it to people.
type owner struct {
	Database string    `json:"database"`        // vigil.Store.DeploymentID
	Label    string    `json:"label,omitempty"` // where that database is, for people
	Since    time.Time `json:"since"`           // when it claimed the queue name
}

// OwnedError says which database owns a queue name and which one asked.
type OwnedError struct {
	Names Names
	// Owner and OwnerLabel are the database the queue name belongs to;
	// Since is when it claimed it.
	Owner, OwnerLabel string
	Since             time.Time
	// Self and SelfLabel are this process's database.
	Self, SelfLabel string
}

func (e *OwnedError) Error() string {
	return fmt.Sprintf("queue name %q on this NATS belongs to database %s%s, since %s: its streams %s and %s carry that database's artifacts; "+
		"this process's database is %s%s", e.Names.Queue, e.Owner, paren(e.OwnerLabel), e.Since.Format(time.RFC3339),
		e.Names.Stream, e.Names.DeadStream, e.Self, paren(e.SelfLabel))
}

func (e *OwnedError) Unwrap() error { return ErrOwned }

func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// claim records this process's database as the owner of the queue name,
// or checks that it is the one recorded. It runs before the streams are
// created or updated, so that a refused process changes nothing of
// another deployment's queue.
func (q *Queue) claim(ctx context.Context) error {
	kv, err := q.ownerBucket(ctx)
	if err != nil {
		return err
	}
	me := owner{Database: q.cfg.Owner, Label: q.cfg.OwnerLabel, Since: time.Now().UTC().Truncate(time.Second)}
	rec, err := json.Marshal(me)
	if err != nil {
		return fmt.Errorf("queue: owner record: %w", err)
	}
	// Two tries: the key may be deleted between a failed Create and the Get.
	for try := 0; ; try++ {
		_, err := kv.Create(ctx, ownerKey, rec)
		if err == nil {
			// Streams that exist already were made by a Vigil from before
			// owners (or the record was deleted): they are adopted.
			_, serr := q.js.Stream(ctx, q.names.Stream)
			q.log.Info("queue: recorded this database as the owner of the queue name",
				slog.String("queue_name", q.names.Queue), slog.String("database", me.Database),
				slog.Bool("adopted_existing_stream", serr == nil))
			q.keepReplicas(ctx, kv)
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("queue: record owner in bucket %s: %w", q.names.OwnerBucket, err)
		}
		e, err := kv.Get(ctx, ownerKey)
		if errors.Is(err, jetstream.ErrKeyNotFound) && try == 0 {
			continue
		}
		if err != nil {
			return fmt.Errorf("queue: read owner from bucket %s: %w", q.names.OwnerBucket, err)
		}
		var got owner
		if err := json.Unmarshal(e.Value(), &got); err != nil || got.Database == "" {
			return fmt.Errorf("queue: bucket %s key %s holds %.100q, not a Vigil owner record; delete the key to let this deployment claim queue name %q",
				q.names.OwnerBucket, ownerKey, e.Value(), q.names.Queue)
		}
		if got.Database != q.cfg.Owner {
			return &OwnedError{Names: q.names, Owner: got.Database, OwnerLabel: got.Label, Since: got.Since,
				Self: q.cfg.Owner, SelfLabel: q.cfg.OwnerLabel}
		}
		q.keepReplicas(ctx, kv)
		return nil
	}
}

// keepReplicas gives the owner bucket the replicas the streams get, as
// the owner only: on a cluster whose deployment moved to R3 after the
// bucket was made, an R1 bucket would stop every process from starting
// while its one node is down. A failure is only logged: ownership is
// settled, and the next start tries again.
func (q *Queue) keepReplicas(ctx context.Context, kv jetstream.KeyValue) {
	st, err := kv.Status(ctx)
	if err != nil {
		q.log.Warn("queue: owner bucket status", slog.String("error", err.Error()))
		return
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok || bs.StreamInfo().Config.Replicas == q.cfg.Replicas {
		return
	}
	if _, err := q.js.UpdateKeyValue(ctx, q.ownerBucketConfig()); err != nil {
		q.log.Warn("queue: owner bucket replicas", slog.String("bucket", q.names.OwnerBucket),
			slog.Int("replicas", q.cfg.Replicas), slog.String("error", err.Error()))
	}
}

func (q *Queue) ownerBucketConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      q.names.OwnerBucket,
		Description: fmt.Sprintf("the database whose artifacts the Vigil queue %q carries", q.names.Queue),
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    q.cfg.Replicas,
	}
}

// jsErrCodeSubjectsOverlap is JetStream's "subjects overlap with an
// existing stream" (not among nats.go's named codes).
const jsErrCodeSubjectsOverlap jetstream.ErrorCode = 10065

// ownerBucket opens the owner bucket, creating it the first time.
// Processes creating it at once with the same settings all succeed (the
// server takes an identical stream creation as a no-op).
func (q *Queue) ownerBucket(ctx context.Context) (jetstream.KeyValue, error) {
	kv, err := q.js.KeyValue(ctx, q.names.OwnerBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = q.js.CreateKeyValue(ctx, q.ownerBucketConfig())
		var apiErr *jetstream.APIError
		if errors.Is(err, jetstream.ErrBucketExists) || errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrCodeSubjectsOverlap {
			// Created meanwhile by a process with other settings
			// (replicas), or by one racing this one: NATS 2.9 can answer
			// the loser of two identical creations "subjects overlap with
			// an existing stream" instead of taking it as a no-op.
			kv, err = q.js.KeyValue(ctx, q.names.OwnerBucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("queue: owner bucket %s: %w", q.names.OwnerBucket, err)
	}
	return kv, nil
}
