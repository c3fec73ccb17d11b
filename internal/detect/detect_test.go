package detect

import (
	"fmt"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

// sigsAt returns signals at the given offsets in seconds from refTime,
// member "m<i>".
func sigsAt(secs ...int) []vigil.Signal {
	out := make([]vigil.Signal, len(secs))
	for i, s := range secs {
		out[i] = vigil.Signal{ArtifactID: fmt.Sprint(i), At: refTime.Add(time.Duration(s) * time.Second), Member: fmt.Sprintf("m%d", i)}
	}
	return out
}

// chunkSizes returns the sizes of split's chunks.
func chunkSizes(chunks [][]vigil.Signal) []int {
	var out []int
	for _, c := range chunks {
		out = append(out, len(c))
	}
	return out
}

func TestSplit(t *testing.T) {
	w := Window{Span: 5 * time.Minute, MinCount: 5}
	for _, c := range []struct {
		name string
		secs []int
		w    Window
		want []int
	}{
		{"below threshold, one chunk", []int{0, 10, 20, 30}, w, []int{4}},
		{"ends at the crossing, then grows", []int{0, 10, 20, 30, 40, 50, 60}, w, []int{5, 2}},
		{"two bursts an hour apart", []int{0, 10, 20, 30, 40, 3600, 3610, 3620, 3630, 3640, 3650}, w, []int{5, 5, 1}},
		// A slow burst longer than Span: every chunk's newest stays within
		// Span of the previous chunk's, so the burst stays active.
		{"slow burst", []int{0, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 660, 720, 780, 840, 900}, w, []int{5, 5, 5, 1}},
		{"4 per window never crosses", []int{0, 100, 200, 300, 400, 500, 600}, w, []int{4, 3}},
		{"sparse, never crossing", []int{0, 290, 580, 870, 1160}, w, []int{2, 1, 1, 1}},
		{"distinct threshold", []int{0, 1, 2, 3}, Window{Span: time.Minute, MinCount: 3, MinDistinct: 3}, []int{3, 1}},
		{"in order: ends where the order completes", []int{0, 1, 2, 3}, Window{Span: time.Minute, MinCount: 1, MinDistinct: 2, Order: []string{"m0", "m2"}}, []int{3, 1}},
		{"out of order never crosses", []int{0, 1, 2, 3}, Window{Span: time.Minute, MinCount: 1, MinDistinct: 2, Order: []string{"m2", "m0"}}, []int{4}},
		{"one signal fires at once", []int{0, 5, 10}, Window{Span: time.Hour, MinCount: 1}, []int{1, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := chunkSizes(split(sigsAt(c.secs...), c.w))
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("chunks %v, want %v", got, c.want)
			}
		})
	}
}

// TestSplitChunksFitTheWindow checks split's invariants on many random
// sequences: chunks keep the order, each lies within Span of its newest
// signal, and a chunk that continues a burst ends within Span of the
// previous chunk's newest.
func TestSplitChunksFitTheWindow(t *testing.T) {
	w := Window{Span: time.Minute, MinCount: 4}
	for seed := range 200 {
		var secs []int
		at := 0
		for i := range 30 + seed%20 {
			at += (seed*7 + i*13) % 50
			secs = append(secs, at)
		}
		sigs := sigsAt(secs...)
		chunks := split(sigs, w)
		n := 0
		var prevNewest time.Time
		for _, c := range chunks {
			first, newest := c[0].At, c[len(c)-1].At
			if newest.Sub(first) > w.Span {
				t.Fatalf("seed %d: chunk spans %v > %v", seed, newest.Sub(first), w.Span)
			}
			if !prevNewest.IsZero() && first.Sub(prevNewest) <= w.Span && newest.Sub(prevNewest) > w.Span {
				t.Fatalf("seed %d: a chained chunk ends %v after the previous one", seed, newest.Sub(prevNewest))
			}
			prevNewest = newest
			n += len(c)
		}
		if n != len(sigs) {
			t.Fatalf("seed %d: chunks hold %d of %d signals", seed, n, len(sigs))
		}
	}
}

// TestDetections: grouping by (detector, key), time order, defaults of
// signals, requirements last, contexts.
func TestDetections(t *testing.T) {
	fail := func(src string, sec int) *Event {
		ev := event(parse.Event{"event.action": "ssh_login", "event.outcome": "failure", "process.name": "sshd", "source.ip": src, "user.name": "root",
			"vigil.attempt.role": "attempt", "vigil.attempt.count": int64(1)})
		ev.At = refTime.Add(time.Duration(sec) * time.Second)
		return ev
	}
	ok := event(parse.Event{"event.action": "ssh_login", "event.outcome": "success", "source.ip": "203.0.113.7", "user.name": "root", "host.name": "h"})
	alert := event(alertFields("2013504", "ET POLICY x", "Not Suspicious Traffic", 3, "172.17.0.2", "192.0.2.1"))
	evs := []*Event{ok, fail("203.0.113.7", 30), fail("198.51.100.1", 0), fail("203.0.113.7", 10), alert, fail("203.0.113.7", 20)}
	ds := NewEngine(SSHSuccess{}, SSHBruteForce{}, SuricataAlert{}).Detections(evs)
	var got []string
	for _, d := range ds {
		s := d.Detector + " " + d.Key + fmt.Sprintf(" %d", len(d.Signals))
		for _, sg := range d.Signals {
			if sg.ArtifactID == "" || sg.At.IsZero() {
				t.Errorf("%s: signal without artifact or time", d.Detector)
			}
		}
		got = append(got, s)
	}
	want := "[ssh_bruteforce 203.0.113.7 3 ssh_bruteforce 198.51.100.1 1 suricata_alert 2013504|172.17.0.2 1 ssh_success_after_bruteforce 203.0.113.7 1]"
	if fmt.Sprint(got) != want {
		t.Fatalf("detections %v, want %s", got, want)
	}
	if s := ds[0].Signals; !s[0].At.Before(s[1].At) || !s[1].At.Before(s[2].At) {
		t.Errorf("signals not in time order")
	}
	if f := ds[2].Describe(ds[2].Key, window(1, []string{"192.0.2.1"})); f.Title != "Suricata: ET POLICY x from 172.17.0.2 to 192.0.2.1" {
		t.Errorf("alert described without its context: %+v", f)
	}
}

// screenFunc is a Screen of a function.
type screenFunc func(detector string, ev *Event, sg *vigil.Signal) bool

func (f screenFunc) Admit(detector string, ev *Event, sg *vigil.Signal) bool {
	return f(detector, ev, sg)
}

// TestScreened: the screen judges every signal, with its detector, event
// and defaults filled in, before it is grouped; what it refuses is in no
// detection.
func TestScreened(t *testing.T) {
	fail := func(src string, sec int) *Event {
		ev := event(parse.Event{"event.action": "ssh_login", "event.outcome": "failure", "process.name": "sshd", "source.ip": src, "user.name": "root",
			"vigil.attempt.role": "attempt", "vigil.attempt.count": int64(1)})
		ev.At = refTime.Add(time.Duration(sec) * time.Second)
		return ev
	}
	evs := []*Event{fail("10.9.0.1", 0), fail("203.0.113.7", 1), fail("10.9.0.1", 2), fail("203.0.113.7", 3)}
	var judged int
	screen := screenFunc(func(detector string, ev *Event, sg *vigil.Signal) bool {
		judged++
		if detector != NameSSHBruteForce || sg.ArtifactID != ev.ArtifactID || !sg.At.Equal(ev.At) {
			t.Errorf("judged %s %+v of %s at %v", detector, sg, ev.ArtifactID, ev.At)
		}
		return str(ev.Fields, "source.ip") != "10.9.0.1"
	})
	ds := NewEngine(SSHBruteForce{}).Screened(evs, screen)
	if judged != 4 || len(ds) != 1 || ds[0].Key != "203.0.113.7" || len(ds[0].Signals) != 2 {
		t.Fatalf("judged %d, detections %+v; want 4 judged and one detection of 203.0.113.7's 2 signals", judged, ds)
	}
	if all := NewEngine(SSHBruteForce{}).Screened(evs, nil); len(all) != 2 {
		t.Errorf("without a screen: %d detections, want 2", len(all))
	}
}
