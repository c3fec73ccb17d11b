package suppress

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/parse"
)

// fakeStore holds one org's suppressions and settings and counts reads.
type fakeStore struct {
	mu       sync.Mutex
	sups     []*vigil.Suppression // newest first, as listed
	settings vigil.EnrichmentSettings
	reads    int
	counted  []vigil.SuppressedSignal
	err      error
}

func (f *fakeStore) ListSuppressions(_ context.Context, _ string, p vigil.Page) ([]*vigil.Suppression, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.err != nil {
		return nil, 0, f.err
	}
	end := min(len(f.sups), p.Offset+p.Limit)
	return f.sups[min(p.Offset, end):end], len(f.sups), nil
}

func (f *fakeStore) EnrichmentSettings(context.Context, string) (*vigil.EnrichmentSettings, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.settings
	return &s, nil
}

func (f *fakeStore) CountSuppressed(_ context.Context, _ string, hits []vigil.SuppressedSignal, _ time.Time) ([]vigil.SuppressedSignal, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counted = append(f.counted, hits...)
	return hits, nil
}

// add puts a suppression with conditions cond first in the list (the
// newest).
func (f *fakeStore) add(id, cond string, mod func(*vigil.Suppression)) {
	s := &vigil.Suppression{ID: id, Name: id, Enabled: true, Conditions: json.RawMessage(cond)}
	if mod != nil {
		mod(s)
	}
	f.mu.Lock()
	f.sups = append([]*vigil.Suppression{s}, f.sups...)
	f.mu.Unlock()
}

// clock is a settable time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestCache(f *fakeStore) (*Cache, *clock) {
	c := NewCache(f, 10*time.Second, nil)
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	c.now = clk.now
	return c, clk
}

func scanEvent(src string) *detect.Event {
	return &detect.Event{ArtifactID: "art-" + src, Source: "firewall", Fields: parse.Event{"source.ip": src, "destination.port": int64(22)}}
}

func scanSignal(src string) *vigil.Signal {
	return &vigil.Signal{Key: src, ArtifactID: "art-" + src, Member: "22",
		Nodes: []vigil.NodeRef{{Type: vigil.NodeIP, Value: src, Key: true}}}
}

func mustScreen(t *testing.T, c *Cache) *Screen {
	t.Helper()
	s, err := c.Screen(t.Context(), "org")
	if err != nil {
		t.Fatalf("Screen: %v", err)
	}
	return s
}

func TestScreenSuppressions(t *testing.T) {
	f := &fakeStore{}
	f.add("ours", `{"all":[{"field":"signal.detector","op":"eq","value":"port_scan"},{"field":"signal.source_ip","op":"cidr","value":"10.9.0.0/16"}]}`, nil)
	f.add("off", `{"field":"signal.source_ip","op":"eq","value":"192.0.2.1"}`, func(s *vigil.Suppression) { s.Enabled = false })
	f.add("broad", `{"field":"node.value","op":"cidr","value":"10.0.0.0/8"}`, nil)
	c, _ := newTestCache(f)
	s := mustScreen(t, c)
	for _, tc := range []struct {
		detector, src string
		admit         bool
	}{
		{"port_scan", "10.9.1.2", false},        // both match: the older, "ours", is credited
		{"host_sweep", "10.1.1.1", false},       // "broad"
		{"port_scan", "192.0.2.1", true},        // "off" is disabled
		{"port_scan", "::ffff:10.9.0.1", false}, // mapped address, canonical
		{"port_scan", "203.0.113.7", true},
	} {
		if got := s.Admit(tc.detector, scanEvent(tc.src), scanSignal(tc.src)); got != tc.admit {
			t.Errorf("Admit(%s, %s) = %v, want %v", tc.detector, tc.src, got, tc.admit)
		}
	}
	hits := s.Hits()
	want := []string{"ours", "broad", "ours"}
	if len(hits) != len(want) {
		t.Fatalf("hits %+v, want %v", hits, want)
	}
	for i, h := range hits {
		if h.SuppressionID != want[i] || h.Detector == "" || h.Key == "" || h.ArtifactID == "" {
			t.Errorf("hit %d = %+v, want credited to %s with its detector, key and artifact", i, h, want[i])
		}
	}
	fresh, err := c.Record(t.Context(), "org", s)
	if err != nil || len(fresh) != 3 || len(f.counted) != 3 {
		t.Errorf("Record = %v, %v; store counted %d; want the 3 hits", fresh, err, len(f.counted))
	}
}

func TestScreenExpiry(t *testing.T) {
	f := &fakeStore{}
	c, clk := newTestCache(f)
	until := clk.t.Add(5 * time.Second)
	f.add("maintenance", `{"field":"signal.detector","op":"eq","value":"port_scan"}`, func(s *vigil.Suppression) { s.ExpiresAt = &until })
	if mustScreen(t, c).Admit("port_scan", scanEvent("10.0.0.1"), scanSignal("10.0.0.1")) {
		t.Error("suppressed before its expiry: admitted")
	}
	clk.t = until // cached, but expired: a screen judges at its own time
	if !mustScreen(t, c).Admit("port_scan", scanEvent("10.0.0.1"), scanSignal("10.0.0.1")) {
		t.Error("at its expiry: still suppressed")
	}
}

func TestScreenEngineEvents(t *testing.T) {
	f := &fakeStore{}
	c, _ := newTestCache(f)
	ev := &detect.Event{ArtifactID: "a", Source: "suricata", Fields: parse.Event{"rule.name": "SURICATA TCPv4 invalid checksum"}}
	sg := &vigil.Signal{Key: "2200074|10.0.0.1", ArtifactID: "a", EngineEvent: true}
	s := mustScreen(t, c)
	if s.Admit("suricata_alert", ev, sg) {
		t.Error("engine event admitted by default")
	}
	if n := s.EngineEvents()["suricata_alert"]; n != 1 || len(s.Hits()) != 0 {
		t.Errorf("engine events %v, hits %v; want 1 left out, credited to no suppression", s.EngineEvents(), s.Hits())
	}
	f.settings.SuricataEngineEvents = true
	c.Invalidate("org")
	if !mustScreen(t, c).Admit("suricata_alert", ev, sg) {
		t.Error("engine event left out in an org that promotes them")
	}
	// Promoted, an engine event is a signal like any other.
	f.add("checksums", `{"field":"signal.signature","op":"contains","value":"invalid checksum"}`, nil)
	c.Invalidate("org")
	if mustScreen(t, c).Admit("suricata_alert", ev, sg) {
		t.Error("promoted engine event not suppressed by a matching suppression")
	}
}

func TestCacheTTLAndInvalidate(t *testing.T) {
	f := &fakeStore{}
	c, clk := newTestCache(f)
	src := "10.0.0.1"
	if !mustScreen(t, c).Admit("port_scan", scanEvent(src), scanSignal(src)) || f.reads != 1 {
		t.Fatalf("first screen: reads %d", f.reads)
	}
	// Written by another process: not seen until the TTL runs out.
	f.add("new", `{"field":"signal.source_ip","op":"eq","value":"10.0.0.1"}`, nil)
	clk.t = clk.t.Add(9 * time.Second)
	if !mustScreen(t, c).Admit("port_scan", scanEvent(src), scanSignal(src)) || f.reads != 1 {
		t.Errorf("within the TTL: reads %d, want the cached screen", f.reads)
	}
	clk.t = clk.t.Add(time.Second)
	if mustScreen(t, c).Admit("port_scan", scanEvent(src), scanSignal(src)) || f.reads != 2 {
		t.Errorf("after the TTL: reads %d, want the new suppression applied", f.reads)
	}
	// Written through this process: seen at once.
	f.mu.Lock()
	f.sups = nil
	f.mu.Unlock()
	c.Invalidate("org")
	if !mustScreen(t, c).Admit("port_scan", scanEvent(src), scanSignal(src)) || f.reads != 3 {
		t.Errorf("after Invalidate: reads %d, want the deletion applied", f.reads)
	}
	// A read that fails fails the batch (which is delivered again).
	f.err = errors.New("database down")
	c.Invalidate("org")
	if _, err := c.Screen(t.Context(), "org"); err == nil {
		t.Error("Screen over a failing store: no error")
	}
}

// TestScreenInvalidConditionsLeftOut: a suppression whose conditions no
// longer compile suppresses nothing, and the others still apply.
func TestScreenInvalidConditionsLeftOut(t *testing.T) {
	f := &fakeStore{}
	f.add("stale", `{"field":"incident.severity","op":"eq","value":"high"}`, nil)
	f.add("good", `{"field":"signal.detector","op":"eq","value":"port_scan"}`, nil)
	c, _ := newTestCache(f)
	s := mustScreen(t, c)
	if s.Admit("port_scan", scanEvent("10.0.0.1"), scanSignal("10.0.0.1")) || s.Hits()[0].SuppressionID != "good" {
		t.Errorf("hits %v, want the valid suppression applied", s.Hits())
	}
}
