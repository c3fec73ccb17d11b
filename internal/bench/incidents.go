package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/vigil-soc/vigil"
)

// IncidentsReport is what the internet-edge mix made of incidents: how
// many an analyst's queue holds (not merged into another), how many are
// roll-ups, and whether each planted source that did something worse has
// an incident of its own (one that is no roll-up).
type IncidentsReport struct {
	Incidents int `json:"incidents"`
	Rollups   int `json:"rollups"`
	// Merged are the incidents taken into a roll-up or another incident.
	Merged  int `json:"merged"`
	Planted int `json:"planted"`
	// PlantedOwn is how many planted sources have an incident of their
	// own; Missing lists those that have none, with what they did.
	PlantedOwn int      `json:"planted_own"`
	Missing    []string `json:"missing,omitempty"`
}

// FlatReport compares the ingest rate of a run's first and last five
// minutes (runs of ten minutes or more): acked artifacts per second.
type FlatReport struct {
	FirstFiveRate float64 `json:"first_five_min_rate"`
	LastFiveRate  float64 `json:"last_five_min_rate"`
	Ratio         float64 `json:"ratio"`
	// The same minutes' artifacts processed per CPU-second of the server
	// (0: not scraped): flat in the work an artifact costs, whatever
	// share of the machine the server had.
	FirstFivePerCPU float64 `json:"first_five_min_per_cpu_second,omitempty"`
	LastFivePerCPU  float64 `json:"last_five_min_per_cpu_second,omitempty"`
	PerCPURatio     float64 `json:"per_cpu_ratio,omitempty"`
}

// flatness returns the first and last five minutes' rates of series, or
// nil when it is shorter than ten minutes.
func flatness(series []Second) *FlatReport {
	const five = 300
	if len(series) < 2*five {
		return nil
	}
	sum := func(xs []Second) float64 {
		var n int64
		for _, s := range xs {
			n += s.Accepted
		}
		return float64(n) / five
	}
	perCPU := func(xs []Second) float64 {
		var n, cpu float64
		for _, s := range xs {
			if s.Processed >= 0 && s.CPUSeconds >= 0 {
				n += s.Processed
				cpu += s.CPUSeconds
			}
		}
		if cpu <= 0 {
			return 0
		}
		return n / cpu
	}
	// The last second is cut short by the end of the load: leave it out.
	first, last := series[:five], series[len(series)-1-five:len(series)-1]
	f := &FlatReport{FirstFiveRate: sum(first), LastFiveRate: sum(last), FirstFivePerCPU: perCPU(first), LastFivePerCPU: perCPU(last)}
	if f.FirstFiveRate > 0 {
		f.Ratio = f.LastFiveRate / f.FirstFiveRate
	}
	if f.FirstFivePerCPU > 0 {
		f.PerCPURatio = f.LastFivePerCPU / f.FirstFivePerCPU
	}
	return f
}

// countIncidents reads what the org's incidents are once detection has
// caught up: it waits until two readings a second apart agree (at most a
// minute), then asks for each planted source's incidents.
func (b *bench) countIncidents(ctx context.Context) (*IncidentsReport, error) {
	var r *IncidentsReport
	deadline := time.Now().Add(time.Minute)
	for {
		next, err := b.readIncidents(ctx)
		if err != nil {
			return nil, err
		}
		if r != nil && next.Incidents == r.Incidents && next.Merged == r.Merged || time.Now().After(deadline) {
			r = next
			break
		}
		r = next
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second): // detection of the last batches may still be running
		}
	}
	for _, p := range plantedSources() {
		r.Planted++
		own, err := b.ownIncident(ctx, p.addr)
		if err != nil {
			return nil, err
		}
		if own {
			r.PlantedOwn++
		} else {
			r.Missing = append(r.Missing, p.addr+" ("+p.what+")")
		}
	}
	return r, nil
}

// maxIncidentPages bounds the pages of incidents counted: 200,000.
const maxIncidentPages = 200

// readIncidents counts the org's incidents, roll-ups and merged ones.
func (b *bench) readIncidents(ctx context.Context) (*IncidentsReport, error) {
	r := &IncidentsReport{}
	for page := 0; page < maxIncidentPages; page++ {
		p, err := b.api.Incidents(ctx, vigil.MaxLimit, page*vigil.MaxLimit)
		if err != nil {
			return nil, fmt.Errorf("incidents: %w", err)
		}
		for _, i := range p.Incidents {
			switch {
			case i.MergedInto != nil:
				r.Merged++
			case i.Rollup != nil:
				r.Incidents++
				r.Rollups++
			default:
				r.Incidents++
			}
		}
		if (page+1)*vigil.MaxLimit >= p.Total {
			return r, nil
		}
	}
	b.problem("more than %d incidents: counted the first %d", maxIncidentPages*vigil.MaxLimit, maxIncidentPages*vigil.MaxLimit)
	return r, nil
}

// ownIncident reports whether addr has an incident of its own: one that
// names it, is no roll-up and was not merged away.
func (b *bench) ownIncident(ctx context.Context, addr string) (bool, error) {
	node, err := b.api.NodeID(ctx, vigil.NodeIP, addr)
	if err != nil || node == "" {
		return false, err
	}
	p, err := b.api.IncidentsOfNode(ctx, node, vigil.MaxLimit, 0)
	if err != nil {
		return false, err
	}
	for _, i := range p.Incidents {
		if i.MergedInto == nil && i.Rollup == nil {
			return true, nil
		}
	}
	return false, nil
}

// edgeIntelArgs writes the feed of the planted threat-intel sources in
// dir and returns the embedded server's flag that loads it.
func edgeIntelArgs(dir string) ([]string, error) {
	feeds := filepath.Join(dir, "bench-intel")
	if err := os.MkdirAll(feeds, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(feeds, "planted.txt"), []byte(edgeIntelFeed()), 0o600); err != nil {
		return nil, err
	}
	return []string{"--threat-intel-dir", feeds}, nil
}
