package bench

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-soc/vigil/internal/client"
)

// ingestStats are the counts of one ingest run.
type ingestStats struct {
	mu                                      sync.Mutex
	requests, accepted, rejected, throttled int64
	errors                                  int64
	kinds                                   map[string]int64
	lats                                    []float64 // ms of every 2xx
	seconds                                 map[int]*Second
}

// ingest runs f.Clients clients posting the bodies in turn until deadline
// (if not zero) or until target artifacts are accepted (if ≥ 0). A 429
// waits its Retry-After and posts the same batch again, so a throttled
// batch is delayed, never skipped; the wait ends early at the deadline,
// when nothing of that batch was accepted.
func (b *bench) ingest(ctx context.Context, t0, deadline time.Time, target int64, progress bool) *ingestStats {
	st := &ingestStats{kinds: map[string]int64{}, seconds: map[int]*Second{}}
	var next atomic.Int64
	var accepted atomic.Int64
	done := func() bool {
		if ctx.Err() != nil {
			return true
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return true
		}
		return target >= 0 && accepted.Load() >= target
	}
	var wg sync.WaitGroup
	for c := 0; c < b.f.Clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			post, closeConns := b.poster()
			defer closeConns()
			for !done() {
				n := int(next.Add(1) - 1)
				i, round := n%len(b.bodies), n/len(b.bodies)
				for !done() {
					start := time.Now()
					r, err := post(ctx, i, round)
					end := time.Now()
					st.record(r, err, int(end.Sub(t0)/time.Second), float64(end.Sub(start))/float64(time.Millisecond))
					if err == nil && r.Status/100 == 2 {
						accepted.Add(int64(r.Accepted))
						atomic.AddInt64(&b.sent[i], int64(r.Accepted))
						if r.Rejected > 0 {
							b.partial.Store(true) // unknown which lines: no expected totals
						}
						break
					}
					if err == nil && r.Status == http.StatusTooManyRequests {
						wait := r.RetryAfter
						if !deadline.IsZero() {
							wait = min(wait, time.Until(deadline))
						}
						sleepCtx(ctx, wait)
						continue // the same batch again
					}
					sleepCtx(ctx, 100*time.Millisecond) // an error: count it, go on with the next batch
					break
				}
			}
		}()
	}
	stopProgress := make(chan struct{})
	if progress {
		go func() {
			t := time.NewTicker(10 * time.Second)
			defer t.Stop()
			for {
				select {
				case <-stopProgress:
					return
				case now := <-t.C:
					st.mu.Lock()
					b.logf("accepted %d (%.0f/s), 429s %d, errors %d",
						st.accepted, float64(st.accepted)/now.Sub(t0).Seconds(), st.throttled, st.errors)
					st.mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(stopProgress)
	return st
}

// record counts one POST that ended in second sec of the run after ms.
func (st *ingestStats) record(r client.PostResult, err error, sec int, ms float64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.requests++
	s := st.seconds[sec]
	if s == nil {
		s = &Second{Second: sec}
		st.seconds[sec] = s
	}
	switch {
	case err == nil && r.Status/100 == 2:
		st.accepted += int64(r.Accepted)
		st.rejected += int64(r.Rejected)
		st.lats = append(st.lats, ms)
		s.Accepted += int64(r.Accepted)
		s.lats = append(s.lats, ms)
	case err == nil && r.Status == http.StatusTooManyRequests:
		st.throttled++
		s.Throttled++
	default:
		st.errors++
		s.Errors++
		kind := fmt.Sprintf("http %d", r.Status)
		if err != nil {
			kind = "transport: " + err.Error()
			if len(kind) > 120 {
				kind = kind[:120]
			}
		}
		st.kinds[kind]++
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// total is the number of the org's stored (searchable) artifacts, or
// with --times live through POST /v1/artifacts those stamped since the run started: every artifact
// the run posts, and a count that costs the server little however many
// artifacts it held before (counting all of 10 M took it over 10 s).
func (b *bench) total(ctx context.Context) (int64, error) {
	if b.since.IsZero() {
		n, err := b.api.ArtifactTotal(ctx)
		return int64(n), err
	}
	return b.countRange(ctx, b.since, time.Now().Add(time.Minute), 0)
}

// countRange counts the org's artifacts stamped in [start, end), exactly:
// a range whose total the server estimates (PostgreSQL and VictoriaLogs
// estimate a list within a time range beyond 10,000 matches; the bench's
// run then reported its own artifacts as missing or duplicated) is counted
// as its two halves, each again until it is exact; a range still
// estimated after maxCountDepth halvings (1,024 ranges at most) is counted
// by its pages.
func (b *bench) countRange(ctx context.Context, start, end time.Time, depth int) (int64, error) {
	p, err := b.api.Artifacts(ctx, client.ArtifactQuery{Limit: 1, Start: start, End: end})
	if err != nil {
		return 0, err
	}
	mid := start.Add(end.Sub(start) / 2)
	switch {
	case !p.TotalEstimated:
		return int64(p.Total), nil
	case depth >= maxCountDepth || !mid.After(start):
		// Too many artifacts of nearly one time (a batch stamped
		// at once) to split: their pages, counted.
		return b.countPages(ctx, start, end)
	}
	older, err := b.countRange(ctx, start, mid, depth+1)
	if err != nil {
		return 0, err
	}
	newer, err := b.countRange(ctx, mid, end, depth+1)
	return older + newer, err
}

// maxCountDepth bounds how often countRange halves a range.
const maxCountDepth = 10

// countPages counts the artifacts stamped in [start, end) by reading
// their pages, as many as the API gives at once.
func (b *bench) countPages(ctx context.Context, start, end time.Time) (int64, error) {
	const limit = 1000 // the API's largest page
	var n int64
	for offset := 0; ; offset += limit {
		p, err := b.api.Artifacts(ctx, client.ArtifactQuery{Start: start, End: end, Limit: limit, Offset: offset})
		if err != nil {
			return 0, err
		}
		n += int64(len(p.Artifacts))
		if len(p.Artifacts) < limit {
			return n, nil
		}
	}
}

// waitSearchable waits until the org's total reaches want or timeout
// passes; it returns the last total and the time it was read.
//
// The total is a COUNT over every stored artifact, which costs the server
// real work at millions of rows (0.1 s and more), so polling it often
// would slow down the very pipeline being measured. While /metrics shows
// queue messages not yet processed (vigil_queue_depth > 0; a message is
// acknowledged only after its artifacts are committed), only that cheap
// gauge is polled, every 250 ms; then the total, spaced so that counting
// takes at most a tenth of the server's time.
func (b *bench) waitSearchable(ctx context.Context, want int64, timeout time.Duration) (int64, time.Time, bool) {
	deadline := time.Now().Add(timeout)
	var got int64
	last := time.Now()
	useDepth := true
	for {
		if useDepth {
			m, err := b.scrape(ctx)
			switch {
			case err != nil || !m.Has("vigil_queue_depth"):
				useDepth = false // not a Vigil /metrics: count only
			case m.Sum("vigil_queue_depth") > 0:
				if time.Now().After(deadline) || ctx.Err() != nil {
					return got, last, false
				}
				sleepCtx(ctx, 250*time.Millisecond)
				continue
			}
		}
		start := time.Now()
		n, err := b.total(ctx)
		at := time.Now()
		if err == nil {
			got, last = n, at
			if n >= want {
				return n, at, true
			}
		}
		if at.After(deadline) || ctx.Err() != nil {
			return got, last, false
		}
		sleepCtx(ctx, max(250*time.Millisecond, 10*at.Sub(start)))
	}
}

// scrape reads the server's /metrics, giving up after 5 s.
func (b *bench) scrape(ctx context.Context) (client.Metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return b.api.Metrics(ctx)
}

// sample is one scrape of the sampler.
type sample struct {
	at                               time.Time
	rss, heap, queue, processed, cpu float64
	// The pipeline's store and detect stages: seconds and batches so far.
	storeSecs, storeBatches, detectSecs, detectBatches float64
}

type sampler struct {
	stopc chan struct{}
	done  chan []sample
}

// startSampler scrapes /metrics every second until stopped.
func (b *bench) startSampler(ctx context.Context) *sampler {
	s := &sampler{stopc: make(chan struct{}), done: make(chan []sample, 1)}
	go func() {
		var out []sample
		t := time.NewTicker(time.Second)
		defer t.Stop()
		take := func() {
			if m, err := b.scrape(ctx); err == nil {
				out = append(out, sample{at: time.Now(), rss: m.Sum("process_resident_memory_bytes"),
					heap:      m.Sum("go_memstats_heap_inuse_bytes"),
					queue:     m.Sum("vigil_queue_depth"),
					processed: m.Sum("vigil_artifacts_parsed_total") + m.Sum("vigil_artifacts_unparsed_total"),
					cpu:       m.Sum("process_cpu_seconds_total"),
					storeSecs: stage(m, "vigil_pipeline_stage_seconds_sum", "store"), storeBatches: stage(m, "vigil_pipeline_stage_seconds_count", "store"),
					detectSecs: stage(m, "vigil_pipeline_stage_seconds_sum", "detect"), detectBatches: stage(m, "vigil_pipeline_stage_seconds_count", "detect")})
			}
		}
		take()
		for {
			select {
			case <-s.stopc:
				take()
				s.done <- out
				return
			case <-t.C:
				take()
			}
		}
	}()
	return s
}

// stage sums metric's series of stage.
func stage(m client.Metrics, metric, stage string) float64 {
	return m.SumWhere(metric, func(l client.Labels) bool { return l["stage"] == stage })
}

func (s *sampler) stop() []sample {
	close(s.stopc)
	return <-s.done
}

// buildSeries merges the per-second client counts and the server samples,
// from the first POST until everything was searchable.
func buildSeries(st *ingestStats, samples []sample, t0, end time.Time) []Second {
	n := int(end.Sub(t0)/time.Second) + 1
	out := make([]Second, n)
	for i := range out {
		out[i] = Second{Second: i, AckP99Ms: -1, Processed: -1, QueueDepth: -1, RSSBytes: -1, HeapBytes: -1, CPUSeconds: -1, StoreMs: -1, DetectMs: -1}
		if s := st.seconds[i]; s != nil {
			out[i].Accepted, out[i].Throttled, out[i].Errors = s.Accepted, s.Throttled, s.Errors
			if len(s.lats) > 0 {
				out[i].AckP99Ms = quantile(s.lats, 0.99)
			}
		}
	}
	for k, s := range samples {
		i := int(s.at.Sub(t0) / time.Second)
		if i < 0 || i >= n {
			continue
		}
		out[i].RSSBytes, out[i].QueueDepth, out[i].HeapBytes = s.rss, s.queue, s.heap
		if k > 0 {
			dt := s.at.Sub(samples[k-1].at).Seconds()
			if dt > 0 {
				out[i].Processed = (s.processed - samples[k-1].processed) / dt
				out[i].CPUSeconds = (s.cpu - samples[k-1].cpu) / dt
				p := samples[k-1]
				if n := s.storeBatches - p.storeBatches; n > 0 {
					out[i].StoreMs = 1000 * (s.storeSecs - p.storeSecs) / n
				}
				if n := s.detectBatches - p.detectBatches; n > 0 {
					out[i].DetectMs = 1000 * (s.detectSecs - p.detectSecs) / n
				}
			}
		}
	}
	return out
}

// quantile returns the q-quantile (nearest rank) of xs in the order given;
// xs is sorted in place. 0 for no values.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}
