package detectionrules

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/parse"
	"github.com/vigil-soc/vigil/internal/sigma"
	"github.com/vigil-soc/vigil/internal/starterrules"
)

func TestSeverity(t *testing.T) {
	for level, want := range map[string]string{"informational": "low", "low": "low", "medium": "medium", "": "medium",
		"high": "high", "critical": "critical"} {
		if got := Severity(level); got != want {
			t.Errorf("Severity(%q) = %q, want %q", level, got, want)
		}
	}
}

func TestObservationType(t *testing.T) {
	for _, c := range []struct {
		tags []string
		want string
	}{
		{[]string{"attack.credential-access", "attack.t1110"}, "auth"},
		{[]string{"attack.t1110", "attack.credential_access"}, "auth"},
		{[]string{"attack.command-and-control"}, "malware"},
		{[]string{"attack.exfiltration", "attack.command-and-control"}, "exfiltration"},
		{[]string{"attack.reconnaissance"}, "recon"},
		{[]string{"attack.initial-access"}, "intrusion"},
		{[]string{"cve.2021-44228"}, "sigma"},
		{nil, "sigma"},
	} {
		if got := ObservationType(c.tags); got != c.want {
			t.Errorf("ObservationType(%v) = %q, want %q", c.tags, got, c.want)
		}
	}
}

// The line is the Elastic integration's test auth.log's (real).
const noIdentLine = "Feb 19 15:30:04 slave22 sshd[18406]: Did not receive identification string from 89.160.20.156"

func event(source, raw string) *detect.Event {
	at := time.Date(2026, 2, 19, 15, 30, 4, 0, time.UTC)
	return &detect.Event{ArtifactID: "a1", Source: source, At: at, Raw: raw, Fields: parse.Parse(source, []byte(raw), at).Event}
}

const noIdentRule = "title: No identification\nid: 0b3f3c8e-7c1e-4e33-9d8a-5c4d3e2f1a10\nlevel: high\ntags: [attack.reconnaissance]\n" +
	"logsource:\n    product: linux\n    service: sshd\ndetection:\n    keywords:\n        - 'Did not receive identification'\n    condition: keywords\n"

// TestCompileRules: enabled detection rules become detectors, each with
// the filters that name it; disabled rules, correlations and rules that
// no longer compile are left out (the latter reported).
func TestCompileRules(t *testing.T) {
	rules := []*vigil.DetectionRule{
		{ID: "r1", Enabled: true, Kind: "detection", Rule: noIdentRule},
		{ID: "r2", Enabled: false, Kind: "detection", Rule: noIdentRule},
		{ID: "r3", Enabled: true, Kind: "detection", Rule: "title: t\nlogsource:\n    product: macos\ndetection:\n    k: [x]\n    condition: k\n"},
		{ID: "r4", Enabled: true, Kind: "correlation", Rule: "title: c\ncorrelation:\n    type: event_count\n    rules: [x]\n    timespan: 5m\n    condition:\n        gte: 3\n"},
	}
	dets, errs := Compile(rules, "")
	if len(dets) != 1 || dets[0].Name() != "sigma:r1" || len(errs) != 2 || errs["r3"] == nil || errs["r4"] == nil {
		t.Fatalf("detectors %d, errors %v", len(dets), errs)
	}
	d := dets[0]
	sigs := d.Signals(event("auth", noIdentLine))
	if len(sigs) != 1 || sigs[0].Key != "89.160.20.156" {
		t.Fatalf("signals %+v", sigs)
	}
	keyed := false
	for _, n := range sigs[0].Nodes {
		if n.Key {
			keyed = n.Type == vigil.NodeIP && n.Value == "89.160.20.156"
		}
	}
	if !keyed {
		t.Errorf("key node missing: %+v", sigs[0].Nodes)
	}
	if len(d.Signals(event("suricata", noIdentLine))) != 0 {
		t.Error("a suricata artifact matched a linux sshd rule")
	}
	at := time.Date(2026, 2, 19, 15, 30, 4, 0, time.UTC)
	f := d.Describe("89.160.20.156", vigil.WindowState{Count: 2, First: at, Last: at.Add(time.Minute)})
	if f.Type != "recon" || f.Severity != "high" || f.Title != "No identification" ||
		!strings.Contains(f.Description, "rule r1, Sigma id 0b3f3c8e-7c1e-4e33-9d8a-5c4d3e2f1a10") || !strings.Contains(f.Description, "2 matches from 89.160.20.156") {
		t.Errorf("finding %+v", f)
	}

	// A filter naming the rule by id is its exception.
	rules = append(rules, &vigil.DetectionRule{ID: "f1", Enabled: true, Kind: "filter", Rule: "title: f\nlogsource:\n    product: linux\n" +
		"filter:\n    rules: [0b3f3c8e-7c1e-4e33-9d8a-5c4d3e2f1a10]\n    s:\n        src_ip|cidr: 89.160.0.0/16\n    condition: s\n"})
	dets, _ = Compile(rules, "")
	if len(dets) != 1 || len(dets[0].Signals(event("auth", noIdentLine))) != 0 {
		t.Error("the filter did not except the line")
	}
}

// TestTemporalOrderedDetector: a temporal_ordered correlation's window
// asks for every base rule in the order the rule names them, and its
// signals name the base rule that matched.
func TestTemporalOrderedDetector(t *testing.T) {
	base := func(name string) string {
		return "title: " + name + "\nname: " + name + "\nlogsource:\n    product: linux\n    service: sshd\ndetection:\n    k:\n        - 'Did not receive identification'\n    condition: k\n"
	}
	rules := []*vigil.DetectionRule{
		{ID: "b1", Enabled: false, Kind: "detection", Rule: base("first")},
		{ID: "b2", Enabled: false, Kind: "detection", Rule: base("second")},
		{ID: "c1", Enabled: true, Kind: "correlation", Rule: "title: c\nlevel: high\ncorrelation:\n    type: temporal_ordered\n    rules: [second, first]\n    group-by: [source.ip]\n    timespan: 10m\n"},
	}
	dets, errs := Compile(rules, "")
	if len(dets) != 1 || len(errs) != 0 {
		t.Fatalf("detectors %d, errors %v", len(dets), errs)
	}
	w := dets[0].Window()
	if w.MinDistinct != 2 || !slices.Equal(w.Order, []string{"second", "first"}) || w.Span != 10*time.Minute {
		t.Errorf("window %+v", w)
	}
	sigs := dets[0].Signals(event("auth", noIdentLine))
	if len(sigs) != 1 || sigs[0].Member != "second" || sigs[0].Key != "89.160.20.156" {
		t.Errorf("signals %+v", sigs)
	}
	f := dets[0].Describe("89.160.20.156", vigil.WindowState{Count: 2, Distinct: 2})
	if !strings.Contains(f.Description, "its 2 rules matched in order (second, then first) for 89.160.20.156 within 10m0s") {
		t.Errorf("description %q", f.Description)
	}
}

// TestScopedSignalsAsBefore: on the datasets' lines, every starter rule
// and bench rule finds through the engine (a batch sorted out by log
// source, lines sketched once for all rules) exactly what it finds
// alone, line by line, with no scope and no sketch.
func TestScopedSignalsAsBefore(t *testing.T) {
	evs := benchEvents(t)
	rules := append(starterrules.ForOrg("t", nil), benchRules(100)...)
	// Rules that match some of the lines, of each kind of pattern.
	for i, text := range []string{
		"logsource:\n    product: linux\ndetection:\n    k:\n        - 'failed PASSWORD'\n        - 'Invalid user'\n    condition: k\n",
		"logsource:\n    product: linux\n    service: sshd\ndetection:\n    k:\n        - 'Failed * for*from'\n    condition: k\n",
		"logsource:\n    product: linux\ndetection:\n    k:\n        - 'PROTO=TCP'\n    condition: k\n",
		"logsource:\n    category: dns\ndetection:\n    s:\n        query|contains: 'www'\n    condition: s\n",
		"logsource:\n    product: linux\n    service: auth\ndetection:\n    s:\n        user.name: ROOT\n    condition: s\n",
		"logsource:\n    product: linux\ndetection:\n    k:\n        - 'session opened'\n    condition: k\n",
	} {
		rules = append(rules, &vigil.DetectionRule{ID: fmt.Sprintf("m%d", i), Enabled: true, Kind: "detection", Rule: fmt.Sprintf("title: m%d\n", i) + text})
	}
	sameAsAlone(t, rules, evs)
}

// TestWindowsScopedSignalsAsBefore: on every record of the 167 real
// Windows recordings, every starter rule finds through the engine (each
// record read once, through one sigma.Prepared, by all the rules of its
// log sources) exactly what it finds alone, record by record.
func TestWindowsScopedSignalsAsBefore(t *testing.T) {
	sameAsAlone(t, starterrules.ForOrg("t", nil), windowsBenchEvents(t))
}

// sameAsAlone compiles rules and checks that each finds through the
// engine's Screened as many signals as there are events it matches alone.
func sameAsAlone(t *testing.T, rules []*vigil.DetectionRule, evs []*detect.Event) {
	t.Helper()
	dets, errs := Compile(rules, "")
	if len(errs) > 0 {
		t.Fatalf("left out: %v", errs)
	}
	got := map[string]int{}
	for _, d := range detect.NewEngine(dets...).Screened(evs, nil) {
		got[d.Detector] += len(d.Signals)
	}
	matched := 0
	for _, d := range dets {
		r := d.(groupedRule).ruleDetector
		want := 0
		for _, ev := range evs {
			if r.rule.Match(&sigma.Event{Source: ev.Source, Fields: ev.Fields, Raw: ev.Raw}) {
				want++
			}
		}
		if got[d.Name()] != want {
			t.Errorf("%s: %d signals, %d lines match it alone", d.Name(), got[d.Name()], want)
		}
		matched += want
	}
	if matched == 0 {
		t.Error("no rule matched any line: the comparison proves nothing")
	}
	t.Logf("%d rules, %d lines, %d matches", len(dets), len(evs), matched)
}

// rulesStore is a Store of one org's own rules and no starter rule.
type rulesStore struct{ rules []*vigil.DetectionRule }

func (s *rulesStore) ListDetectionRules(_ context.Context, _ string, p vigil.Page) ([]*vigil.DetectionRule, int, error) {
	if p.Offset >= len(s.rules) {
		return nil, len(s.rules), nil
	}
	return s.rules[p.Offset:], len(s.rules), nil
}

func (s *rulesStore) StarterRuleStates(context.Context, string) (map[string]bool, error) {
	off := map[string]bool{}
	for _, r := range starterrules.All() {
		off[r.ID] = false
	}
	return off, nil
}

// TestCacheReloadsChangedRules: a reload that reads the same rules runs
// the rules compiled before; one that reads a changed rule runs the
// change.
func TestCacheReloadsChangedRules(t *testing.T) {
	store := &rulesStore{rules: []*vigil.DetectionRule{{ID: "r1", Enabled: true, Kind: "detection", Rule: noIdentRule}}}
	c := NewCache(store, time.Hour, nil)
	ctx := context.Background()
	evs := []*detect.Event{event("auth", noIdentLine)}
	first, err := c.engine(ctx, "o")
	if err != nil {
		t.Fatal(err)
	}
	if dets, _ := c.Detections(ctx, "o", evs, nil); len(dets) != 1 {
		t.Fatalf("the rule found %d detections, want 1", len(dets))
	}
	c.Invalidate("o")
	again, err := c.engine(ctx, "o")
	if err != nil {
		t.Fatal(err)
	}
	if again == first || again.Detectors()[0] != first.Detectors()[0] {
		t.Error("the same rules were not reused after a reload (or the engine was not reloaded)")
	}
	store.rules = []*vigil.DetectionRule{{ID: "r1", Enabled: true, Kind: "detection", Rule: strings.Replace(noIdentRule, "Did not receive identification", "Something else", 1)}}
	c.Invalidate("o")
	if dets, _ := c.Detections(ctx, "o", evs, nil); len(dets) != 0 {
		t.Errorf("the changed rule still found %d detections", len(dets))
	}
	store.rules[0].Enabled = false
	store.rules = append(store.rules, &vigil.DetectionRule{ID: "r2", Enabled: true, Kind: "detection", Rule: noIdentRule})
	c.Invalidate("o")
	if dets, _ := c.Detections(ctx, "o", evs, nil); len(dets) != 1 || dets[0].Detector != "sigma:r2" {
		t.Errorf("after the change: %d detections, want one of sigma:r2", len(dets))
	}
}

// TestWindowsAccountKeys: a starter rule's match on a real Windows record
// keyed by its account is keyed by the account's User node, DOMAIN\user
// as parse.Nodes names it (parse.WindowsAccount), never by the bare name:
// one account is one key node, whichever detector found it. Failing
// before: "ieuser" beside the node msedgewin10\ieuser.
func TestWindowsAccountKeys(t *testing.T) {
	evs := windowsBenchEvents(t)
	dets, errs := Compile(starterrules.ForOrg("t", nil), "")
	if len(errs) > 0 {
		t.Fatalf("left out: %v", errs)
	}
	byID := map[string]*detect.Event{}
	for _, ev := range evs {
		byID[ev.ArtifactID] = ev
	}
	checked := 0
	for _, d := range detect.NewEngine(dets...).Screened(evs, nil) {
		for _, sg := range d.Signals {
			f := byID[sg.ArtifactID].Fields
			name, _ := f["user.name"].(string)
			domain, ok := f["user.domain"].(string)
			if f["source.ip"] != nil || f["client.ip"] != nil || !ok || name == "" {
				continue
			}
			want := parse.WindowsAccount(name, domain)
			if want == "" {
				continue // no account ("-"): keyed by the host
			}
			if d.Key != want {
				t.Errorf("%s on record %s: key %q, want %q", d.Detector, sg.ArtifactID, d.Key, want)
			}
			users := 0
			for _, n := range sg.Nodes {
				if n.Type == vigil.NodeUser && (n.Value == want || n.Value == strings.ToLower(name)) {
					users++
					if n.Value != want || !n.Key {
						t.Errorf("%s on record %s: node %+v, want the key node %q", d.Detector, sg.ArtifactID, n, want)
					}
				}
			}
			if users != 1 {
				t.Errorf("%s on record %s: %d User nodes of %s, want one", d.Detector, sg.ArtifactID, users, want)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no match keyed by an account: the test proves nothing")
	}
	t.Logf("%d matches keyed by an account", checked)
}
