package detect_test

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/detectionrules"
	"github.com/vigil-soc/vigil/internal/pipeline"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

var update = flag.Bool("update", false, "rewrite the recordings table of docs/detections.md")

const (
	detectionsDoc = "../../docs/detections.md"
	tableBegin    = "<!-- windows-recordings: begin (TestWindowsRecordings -update writes this table) -->"
	tableEnd      = "<!-- windows-recordings: end -->"
)

// recording is one line of INDEX.md: the file, its tactic folder and the
// records python-evtx counted in it.
type recording struct {
	path, tactic string
	records      int
	channels     string
}

func readRecordings(t testing.TB) []recording {
	t.Helper()
	f, err := os.Open(filepath.Join(datasets(t), "windows", "evtx", "INDEX.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []recording
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "|")
		if len(cols) != 10 || !strings.HasPrefix(strings.TrimSpace(cols[1]), "`") {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(cols[6]))
		if err != nil {
			t.Fatalf("INDEX.md: %q", cols[6])
		}
		out = append(out, recording{path: strings.Trim(strings.TrimSpace(cols[1]), "`"), tactic: strings.TrimSpace(cols[4]),
			records: n, channels: strings.TrimSpace(cols[8])})
	}
	return out
}

var (
	sigmaRuleRef = regexp.MustCompile(`^(?:Sigma rule )?(.*) \(rule ([0-9a-f-]{36})`)
	// builtinKind is what a built-in detector's description starts with,
	// up to the count: "Password spray: 9 failed …".
	builtinKind = regexp.MustCompile(`^(.*?): \d`)
)

// TestWindowsRecordings runs each of the 167 real recordings, as vigil
// import sends it, through the pipeline in an org of its own (the built-in
// detectors and the starter Sigma rules, on SQLite) and checks the table
// of docs/detections.md against the run: the events read (equal to what
// python-evtx counted, INDEX.md), the built-in findings and the Sigma
// rules that fired, and the incidents.
func TestWindowsRecordings(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 167 recordings through the pipeline")
	}
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "v.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	proc := pipeline.NewProcessor(s, nil, nil).
		WithDetection(detect.NewEngine(detect.Default(detect.Config{})...), vigil.DefaultCorrelationPolicy()).
		WithDetectionRules(detectionrules.NewCache(s, detectionrules.DefaultTTL, nil))
	e := &env{store: s, proc: proc}
	var table bytes.Buffer
	table.WriteString("| recording | tactic | events read | built-in findings | Sigma rules that fired | incidents |\n|---|---|---|---|---|---|\n")
	silent := 0
	for i, r := range readRecordings(t) {
		docs := evtxRecords(t, r.path)
		if len(docs) != r.records {
			t.Errorf("%s: %d records read, python-evtx counted %d", r.path, len(docs), r.records)
		}
		org := fmt.Sprintf("rec-%03d", i)
		e.process(t, org, 200, windowsArtifacts(docs))
		builtin, rules := map[string]int{}, map[string]bool{}
		incs := e.incidents(t, org)
		for _, inc := range incs {
			for _, o := range inc.Observations {
				if m := sigmaRuleRef.FindStringSubmatch(o.Description); m != nil {
					rules[m[1]] = true
					continue
				}
				kind := o.Description
				if m := builtinKind.FindStringSubmatch(kind); m != nil {
					kind = m[1]
				}
				builtin[kind]++
			}
		}
		var b []string
		for k, n := range builtin {
			b = append(b, fmt.Sprintf("%s ×%d", k, n))
		}
		sort.Strings(b)
		var rs []string
		for k := range rules {
			rs = append(rs, k)
		}
		sort.Strings(rs)
		if len(b) == 0 && len(rs) == 0 {
			silent++
			b = []string{"none: " + r.channels}
		}
		fmt.Fprintf(&table, "| `%s` | %s | %d | %s | %s | %d |\n", r.path, r.tactic, len(docs),
			cell(strings.Join(b, "; ")), cell(fmt.Sprintf("%d: %s", len(rs), strings.Join(rs, "; "))), len(incs))
	}
	fmt.Fprintf(&table, "\n%d recordings gave no finding; the table names what they hold.\n", silent)
	doc, err := os.ReadFile(detectionsDoc)
	if err != nil {
		t.Fatal(err)
	}
	start, end := bytes.Index(doc, []byte(tableBegin)), bytes.Index(doc, []byte(tableEnd))
	if start < 0 || end < start {
		t.Fatalf("%s has no %q … %q section", detectionsDoc, tableBegin, tableEnd)
	}
	want := append([]byte(tableBegin+"\n"), table.Bytes()...)
	if *update {
		out := append(append(append([]byte{}, doc[:start]...), want...), doc[end:]...)
		if err := os.WriteFile(detectionsDoc, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(doc[start:end], want) {
		t.Errorf("the recordings table of %s is not what the run gives (go test ./internal/detect -run TestWindowsRecordings -update)", detectionsDoc)
	}
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
