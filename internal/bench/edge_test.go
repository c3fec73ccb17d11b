package bench

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/parse"
)

// TestEdgeLines: the internet-edge mix is the internet-unique mix with 3 %
// Suricata alerts of the edge signatures from the scanners of its blocks
// and failed logins, every line parsed as its sensor's, each alert a
// medium or low finding of its signature; the planted sources do what
// they are planted for, on top.
func TestEdgeLines(t *testing.T) {
	lines := edgeLines(20000, time.Now())
	planted := map[string]string{}
	for _, p := range plantedSources() {
		planted[p.addr] = p.what
	}
	bySource := map[string]int{}
	scanners, alerted := map[string]bool{}, map[string]bool{}
	sigs := map[string]bool{}
	did := map[string][]string{} // planted source → what its lines are
	alert := detect.SuricataAlert{}
	for _, l := range lines {
		res := parse.Parse(l.Source, []byte(l.Raw), time.Now())
		if !res.Parsed {
			t.Fatalf("not parsed: %s", l.Raw)
		}
		src, _ := res.Event["source.ip"].(string)
		if l.Source == "dns" {
			bySource["dns"]++
			continue
		}
		if src == "" {
			t.Fatalf("no source.ip in %s", l.Raw)
		}
		if _, ok := planted[src]; ok {
			did[src] = append(did[src], l.Source+":"+res.Event["event.action"].(string))
			continue
		}
		bySource[l.Source]++
		if l.Source != "suricata" {
			scanners[src] = true
			continue
		}
		if !scanners[src] {
			t.Errorf("alert from %s, which no block or failed login before it named", src)
		}
		if alerted[src] {
			t.Errorf("second alert from %s: one alert a scanner", src)
		}
		alerted[src] = true
		ev := &detect.Event{ArtifactID: "a", Source: l.Source, At: time.Now(), Fields: res.Event, Raw: l.Raw}
		sg := alert.Signals(ev)
		if len(sg) != 1 {
			t.Fatalf("alert %s: %d signals", l.Raw, len(sg))
		}
		f := alert.DescribeContext(sg[0].Key, alert.Context(ev), vigil.WindowState{Count: 1})
		if f.Severity != vigil.SeverityMedium && f.Severity != vigil.SeverityLow || f.Type != "recon" && f.Type != "network" ||
			!strings.HasPrefix(f.Rollup, "Suricata: ET ") {
			t.Errorf("alert %s: a %s %s finding rolled up as %q, want a medium or low scan", l.Raw, f.Severity, f.Type, f.Rollup)
		}
		sigs[f.Rollup] = true
	}
	n := float64(len(lines) - 200)
	for src, want := range map[string]float64{"firewall": 0.45, "dns": 0.35, "auth": 0.17, "suricata": 0.03} {
		if got := float64(bySource[src]) / n; got < want-0.01 || got > want+0.01 {
			t.Errorf("%s is %.3f of the lines, want %.2f", src, got, want)
		}
	}
	if len(sigs) != len(edgeScans) {
		t.Errorf("%d signatures alerted, want all %d", len(sigs), len(edgeScans))
	}
	for addr, what := range planted {
		got := did[addr]
		failed := len(slices.DeleteFunc(slices.Clone(got), func(s string) bool { return !strings.HasPrefix(s, "auth:ssh_login") }))
		if !slices.Contains(got, "firewall:block") || !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "suricata:") }) {
			t.Errorf("%s (%s): %v, want blocks and a scan alert", addr, what, got)
		}
		if strings.HasPrefix(what, "brute force") != (failed >= 8) {
			t.Errorf("%s (%s): %d sshd lines %v", addr, what, failed, got)
		}
	}
	if !strings.Contains(edgeIntelFeed(), "198.51.100.41\n") {
		t.Errorf("feed %q, want the planted threat-intel sources", edgeIntelFeed())
	}
}

// TestRenumberTheEdgeMix: from the second pass on the scanners of the
// alerts move with those of the blocks and failed logins; the planted
// sources stay who they are.
func TestRenumberTheEdgeMix(t *testing.T) {
	lines := edgeLines(2000, time.Now())
	b := &bench{f: Config{Files: "internet-edge"}}
	var body []byte
	for _, l := range lines {
		js, _ := json.Marshal(l.Raw)
		body = append(append(body, js...), '\n')
	}
	again := strings.Split(strings.TrimSpace(string(b.renumber(body, 1, false))), "\n")
	moved, kept := 0, 0
	for i, raw := range again {
		var l string
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatal(err)
		}
		if lines[i].Source != "suricata" {
			continue
		}
		res := parse.Parse("suricata", []byte(l), time.Now())
		src, _ := res.Event["source.ip"].(string)
		switch {
		case strings.HasPrefix(src, "12."):
			moved++
		case strings.HasPrefix(src, "198.51.100."):
			kept++
		default:
			t.Errorf("alert source %s in the second pass", src)
		}
	}
	if moved == 0 || kept == 0 {
		t.Errorf("%d alerts renumbered, %d planted kept: want both", moved, kept)
	}
}

// TestPackLines: the replayed lines are packed — the same lines in the
// same order, their texts one allocation: the embedded server's collector
// marks the bench's heap at every cycle, and the edge mix's 200,000 lines
// were as many objects of it.
func TestPackLines(t *testing.T) {
	lines, _, err := linesOf("internet-edge", time.Unix(1_700_000_000, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(lines)
	packLines(lines)
	if !slices.Equal(lines, want) {
		t.Fatal("packing changed the lines")
	}
	b := &bench{f: Config{Files: "internet-edge", Batch: 1000, Clients: 1, Times: "live", Via: ViaHTTP, Duration: time.Second}, rep: &Report{}}
	if err := b.loadLines(); err != nil {
		t.Fatal(err)
	}
	if len(b.lines) != len(want) {
		t.Fatalf("%d lines, want %d", len(b.lines), len(want))
	}
	for i := 1; i < len(b.lines); i++ {
		prev, cur := b.lines[i-1].Raw, b.lines[i].Raw
		if len(cur) > 0 && unsafe.Add(unsafe.Pointer(unsafe.StringData(prev)), len(prev)) != unsafe.Pointer(unsafe.StringData(cur)) {
			t.Fatalf("line %d's text is not packed after line %d's", i, i-1)
		}
	}
}
