package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsServers returns the servers the ownership tests run against: one
// started by the test (the nats-server version Vigil embeds) and, when
// VIGIL_TEST_NATS_URL names one, that external server too (on the
// development machine nats-server 2.9, which has no stream metadata: the
// owner record must survive there).
func natsServers(t *testing.T) map[string]string {
	t.Helper()
	ns, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The server's warnings say why it refused what it answers with a
	// bare "error creating store for stream": shown when the test fails.
	logs := &syncBuffer{}
	ns.SetLogger(serverLog{slog.New(slog.NewTextHandler(logs, nil))}, false, false)
	ns.Start()
	t.Cleanup(func() {
		ns.Shutdown()
		if t.Failed() {
			t.Logf("the test's nats-server logged:\n%s", logs.String())
		}
	})
	if !ns.ReadyForConnections(testWait) {
		t.Fatal("test NATS server did not start")
	}
	out := map[string]string{"in-test": ns.ClientURL()}
	if u := os.Getenv("VIGIL_TEST_NATS_URL"); u != "" {
		out["external"] = u
	}
	return out
}

// testQueueName returns a queue name of the test's own and deletes its
// streams and owner bucket from the server at url when the test ends
// (never another name's: the server may be shared).
func testQueueName(t *testing.T, url string) string {
	t.Helper()
	b := make([]byte, 5)
	rand.Read(b)
	name := "t-" + hex.EncodeToString(b)
	names, err := NamesFor(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nc, err := nats.Connect(url)
		if err != nil {
			t.Errorf("cleanup of queue %s: %v", name, err)
			return
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			t.Errorf("cleanup of queue %s: %v", name, err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, s := range []string{names.Stream, names.DeadStream, names.WebhookStream, "KV_" + names.OwnerBucket} {
			if err := js.DeleteStream(ctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				t.Errorf("delete stream %s: %v", s, err)
			}
		}
	})
	return name
}

// openAt opens the queue name on the server at url for database owner.
func openAt(t *testing.T, url, name, owner string, cfg Config) (*Queue, error) {
	t.Helper()
	cfg.URL, cfg.Name, cfg.Owner, cfg.OwnerLabel = url, name, owner, "label of "+owner
	q, err := Open(context.Background(), cfg, nil)
	if err == nil {
		t.Cleanup(q.Close)
	}
	return q, err
}

// wantOwned fails t unless err is the refusal naming owner.
func wantOwned(t *testing.T, err error, name, owner, self string) {
	t.Helper()
	var oe *OwnedError
	if !errors.As(err, &oe) || !errors.Is(err, ErrOwned) {
		t.Fatalf("Open for database %s: %v, want an *OwnedError (ErrOwned): the queue belongs to %s", self, err, owner)
	}
	if oe.Owner != owner || oe.Self != self || oe.OwnerLabel != "label of "+owner {
		t.Errorf("OwnedError names owner %q (%q) and self %q, want %q and %q", oe.Owner, oe.OwnerLabel, oe.Self, owner, self)
	}
	for _, want := range []string{`queue name "` + name + `"`, "belongs to database " + owner + " (label of " + owner + ")",
		"this process's database is " + self, strings.ToUpper(name) + "_ARTIFACTS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestOwnership(t *testing.T) {
	for server, url := range natsServers(t) {
		t.Run(server, func(t *testing.T) {
			t.Run("first owner kept, another refused", func(t *testing.T) {
				name := testQueueName(t, url)
				a, err := openAt(t, url, name, "db-a", Config{MaxBytes: 8 << 20})
				if err != nil {
					t.Fatalf("first Open: %v", err)
				}
				mustPublish(t, a, "org-1", artifacts(2, 10))

				// Another database: refused, and nothing of A's queue changed
				// (not even the stream's size limit it asked for).
				_, err = openAt(t, url, name, "db-b", Config{MaxBytes: 16 << 20})
				wantOwned(t, err, name, "db-a", "db-b")
				info, err := a.stream.Info(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if info.Config.MaxBytes != 8<<20 || info.State.Msgs != 1 {
					t.Errorf("after the refusal A's stream has MaxBytes %d and %d messages, want %d and 1",
						info.Config.MaxBytes, info.State.Msgs, 8<<20)
				}

				// The owner again (a restart, another process of A): accepted.
				if _, err := openAt(t, url, name, "db-a", Config{MaxBytes: 8 << 20}); err != nil {
					t.Errorf("reopening for the owner: %v", err)
				}
				// Another queue name on the same server: B's own.
				if _, err := openAt(t, url, testQueueName(t, url), "db-b", Config{}); err != nil {
					t.Errorf("another queue name for db-b: %v", err)
				}
			})

			t.Run("streams of an older Vigil adopted", func(t *testing.T) {
				name := testQueueName(t, url)
				// An older Vigil recorded no owner (here: Open without one).
				old, err := Open(context.Background(), Config{URL: url, Name: name}, nil)
				if err != nil {
					t.Fatal(err)
				}
				mustPublish(t, old, "org-1", artifacts(3, 10))
				old.Close()

				q, err := openAt(t, url, name, "db-c", Config{})
				if err != nil {
					t.Fatalf("opening ownerless streams: %v, want them adopted", err)
				}
				c := newCollector(3)
				consume(t, q, ConsumeOptions{}, c.handle)
				c.await(t) // the pending messages are kept and delivered

				kv, err := q.js.KeyValue(context.Background(), q.names.OwnerBucket)
				if err != nil {
					t.Fatal(err)
				}
				e, err := kv.Get(context.Background(), "database")
				if err != nil {
					t.Fatalf("owner record: %v", err)
				}
				var rec owner
				if err := json.Unmarshal(e.Value(), &rec); err != nil || rec.Database != "db-c" || rec.Label != "label of db-c" {
					t.Errorf("owner record %s (%v), want database db-c with its label", e.Value(), err)
				}
				_, err = openAt(t, url, name, "db-d", Config{})
				wantOwned(t, err, name, "db-c", "db-d")
			})

			t.Run("concurrent first opens agree", func(t *testing.T) {
				name := testQueueName(t, url)
				const n = 6
				errs := make([]error, n)
				var wg sync.WaitGroup
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						q, err := Open(context.Background(), Config{URL: url, Name: name, Owner: "db-" + string(rune('a'+i))}, nil)
						if err == nil {
							q.Close()
						}
						errs[i] = err
					}()
				}
				wg.Wait()
				winners, owners := 0, map[string]bool{}
				for i, err := range errs {
					var oe *OwnedError
					switch {
					case err == nil:
						winners++
						owners["db-"+string(rune('a'+i))] = true
					case errors.As(err, &oe):
						owners[oe.Owner] = true
					default:
						t.Errorf("Open %d: %v", i, err)
					}
				}
				if winners != 1 || len(owners) != 1 {
					t.Errorf("%d of %d concurrent first opens succeeded, the others saw owners %v; want exactly one, named by all", winners, n, owners)
				}
			})
		})
	}
}

// TestOwnershipEmbedded checks the embedded server too: its data dir
// holds the queue of the database that first used it.
func TestOwnershipEmbedded(t *testing.T) {
	dir := t.TempDir()
	q, err := Open(context.Background(), Config{Dir: dir, Owner: "db-a"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	q.Close()
	q, err = Open(context.Background(), Config{Dir: dir, Owner: "db-a"}, nil)
	if err != nil {
		t.Fatalf("reopening for the owner: %v", err)
	}
	q.Close()
	_, err = Open(context.Background(), Config{Dir: dir, Owner: "db-b"}, nil)
	var oe *OwnedError
	if !errors.As(err, &oe) || oe.Owner != "db-a" {
		t.Fatalf("Open for another database: %v, want an *OwnedError naming db-a", err)
	}
}
