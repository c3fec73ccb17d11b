package detect_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/vigil-soc/vigil/internal/detect"
)

// TestDatasetsTable runs every log of ../shared/datasets through the
// pipeline at default thresholds, each file in an org of its own, and
// prints (with -v) the incidents per file and, per incident, its
// artifacts, severity and observations' descriptions: the before/after
// table of docs/detections.md. It asserts only that every file goes
// through; the bounds are TestScenarioNoise's.
func TestDatasetsTable(t *testing.T) {
	root := datasets(t)
	sources := map[string]string{"auth": "auth", "dns": "dns", "firewall": "firewall", "suricata": "suricata"}
	var files []string
	for dir := range sources {
		ents, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			files = append(files, dir+"/"+e.Name())
		}
	}
	sort.Strings(files)
	e := newEnv(t, detect.Config{})
	t.Logf("%-52s %6s %9s %s", "file", "lines", "incidents", "artifacts per incident")
	for _, f := range files {
		lines := readLines(t, f)
		org := filepath.Base(f)
		e.process(t, org, 1000, artifacts(sources[strings.Split(f, "/")[0]], lines...))
		incs := e.incidents(t, org)
		var per []string
		for _, i := range incs {
			per = append(per, itoa(i.ArtifactCount))
		}
		t.Logf("%-52s %6d %9d %s", f, len(lines), len(incs), strings.Join(per, " "))
		for _, i := range incs {
			t.Logf("    %-6s %4d artifacts  %s", i.Severity, i.ArtifactCount, i.Title)
			for _, o := range i.Observations {
				t.Logf("        %s", o.Description)
			}
		}
	}
}

func itoa(n int) string {
	s := ""
	if n == 0 {
		return "0"
	}
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}
