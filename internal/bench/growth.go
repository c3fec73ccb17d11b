package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/vigil-soc/vigil/internal/plot"
)

// growthPoint is one run of a growth plot: its label (a build, a
// setting) and its report.
type growthPoint struct {
	label  string
	stored float64 // millions of artifacts stored at the search phase
	rep    Report
}

// readReport reads a --json report.
func readReport(path string, r *Report) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--growth-from: %w", err)
	}
	if err := json.Unmarshal(data, r); err != nil {
		return fmt.Errorf("--growth-from: %s: %w", path, err)
	}
	return nil
}

// readGrowth reads --growth-from: label=report.json (or
// label=load.json+search.json), comma-separated.
func readGrowth(spec string) ([]growthPoint, error) {
	var out []growthPoint
	for _, item := range strings.Split(spec, ",") {
		label, path, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, fmt.Errorf("--growth-from: %q is not label=report.json", item)
		}
		// load.json+search.json: the search phase of a later run on the
		// same store.
		path, searchPath, _ := strings.Cut(path, "+")
		var p growthPoint
		if err := readReport(path, &p.rep); err != nil {
			return nil, err
		}
		if searchPath != "" {
			var later Report
			if err := readReport(searchPath, &later); err != nil {
				return nil, err
			}
			p.rep.Search = later.Search
		}
		if p.rep.Search == nil || p.rep.Load == nil {
			return nil, fmt.Errorf("--growth-from: %s has no load and search phase", path)
		}
		p.label, p.stored = label, float64(p.rep.Search.Stored)/1e6
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].stored < out[j].stored })
	return out, nil
}

// writeGrowth plots, per label, the end-to-end rate, the artifacts per
// server CPU-second and the search p99 of two classes against the
// artifacts stored.
func writeGrowth(w io.Writer, points []growthPoint) error {
	var labels []string
	seen := map[string]bool{}
	for _, p := range points {
		if !seen[p.label] {
			seen[p.label] = true
			labels = append(labels, p.label)
		}
	}
	p99 := func(p growthPoint, class string) float64 {
		for _, c := range p.rep.Search.Classes {
			if c.Name == class {
				return c.P99Ms
			}
		}
		return math.NaN()
	}
	var series []plot.Series
	for _, l := range labels {
		var xs, rate, perCPU, term, phrase []float64
		for _, p := range points {
			if p.label != l {
				continue
			}
			xs = append(xs, p.stored)
			rate = append(rate, p.rep.Load.E2ERate)
			perCPU = append(perCPU, p.rep.Load.ArtifactsPerCPUs)
			term, phrase = append(term, p99(p, "single term")), append(phrase, p99(p, "phrase + 24 h filter"))
		}
		series = append(series,
			plot.Series{Name: l + ": end to end /s", Panel: "ingest, artifacts per second", X: xs, Y: rate},
			plot.Series{Name: l + ": per CPU-second", Panel: "ingest, artifacts per second", X: xs, Y: perCPU},
			plot.Series{Name: l + ": single term p99", Panel: "search p99, ms", X: xs, Y: term},
			plot.Series{Name: l + ": phrase + 24 h p99", Panel: "search p99, ms", X: xs, Y: phrase})
	}
	return plot.Lines(w, "vigil bench, embedded default, as the store grows (x: millions of artifacts stored)", series)
}
