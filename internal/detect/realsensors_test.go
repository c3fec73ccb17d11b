package detect_test

// The real-sensor corpus (testdata/realsensors/cases): logs written by real
// programs (OpenSSH, sudo, the kernel's netfilter LOG through rsyslog,
// Suricata, BIND, dnsmasq) while real tools (hydra, nmap, curl, dig)
// attacked them, each case with a ground truth counted by the script
// that ran the attack, never read from the logs. Every count in every
// observation description must equal it, no IP address may be a Domain
// node, and each incident is named after its most severe observation.

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
)

// knownWrong lists the counts the detectors get wrong today, as
// "case: detector key count" (or "case: unexpected detector key" for an
// observation the ground truth does not expect, "case: missing detector
// key" for one it expects and no detector made). A listed mismatch is
// logged, not failed; a listed entry that no longer mismatches fails the
// test, so the list only shrinks. Empty it by fixing the detectors.
var knownWrong = []string{}

var realsensorsTable = flag.String("realsensors-table", "", "write the expected-vs-actual table of TestRealSensors to this file (markdown)")

// truthFile is a case's truth.json, as far as the test reads it.
type truthFile struct {
	Scenario     string            `json:"scenario"`
	What         string            `json:"what"`
	Logs         map[string]string `json:"logs"` // file → artifact source
	Observations []struct {
		Detector string         `json:"detector"`
		Key      string         `json:"key"`
		Counts   map[string]int `json:"counts"`
		Optional bool           `json:"optional"`
	} `json:"observations"`
}

// describedAs recognizes each detector's observations by their
// description, names the key they are counted under and reads the counts
// they state. When a description's wording changes, change its entry
// here, keeping what each count means (the names are truth.json's).
var describedAs = []struct {
	detector string
	prefix   string
	key      func(desc string) string
	counts   map[string]*regexp.Regexp
}{
	{"ssh_bruteforce", "SSH brute force:", group(`from (\S+)`),
		map[string]*regexp.Regexp{"failed": regexp.MustCompile(`(\d+) failed`), "users": regexp.MustCompile(`for (\d+) users?\b`)}},
	{"ssh_success", "Successful SSH login after brute force:", group(`from (\S+)`),
		map[string]*regexp.Regexp{"accepted": regexp.MustCompile(`(\d+) accepted`)}},
	{"sudo_failure", "sudo/su failures:", group(`by (\S+@[^\s,(]+)`),
		map[string]*regexp.Regexp{"failures": regexp.MustCompile(`(\d+) failures?\b`)}},
	{"port_scan", "Port scan:", group(`from (\S+)`),
		map[string]*regexp.Regexp{"packets": regexp.MustCompile(`(\d+) packets?\b`), "ports": regexp.MustCompile(`on (\d+) ports?\b`)}},
	{"host_sweep", "Host sweep:", group(`from (\S+)`), nil},
	{"suricata_alert", "Suricata alert", func(d string) string {
		return group(`\(sid (\d+)`)(d) + "|" + group(`alerts? from (\S+)`)(d)
	}, map[string]*regexp.Regexp{"alerts": regexp.MustCompile(`(\d+) alerts?\b`)}},
	{"dns_dga", "DGA-like DNS look-ups:", group(`by (\S+)`),
		map[string]*regexp.Regexp{"lookups": regexp.MustCompile(`(\d+) look-ups?\b`), "names": regexp.MustCompile(`of (\d+) names?\b`)}},
	{"dns_tunnel", "DNS tunnel:", func(d string) string {
		return group(`by (\S+)`)(d) + "|" + group(`names? under (\S+)`)(d)
	}, map[string]*regexp.Regexp{"lookups": regexp.MustCompile(`(\d+) look-ups?\b`), "names": regexp.MustCompile(`of (\d+) names?\b`)}},
	{"threat_intel", "Threat intel:", group(`Threat intel: \S+ (\S+)`), nil},
}

// group returns a function giving the first submatch of expr, or "?".
func group(expr string) func(string) string {
	re := regexp.MustCompile(expr)
	return func(s string) string {
		if m := re.FindStringSubmatch(s); m != nil {
			return m[1]
		}
		return "?"
	}
}

// realRow is one line of the expected-vs-actual table.
type realRow struct {
	file, detector, key, count string
	want, got                  string
	verdict                    string // ok, WRONG, known wrong, (optional)
	entry                      string // its knownWrong entry
}

func TestRealSensors(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "realsensors", "cases")
	truths, err := filepath.Glob(filepath.Join(root, "*", "truth.json"))
	if err != nil || len(truths) == 0 {
		t.Fatalf("no cases under %s (%v)", root, err)
	}
	sort.Strings(truths)
	known := map[string]bool{}
	for _, k := range knownWrong {
		known[k] = false // set when a mismatch uses it
	}
	var rows []realRow
	for _, path := range truths {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var tr truthFile
		if err := json.Unmarshal(raw, &tr); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		caseName := filepath.Base(filepath.Dir(path))
		files := make([]string, 0, len(tr.Logs))
		for f := range tr.Logs {
			files = append(files, f)
		}
		sort.Strings(files)
		for _, file := range files {
			lines := readCorpus(t, filepath.Join(filepath.Dir(path), file))
			e := newEnv(t, detect.Config{})
			e.process(t, "org", 100, artifacts(tr.Logs[file], lines...))
			obs := e.observations(t, "org")
			rows = append(rows, compareTruth(caseName, file, tr, obs)...)
			incs := e.incidents(t, "org")
			rows = append(rows, nodeTypes(caseName, file, incs)...)
			rows = append(rows, titles(caseName, file, incs)...)
		}
	}
	for i := range rows {
		r := &rows[i]
		if r.verdict != "WRONG" {
			continue
		}
		if _, ok := known[r.entry]; ok {
			known[r.entry] = true
			r.verdict = "known wrong"
		}
	}
	var b strings.Builder
	b.WriteString("| case / file | detector | key | count | ground truth | Vigil | verdict |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		cells := []string{r.file, r.detector, r.key, r.count, r.want, r.got, r.verdict}
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`) // keys such as "sid|source"
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
	}
	t.Logf("expected vs actual on the real-sensor corpus:\n%s", b.String())
	if *realsensorsTable != "" {
		if err := os.WriteFile(*realsensorsTable, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rows {
		if r.verdict == "WRONG" {
			t.Errorf("%s: %s %s %s: ground truth %s, Vigil %s (knownWrong entry: %q)", r.file, r.detector, r.key, r.count, r.want, r.got, r.entry)
		}
	}
	for _, k := range knownWrong {
		if !known[k] {
			t.Errorf("knownWrong entry %q no longer mismatches: remove it", k)
		}
	}
}

// compareTruth matches the observations of one log file with its case's
// ground truth, count by count.
func compareTruth(caseName, file string, tr truthFile, obs []*vigil.Observation) []realRow {
	where := caseName + "/" + file
	type found struct {
		detector, key string
		counts        map[string]string
		desc          string
	}
	var got []found
	for _, o := range obs {
		f := found{detector: "?", key: "?", desc: o.Description, counts: map[string]string{}}
		for _, d := range describedAs {
			if strings.HasPrefix(o.Description, d.prefix) {
				f.detector, f.key = d.detector, d.key(o.Description)
				for name, re := range d.counts {
					if m := re.FindStringSubmatch(o.Description); m != nil {
						f.counts[name] = m[1]
					}
				}
				break
			}
		}
		got = append(got, f)
	}
	var rows []realRow
	if len(tr.Observations) == 0 && len(got) == 0 {
		rows = append(rows, realRow{file: where, detector: "(any)", key: "—", count: "observations", want: "0", got: "0", verdict: "ok"})
	}
	used := make([]bool, len(got))
	for _, want := range tr.Observations {
		i := slices.IndexFunc(got, func(f found) bool { return f.detector == want.Detector && f.key == want.Key })
		if i >= 0 && used[i] {
			i = -1
		}
		if i < 0 {
			r := realRow{file: where, detector: want.Detector, key: want.Key, count: "observation", want: "1", got: "0",
				verdict: "WRONG", entry: fmt.Sprintf("%s: missing %s %s", caseName, want.Detector, want.Key)}
			if want.Optional {
				r.want, r.verdict = "0 or 1 (policy)", "ok"
			}
			rows = append(rows, r)
			continue
		}
		used[i] = true
		names := make([]string, 0, len(want.Counts))
		for n := range want.Counts {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			w := strconv.Itoa(want.Counts[n])
			g, ok := got[i].counts[n]
			if !ok {
				g = "(not stated)"
			}
			r := realRow{file: where, detector: want.Detector, key: want.Key, count: n, want: w, got: g, verdict: "ok",
				entry: fmt.Sprintf("%s: %s %s %s", caseName, want.Detector, want.Key, n)}
			if g != w {
				r.verdict = "WRONG"
			}
			rows = append(rows, r)
		}
	}
	for i, f := range got {
		if used[i] {
			continue
		}
		// Several observations of one unexpected (detector, key) are one
		// entry; the table shows each.
		rows = append(rows, realRow{file: where, detector: f.detector, key: f.key, count: "observation",
			want: "0", got: "1: " + shorten(f.desc, 90), verdict: "WRONG",
			entry: fmt.Sprintf("%s: unexpected %s %s", caseName, f.detector, f.key)})
	}
	return rows
}

// titleMarks says what an incident title names when it follows an
// observation of each detector (the signature, for a Suricata alert).
// When the titles' wording changes, change this, keeping the meaning.
var titleMarks = map[string]func(desc string) string{
	"ssh_bruteforce": func(string) string { return "SSH brute force" },
	"ssh_success":    func(string) string { return "Successful SSH login" },
	"sudo_failure":   func(string) string { return "privilege escalation" },
	"port_scan":      func(string) string { return "Port scan" },
	"host_sweep":     func(string) string { return "Host sweep" },
	"dns_dga":        func(string) string { return "DGA" },
	"dns_tunnel":     func(string) string { return "DNS tunnel" },
	"suricata_alert": group(`^Suricata alert "([^"]*)"`),
}

var severityRank = map[string]int{vigil.SeverityLow: 1, vigil.SeverityMedium: 2, vigil.SeverityHigh: 3, vigil.SeverityCritical: 4}

// titles checks that each incident is named after its most severe
// observation (any of them on a tie), not its first or its noisiest.
func titles(caseName, file string, incs []incident) []realRow {
	var rows []realRow
	for _, inc := range incs {
		worst := 0
		for _, o := range inc.Observations {
			worst = max(worst, severityRank[o.Severity])
		}
		var marks []string
		ok := false
		for _, o := range inc.Observations {
			if severityRank[o.Severity] != worst {
				continue
			}
			for _, d := range describedAs {
				if mark := titleMarks[d.detector]; mark != nil && strings.HasPrefix(o.Description, d.prefix) {
					m := mark(o.Description)
					marks = append(marks, m)
					ok = ok || strings.Contains(inc.Title, m)
				}
			}
		}
		if len(marks) == 0 {
			continue
		}
		slices.Sort(marks)
		marks = slices.Compact(marks)
		r := realRow{file: caseName + "/" + file, detector: "(incident title)", key: shorten(inc.Title, 70), count: "named after the worst",
			want: strings.Join(marks, " or "), got: shorten(inc.Title, 70), verdict: "ok"}
		if !ok {
			r.verdict, r.entry = "WRONG", fmt.Sprintf("%s: title %s", caseName, strings.Join(marks, " or "))
		}
		rows = append(rows, r)
	}
	return rows
}

// nodeTypes checks the incidents' nodes: an IP address is an IP node
// wherever it appears (an HTTP Host header, a TLS SNI), never a Domain.
func nodeTypes(caseName, file string, incs []incident) []realRow {
	seen := map[string]bool{}
	var rows []realRow
	for _, inc := range incs {
		for _, n := range inc.Nodes {
			v, typ := n.Value, n.Type
			if _, err := netip.ParseAddr(v); err != nil || typ == vigil.NodeIP || seen[v] {
				continue
			}
			seen[v] = true
			rows = append(rows, realRow{file: caseName + "/" + file, detector: "(node type)", key: v, count: "type",
				want: vigil.NodeIP, got: typ, verdict: "WRONG", entry: fmt.Sprintf("%s: %s node %s", caseName, typ, v)})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].key < rows[j].key })
	return rows
}

func shorten(s string, n int) string {
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// readCorpus returns the non-empty lines of a corpus file.
func readCorpus(tb testing.TB, path string) []string {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// observations returns every observation of org, oldest first.
func (e *env) observations(tb testing.TB, org string) []*vigil.Observation {
	tb.Helper()
	var out []*vigil.Observation
	for off := 0; ; off += vigil.MaxLimit {
		page, total, err := e.store.ListObservations(tb.Context(), org, vigil.ObservationFilter{Page: vigil.Page{Limit: vigil.MaxLimit, Offset: off}})
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, page...)
		if off+vigil.MaxLimit >= total {
			break
		}
	}
	slices.Reverse(out)
	return out
}
