package starterrules

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/evtx"
	"github.com/vigil-soc/vigil/internal/parse"
	"github.com/vigil-soc/vigil/internal/sigma"
)

var update = flag.Bool("update", false, "copy the chosen Windows rules into sigmahq/ and rewrite docs/sigma-windows.md")

const (
	datasetRules = "../../../shared/datasets/sigma/rules"
	datasetEVTX  = "../../../shared/datasets/windows/evtx"
	windowsDoc   = "../../docs/sigma-windows.md"
)

// windowsRule is one SigmaHQ Windows rule as the selection judges it.
type windowsRule struct {
	path          string // rules/windows/…
	title         string
	level, status string
	refused       string         // why Vigil cannot run it
	hits          map[string]int // recording → matching records
}

// ships says whether a rule is in the starter set, and why not: it runs
// in Vigil, SigmaHQ rates it medium or above, tested or stable, and it
// fired on a real recording — or it reads Windows' own logs (builtin/:
// Security, System and the other channels every host writes), which the
// recordings exercise throughout: such a rule names its event ids, so
// that the set's guards skip it on every other event, and the recordings
// Vigil is also checked on, beside these, hold more of the same attacks —
// or it is a hack tool's (SigmaHQ's `_hktl_` rules: the tool's own name,
// hash or arguments, the surest sign there is and the rarest false
// positive) or rated critical: the recordings hold a few of the tools
// attackers use, and those Vigil is also checked on hold others.
func (r *windowsRule) ships() (bool, string) {
	switch {
	case r.refused != "":
		return false, "Vigil cannot run it: " + r.refused
	case len(r.hits) == 0 && !strings.HasPrefix(r.path, "rules/windows/builtin/") &&
		!strings.Contains(filepath.Base(r.path), "_hktl_") && r.level != "critical":
		return false, "fired on no recording"
	case r.level != "medium" && r.level != "high" && r.level != "critical":
		return false, "level " + r.level + " (the set holds medium and above)"
	case r.status != "stable" && r.status != "test":
		return false, "status " + r.status + " (the set holds stable and test)"
	}
	return true, ""
}

// TestWindowsStarterSet runs every SigmaHQ Windows rule of the datasets
// over every record of the 167 real recordings, read as vigil import reads
// them. The starter set is exactly the rules that ship by that run
// (windowsRule.ships), byte-exact copies, and docs/sigma-windows.md lists
// every rule with whether it ships, why not, and the records it matched.
// With -update it copies the rules and rewrites the list.
func TestWindowsStarterSet(t *testing.T) {
	rules := judgeWindowsRules(t)
	want := map[string]bool{}
	for _, r := range rules {
		if ok, _ := r.ships(); ok {
			want[r.path] = true
		}
	}
	if len(want) < 50 {
		t.Fatalf("only %d Windows rules would ship", len(want))
	}
	doc := windowsTable(rules)
	if *update {
		writeWindowsSet(t, rules)
		if err := os.WriteFile(windowsDoc, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have := map[string]bool{}
	for _, r := range All() {
		if strings.HasPrefix(r.Path, "rules/windows/") {
			have[r.Path] = true
			src, err := os.ReadFile(filepath.Join(datasetRules, r.Path))
			if err != nil || !bytes.Equal(src, []byte(r.Rule)) {
				t.Errorf("%s: not a byte-exact copy of SigmaHQ's (%v)", r.Path, err)
			}
		}
	}
	for p := range want {
		if !have[p] {
			t.Errorf("%s should ship (go test ./internal/starterrules -run TestWindowsStarterSet -update)", p)
		}
	}
	for p := range have {
		if !want[p] {
			t.Errorf("%s ships but should not", p)
		}
	}
	if old, err := os.ReadFile(windowsDoc); err != nil || !bytes.Equal(old, doc) {
		t.Errorf("%s is not what the run gives (-update rewrites it): %v", windowsDoc, err)
	}
}

func judgeWindowsRules(t *testing.T) []*windowsRule {
	t.Helper()
	var rules []*windowsRule
	var compiled []*sigma.Compiled
	var of []*windowsRule
	set := sigma.NewFieldSet()
	root := filepath.Join(datasetRules, "rules", "windows")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".yml" {
			return err
		}
		text, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(datasetRules, p)
		r := &windowsRule{path: filepath.ToSlash(rel), hits: map[string]int{}}
		rules = append(rules, r)
		parsed, err := sigma.Parse(text)
		if err != nil {
			r.refused = err.Error()
			return nil
		}
		r.title, r.level, r.status = parsed.Title, parsed.Level, parsed.Status
		c, err := sigma.CompileIn(parsed, set)
		if err != nil {
			r.refused = err.Error()
			return nil
		}
		compiled, of = append(compiled, c), append(of, r)
		return nil
	})
	if err != nil || len(rules) < 1000 {
		t.Fatalf("SigmaHQ's Windows rules under %s (../shared/datasets beside the checkout): %d, %v", root, len(rules), err)
	}
	files, _ := filepath.Glob(filepath.Join(datasetEVTX, "*", "*.evtx"))
	deeper, _ := filepath.Glob(filepath.Join(datasetEVTX, "*", "*", "*.evtx"))
	files = append(files, deeper...)
	if len(files) != 167 {
		t.Fatalf("%d recordings under %s, want 167", len(files), datasetEVTX)
	}
	prep := sigma.NewPrepared(set)
	for _, f := range files {
		rel, _ := filepath.Rel(datasetEVTX, f)
		eachWindowsEvent(t, f, func(ev *sigma.Event) {
			prep.Reset(*ev)
			for i, c := range compiled {
				if matchBoth(t, c, ev, prep) {
					of[i].hits[filepath.ToSlash(rel)]++
				}
			}
		})
	}
	sort.Slice(rules, func(i, j int) bool { return rules[i].path < rules[j].path })
	return rules
}

// eachWindowsEvent reads a recording's records as vigil import sends them
// and parses each as the pipeline does.
func eachWindowsEvent(t *testing.T, path string, fn func(*sigma.Event)) {
	t.Helper()
	docs, err := evtx.Documents(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		res := parse.Parse("windows", doc, time.Time{})
		fn(&sigma.Event{Source: "windows", Fields: res.Event, Raw: string(doc)})
	}
}

// windowsTable is docs/sigma-windows.md.
func windowsTable(rules []*windowsRule) []byte {
	var b bytes.Buffer
	shipped := 0
	for _, r := range rules {
		if ok, _ := r.ships(); ok {
			shipped++
		}
	}
	fmt.Fprintf(&b, `# SigmaHQ's Windows rules in Vigil

Every SigmaHQ Windows rule of ../shared/datasets (SigmaHQ/sigma at commit %s,
%d rules), run over every record of the 167 real recordings of ../shared/datasets/windows/evtx
as `+"`vigil import`"+` reads them. A rule ships in the starter set (on by default, switched per
organization like the Linux rules, docs/sigma.md) when Vigil runs it, SigmaHQ rates it medium
or above with status stable or test, and it fired on a recording, reads Windows' own logs
(`+"`builtin/`"+`: Security, System and the other channels every host writes, whose rules name their
event ids and cost nearly nothing on other events), names a hack tool (SigmaHQ's `+"`_hktl_`"+`
rules) or is rated critical: %d rules. The rest are listed with the
reason. `+"`TestWindowsStarterSet`"+` (internal/starterrules) makes this run and fails
when the set or this page differs from it.

| SigmaHQ rule | level | status | ships | why not / records matched per recording |
|---|---|---|---|---|
`, SigmaHQCommit, len(rules), shipped)
	for _, r := range rules {
		ok, why := r.ships()
		ships := "no"
		if ok {
			ships = "yes"
		}
		var where []string
		for f, n := range r.hits {
			where = append(where, fmt.Sprintf("%s ×%d", f, n))
		}
		sort.Strings(where)
		detail := strings.Join(where, "; ")
		if !ok {
			detail = why
			if len(where) > 0 {
				detail += "; matched " + strings.Join(where, "; ")
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", strings.TrimPrefix(r.path, "rules/windows/"), r.level, r.status, ships,
			strings.ReplaceAll(detail, "|", `\|`))
	}
	return b.Bytes()
}

// writeWindowsSet copies the rules that ship into sigmahq/ and removes
// the Windows rules that no longer do.
func writeWindowsSet(t *testing.T, rules []*windowsRule) {
	if err := os.RemoveAll(filepath.Join("sigmahq", "rules", "windows")); err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if ok, _ := r.ships(); !ok {
			continue
		}
		src, err := os.ReadFile(filepath.Join(datasetRules, r.path))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join("sigmahq", r.path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
