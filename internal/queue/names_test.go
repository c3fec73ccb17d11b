package queue

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

func TestNamesFor(t *testing.T) {
	// The default must stay exactly what Vigil used before queue names, or
	// an upgraded deployment would lose sight of its pending messages.
	legacy := Names{
		Queue: "vigil", Stream: "VIGIL_ARTIFACTS", Subject: "vigil.artifacts.in",
		DeadStream: "VIGIL_DEAD", DeadSubject: "vigil.dead.artifacts",
		Consumer: "vigil-workers", Committed: "vigil.committed.", OwnerBucket: "VIGIL_OWNER",
		WebhookStream: "VIGIL_WEBHOOKS", WebhookSubject: "vigil.webhooks.", WebhookConsumer: "vigil-webhook-",
	}
	tests := []struct {
		name string
		want Names
	}{
		{"", legacy},
		{"vigil", legacy},
		{"VIGIL", legacy},
		{"soc-b", Names{
			Queue: "soc-b", Stream: "SOC-B_ARTIFACTS", Subject: "soc-b.artifacts.in",
			DeadStream: "SOC-B_DEAD", DeadSubject: "soc-b.dead.artifacts",
			Consumer: "soc-b-workers", Committed: "soc-b.committed.", OwnerBucket: "SOC-B_OWNER",
			WebhookStream: "SOC-B_WEBHOOKS", WebhookSubject: "soc-b.webhooks.", WebhookConsumer: "soc-b-webhook-",
		}},
		{"Team_2", Names{
			Queue: "team_2", Stream: "TEAM_2_ARTIFACTS", Subject: "team_2.artifacts.in",
			DeadStream: "TEAM_2_DEAD", DeadSubject: "team_2.dead.artifacts",
			Consumer: "team_2-workers", Committed: "team_2.committed.", OwnerBucket: "TEAM_2_OWNER",
			WebhookStream: "TEAM_2_WEBHOOKS", WebhookSubject: "team_2.webhooks.", WebhookConsumer: "team_2-webhook-",
		}},
		{strings.Repeat("a", MaxNameLen), Names{
			Queue: strings.Repeat("a", 32), Stream: strings.Repeat("A", 32) + "_ARTIFACTS", Subject: strings.Repeat("a", 32) + ".artifacts.in",
			DeadStream: strings.Repeat("A", 32) + "_DEAD", DeadSubject: strings.Repeat("a", 32) + ".dead.artifacts",
			Consumer: strings.Repeat("a", 32) + "-workers", Committed: strings.Repeat("a", 32) + ".committed.", OwnerBucket: strings.Repeat("A", 32) + "_OWNER",
			WebhookStream: strings.Repeat("A", 32) + "_WEBHOOKS", WebhookSubject: strings.Repeat("a", 32) + ".webhooks.",
			WebhookConsumer: strings.Repeat("a", 32) + "-webhook-",
		}},
	}
	for _, tt := range tests {
		t.Run("name="+tt.name, func(t *testing.T) {
			got, err := NamesFor(tt.name)
			if err != nil {
				t.Fatalf("NamesFor(%q): %v", tt.name, err)
			}
			if got != tt.want {
				t.Errorf("NamesFor(%q) =\n%+v\nwant\n%+v", tt.name, got, tt.want)
			}
		})
	}
}

func TestNamesForRefusesBadNames(t *testing.T) {
	for _, name := range []string{
		"a.b",      // a subject token separator
		"a*", "a>", // subject wildcards
		"a b", "tab\t", // white space
		"ä",   // not ASCII
		"a/b", // a path separator in stream file names
		strings.Repeat("a", MaxNameLen+1),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NamesFor(name)
			if err == nil {
				t.Fatalf("NamesFor(%q) = nil error, want a refusal", name)
			}
			if !strings.Contains(err.Error(), "letters, digits, '-' or '_'") {
				t.Errorf("error %q does not say what a queue name may hold", err)
			}
			if _, err := Open(context.Background(), Config{Name: name, Dir: t.TempDir()}, nil); err == nil {
				t.Errorf("Open with queue name %q succeeded", name)
			}
		})
	}
}

// TestQueueNameSeparates checks that a queue opened under a name uses
// that name's streams and consumer only.
func TestQueueNameSeparates(t *testing.T) {
	q := mustOpen(t, Config{Name: "soc-b"})
	mustPublish(t, q, "org-1", artifacts(3, 10))
	ctx := context.Background()
	s, err := q.js.Stream(ctx, "SOC-B_ARTIFACTS")
	if err != nil {
		t.Fatalf("stream SOC-B_ARTIFACTS: %v", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 || len(info.Config.Subjects) != 1 || info.Config.Subjects[0] != "soc-b.artifacts.in" {
		t.Errorf("SOC-B_ARTIFACTS holds %d messages on %v, want 1 on [soc-b.artifacts.in]", info.State.Msgs, info.Config.Subjects)
	}
	if _, err := s.Consumer(ctx, "soc-b-workers"); err != nil {
		t.Errorf("consumer soc-b-workers: %v", err)
	}
	if _, err := q.js.Stream(ctx, "SOC-B_DEAD"); err != nil {
		t.Errorf("stream SOC-B_DEAD: %v", err)
	}
	if _, err := q.js.Stream(ctx, "VIGIL_ARTIFACTS"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("stream VIGIL_ARTIFACTS: %v, want it not created", err)
	}
	// The committed notices travel under the name too: a publish waiting
	// for the workers is told when they are done.
	c := newCollector(3 + 2)
	consume(t, q, ConsumeOptions{}, c.handle)
	processed, err := q.Publish(ctx, "org-1", artifacts(2, 10), testWait)
	if err != nil || !processed {
		t.Fatalf("Publish waiting for the workers = %v, %v; want true, nil", processed, err)
	}
	c.await(t)
}
