package bench

import (
	"math"
	"testing"
	"time"
)

// TestSeriesPerCPUSecond: over a run of ten minutes or more, the report
// says how flat it was per CPU-second of the server as well as in rate
// (a server that got half the machine in its last minutes falls in rate,
// not per CPU-second), and the series carries, each second, the server's
// CPU, heap and its store and detect stages' milliseconds per batch.
func TestSeriesPerCPUSecond(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	const n = 700
	st := &ingestStats{seconds: map[int]*Second{}}
	var samples []sample
	var processed, cpu, storeSecs, batches float64
	for i := range n {
		rate, cores := 20000.0, 1.0
		if i >= n/2 {
			rate, cores = 10000, 0.5 // half the machine, the same work per CPU-second
			if i >= n-310 {
				cores = 0.625 // the last five minutes: 20 % more CPU for the same work
			}
		}
		st.seconds[i] = &Second{Second: i, Accepted: int64(rate)}
		processed += rate
		cpu += cores
		storeSecs += 0.1 + float64(i)/1000 // the store's time per batch grows
		batches++
		samples = append(samples, sample{at: t0.Add(time.Duration(i)*time.Second + time.Second/2), processed: processed, cpu: cpu,
			heap: 300 << 20, storeSecs: storeSecs, storeBatches: batches})
	}
	series := buildSeries(st, samples, t0, t0.Add(n*time.Second))
	if got := series[10].CPUSeconds; math.Abs(got-1) > 1e-9 {
		t.Errorf("second 10: %v CPU-seconds, want 1", got)
	}
	if got := series[10].StoreMs; math.Abs(got-110) > 1e-6 {
		t.Errorf("second 10: store %v ms per batch, want 110", got)
	}
	if got := series[10].HeapBytes; got != 300<<20 {
		t.Errorf("second 10: heap %v, want 300 MiB", got)
	}
	f := flatness(series)
	if f == nil {
		t.Fatal("no flatness over 700 s")
	}
	if math.Abs(f.Ratio-0.5) > 0.01 {
		t.Errorf("rate ratio %v, want 0.5", f.Ratio)
	}
	if math.Abs(f.FirstFivePerCPU-20000) > 1 || math.Abs(f.LastFivePerCPU-16000) > 1 || math.Abs(f.PerCPURatio-0.8) > 0.001 {
		t.Errorf("per CPU-second %v → %v (%v), want 20000 → 16000 (0.8)", f.FirstFivePerCPU, f.LastFivePerCPU, f.PerCPURatio)
	}
}
