package detectionrules

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/evtx"
	"github.com/vigil-soc/vigil/internal/parse"
	"github.com/vigil-soc/vigil/internal/starterrules"
)

// benchRules returns n enabled rules spread over Vigil's sources and the
// common shapes of SigmaHQ rules: DNS suffixes and substrings, firewall
// ports with an action, sshd and auth keywords, a regular expression,
// CIDRs. None matches the datasets' lines but by chance, so that every
// rule is evaluated in full on each artifact of its sources.
func benchRules(n int) []*vigil.DetectionRule {
	shapes := []string{
		"logsource:\n    category: dns\ndetection:\n    s:\n        query|endswith:\n            - '.bad%[1]d.example'\n            - '.worse%[1]d.example'\n    condition: s\n",
		"logsource:\n    category: dns\ndetection:\n    s:\n        query|contains|all:\n            - 'exfil%[1]d'\n            - 'data'\n    f:\n        record_type: A\n    condition: s and not f\n",
		"logsource:\n    category: firewall\ndetection:\n    s:\n        dst_port: %[1]d\n        action:\n            - accept\n            - forward\n    n:\n        src_ip|cidr: 10.%[2]d.0.0/16\n    condition: s and not n\n",
		"logsource:\n    product: linux\n    service: sshd\ndetection:\n    keywords:\n        - 'unexpected internal error %[1]d'\n        - 'bad client public DH value %[1]d'\n    condition: keywords\n",
		"logsource:\n    product: linux\ndetection:\n    keywords:\n        - 'wget http://%[1]d'\n        - '/dev/tcp/%[1]d'\n    condition: keywords\n",
		"logsource:\n    product: linux\n    service: auth\ndetection:\n    s:\n        user.name|re: '^svc%[1]d[a-z]+$'\n    condition: s\n",
	}
	out := make([]*vigil.DetectionRule, n)
	for i := range out {
		text := fmt.Sprintf("title: bench %d\n", i) + fmt.Sprintf(shapes[i%len(shapes)], i, i%256)
		out[i] = &vigil.DetectionRule{ID: fmt.Sprintf("r%d", i), Enabled: true, Kind: "detection", Rule: text}
	}
	return out
}

// benchEvents parses the first lines of real logs of each source.
func benchEvents(b testing.TB) []*detect.Event {
	files := []struct{ source, rel string }{
		{"auth", "auth/fail2ban-sshd.log"}, {"auth", "auth/loghub-Linux_2k.log"},
		{"firewall", "firewall/iptablogs-netfilter.log"}, {"zeek", "dns/wrccdc2018-zeek-dns.log"},
		{"dnsmasq", "dns/dnsmasq-hotspot.log"},
	}
	ref := time.Date(2025, 12, 31, 0, 0, 0, 0, time.UTC)
	var out []*detect.Event
	for _, f := range files {
		fh, err := os.Open(filepath.Join("..", "..", "..", "shared", "datasets", f.rel))
		if err != nil {
			b.Skipf("no datasets: %v", err)
		}
		sc := bufio.NewScanner(fh)
		for i := 0; i < 200 && sc.Scan(); i++ {
			raw := sc.Text()
			res := parse.Parse(f.source, []byte(raw), ref)
			out = append(out, &detect.Event{ArtifactID: fmt.Sprint(len(out)), Source: f.source, At: ref, Raw: raw, Fields: res.Event})
		}
		fh.Close()
	}
	return out
}

// BenchmarkRules evaluates n enabled rules on every artifact of a batch
// of 955 real lines (the first 200 of each: fail2ban sshd, loghub Linux,
// iptables, Zeek DNS, dnsmasq; the sshd file has 155), as the detect
// stage does: ns/artifact is the cost per artifact.
func BenchmarkRules(b *testing.B) {
	evs := benchEvents(b)
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			dets, errs := Compile(benchRules(n), "")
			if len(errs) > 0 || len(dets) != n {
				b.Fatalf("compiled %d of %d: %v", len(dets), n, errs)
			}
			eng := detect.NewEngine(dets...)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				eng.Screened(evs, nil)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/artifact")
		})
	}
}

// BenchmarkStarterRules evaluates the starter set, as an org has it by
// default, on the same 955 real lines.
func BenchmarkStarterRules(b *testing.B) {
	evs := benchEvents(b)
	dets, errs := Compile(starterrules.ForOrg("bench", nil), "")
	if len(errs) > 0 {
		b.Fatalf("starter rules left out: %v", errs)
	}
	eng := detect.NewEngine(dets...)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		eng.Screened(evs, nil)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/artifact")
}

// windowsBenchEvents parses every record of the 167 real Windows
// recordings as vigil import sends them and the pipeline parses them
// (3,844 events).
func windowsBenchEvents(b testing.TB) []*detect.Event {
	root := filepath.Join("..", "..", "..", "shared", "datasets", "windows", "evtx")
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.evtx"))
	deeper, _ := filepath.Glob(filepath.Join(root, "*", "*", "*.evtx"))
	files = append(files, deeper...)
	if len(files) == 0 {
		b.Skipf("no recordings under %s", root)
	}
	sort.Strings(files)
	ref := time.Date(2025, 12, 31, 0, 0, 0, 0, time.UTC)
	var out []*detect.Event
	for _, f := range files {
		docs, err := evtx.Documents(f)
		if err != nil {
			b.Fatal(err)
		}
		for _, doc := range docs {
			res := parse.Parse("windows", doc, ref)
			out = append(out, &detect.Event{ArtifactID: fmt.Sprint(len(out)), Source: "windows", At: ref, Raw: string(doc), Fields: res.Event})
		}
	}
	return out
}

// BenchmarkWindowsStarterRules evaluates the starter set, as an org has
// it by default (290 Windows rules among them), on every record of the
// real Windows recordings, as the detect stage does: each op is a batch
// of all 3,844 events, each read afresh (its line's grams unset).
func BenchmarkWindowsStarterRules(b *testing.B) {
	evs := windowsBenchEvents(b)
	dets, errs := Compile(starterrules.ForOrg("bench", nil), "")
	if len(errs) > 0 {
		b.Fatalf("starter rules left out: %v", errs)
	}
	eng := detect.NewEngine(dets...)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for b.Loop() {
		for _, ev := range evs {
			ev.RawGramsSet = false
		}
		eng.Screened(evs, nil)
	}
	cpu := cpuTime(b) - cpu0
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/artifact")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*len(evs)), "cpu-ns/artifact")
}

// cpuTime returns the CPU time (user and system) of the process so far:
// on a shared machine the wall clock says little.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
