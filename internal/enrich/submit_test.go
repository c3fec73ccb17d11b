package enrich

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
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

// TestQueuedLookupKeepsNoNodesAlive: the nodes of an artifact that waits
// for a look-up are kept packed in one string of the queue's own, not as
// the parsed nodes' strings: a full queue (100,000 artifacts on an
// internet-facing host, where every scanner's address waits for RDAP)
// held each artifact's node strings, and whatever memory they shared,
// for the collector to mark at every cycle.
func TestQueuedLookupKeepsNoNodesAlive(t *testing.T) {
	h := newHarness(t, Config{})
	// The parser's strings share the memory of their line.
	line := make([]byte, 64<<10)
	copy(line, "81.2.69.142")
	gone := weak.Make(&line[0])
	addr := unsafe.String(&line[0], len("81.2.69.142"))
	res := h.e.Enrich(context.Background(), testOrg, settings(nil), []*vigil.Artifact{{ID: "a1"}},
		[][]vigil.NodeRef{{{Type: vigil.NodeIP, Value: addr, Key: true}}})
	if dropped := h.e.Submit(testOrg, res); dropped != 0 {
		t.Fatalf("dropped %d", dropped)
	}
	line, addr, res = nil, "", nil
	runtime.GC()
	runtime.GC()
	if gone.Value() != nil {
		t.Fatal("the line is still alive after its batch: the queued look-up holds its nodes")
	}
	if n := gauge(t, h.e.m.queued); n != 1 {
		t.Fatalf("queue length = %v, want the look-up queued", n)
	}
}

// TestPackNodes: what a queued artifact's enrichment is rebuilt from is
// its nodes as they were, in order, keys marked, whatever bytes they hold.
func TestPackNodes(t *testing.T) {
	for _, refs := range [][]vigil.NodeRef{
		nil,
		{{Type: vigil.NodeIP, Value: "81.2.69.142", Key: true}},
		{{Type: vigil.NodeIP, Value: "2001:db8::1"}, {Type: "domain", Value: "evil.example", Key: true}, {Type: "user", Value: ""}},
		{{Type: "user", Value: "a\x00b\x01" + strings.Repeat("x", 300)}, {Type: "", Value: "ü"}},
	} {
		got := unpackNodes(packNodes(refs))
		if !slices.Equal(got, refs) {
			t.Errorf("unpackNodes(packNodes(%+v)) = %+v", refs, got)
		}
	}
}

// TestQueuedLookupObjects: a full look-up queue is a few heap objects per
// artifact waiting, whatever its nodes: the collector marks each of them
// at every cycle for as long as the rate limit keeps them queued (100,000
// artifacts on an internet-facing host). An artifact of three nodes queued
// was seven objects (its nodes' strings and their slice, its id, its
// job's slice of artifacts) and is four: itself, its id and nodes in one
// string, its job, and the job's look-up key.
func TestQueuedLookupObjects(t *testing.T) {
	const n, chunk = 20_000, 1000
	h := newHarness(t, Config{QueueSize: 2 * n})
	objects := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapObjects
	}
	submit := func(from int) {
		arts := make([]*vigil.Artifact, chunk)
		nodes := make([][]vigil.NodeRef, chunk)
		for k := range chunk {
			i := from + k
			arts[k] = &vigil.Artifact{ID: vigil.NewID()}
			a := fmt.Sprintf("81.%d.%d.%d", i>>16&255, i>>8&255, i&255)
			nodes[k] = []vigil.NodeRef{{Type: vigil.NodeIP, Value: a, Key: true}, ip("203.0.113.10"), {Type: vigil.NodeHost, Value: "edge-01"}}
		}
		res := h.e.Enrich(context.Background(), testOrg, settings(nil), arts, nodes)
		if dropped := h.e.Submit(testOrg, res); dropped != 0 {
			t.Fatalf("dropped %d", dropped)
		}
	}
	submit(n) // the queue's lanes and maps made
	before := objects()
	for i := 0; i < n; i += chunk {
		submit(i)
	}
	per := (float64(objects()) - float64(before)) / n
	t.Logf("%.1f heap objects per queued artifact", per)
	if per > 5 {
		t.Errorf("%.1f heap objects per queued artifact, want at most 5", per)
	}
	if q := gauge(t, h.e.m.queued); q < n {
		t.Fatalf("queue length = %v, want %d", q, n)
	}
}
