package enrich

import (
	"context"
	"runtime"
	"testing"
	"unsafe"
	"weak"

	"github.com/vigil-soc/vigil"
)

// TestQueuedLookupKeepsNoMessageAlive: an artifact's id shares the memory
// of its whole queue message (queue.decode decodes every string of a
// message into one buffer); a look-up that waits in the queue keeps a
// copy, so the message's memory is freed once the batch is done.
func TestQueuedLookupKeepsNoMessageAlive(t *testing.T) {
	h := newHarness(t, Config{})
	// No workers: the look-up stays queued.
	msg := make([]byte, 256<<10)
	copy(msg, "0193a1b2-0000-7000-8000-000000000001")
	gone := weak.Make(&msg[0])
	id := unsafe.String(&msg[0], 36)
	res := h.e.Enrich(context.Background(), testOrg, settings(nil), []*vigil.Artifact{{ID: id}},
		[][]vigil.NodeRef{{ip("81.2.69.142")}})
	if dropped := h.e.Submit(testOrg, res); dropped != 0 {
		t.Fatalf("dropped %d", dropped)
	}
	msg, id, res = nil, "", nil
	runtime.GC()
	runtime.GC()
	if gone.Value() != nil {
		t.Fatal("the message is still alive after its batch: the queued look-up holds it")
	}
	if n := gauge(t, h.e.m.queued); n != 1 {
		t.Fatalf("queue length = %v, want the look-up queued", n)
	}
}
