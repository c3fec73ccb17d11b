package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

// FillReport is what --fill stored before the server started.
type FillReport struct {
	Before   int64   `json:"before"`
	Added    int64   `json:"added"`
	Seconds  float64 `json:"seconds"`
	Rate     float64 `json:"rate"`
	Days     int     `json:"days"`
	Lines    int     `json:"lines"`
	RawBytes int64   `json:"raw_bytes"`
	// CPUSeconds is this process's CPU time over the fill; Points its
	// rate every 10 s, against what the store held.
	CPUSeconds float64     `json:"cpu_seconds"`
	PerCPU     float64     `json:"artifacts_per_cpu_second"`
	Points     []FillPoint `json:"points"`
}

// FillPoint is one stretch of a fill: the artifacts the store held at its
// end, and the rate over it, per second and per CPU-second of the process.
type FillPoint struct {
	Stored int64   `json:"stored"`
	Rate   float64 `json:"rate"`
	PerCPU float64 `json:"per_cpu_second"`
	// SlowestMs is the longest InsertArtifacts of a batch in the
	// stretch: a full-text merge done at once shows here.
	SlowestMs float64 `json:"slowest_batch_ms"`
}

// cpuSeconds is this process's user and system time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// fillLines returns the lines of --fill-files: "mix" is the dataset
// replay and the internet-zipf mix together, so that the index holds the
// datasets' vocabulary and a long tail of addresses, ports and PIDs.
func (b *bench) fillLines(now time.Time) ([]line, error) {
	if b.f.FillFiles != "mix" {
		ls, _, err := linesOf(b.f.FillFiles, now)
		return ls, err
	}
	ls, _, err := linesOf("", now)
	if err != nil {
		return nil, err
	}
	ls = append(ls, internetLines(internetLineCount, now, false)...)
	r := rand.New(rand.NewPCG(3, 4))
	r.Shuffle(len(ls), func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
	return ls, nil
}

// fill stores artifacts into dir's database with the store's own
// InsertArtifacts, in batches of f.Batch, until the org holds f.Fill. The
// added artifacts' timestamps are spread evenly over the f.FillDays days
// before now, oldest first, as a sensor streaming for that long would have
// sent them; each id is a UUIDv7 of its timestamp, as the API would have
// given it on receipt. What the pipeline adds besides the row and its
// full-text entry (enrichment, detection state) is not filled: the load
// phase after it runs the whole pipeline.
func (b *bench) fill(ctx context.Context, dir string) error {
	st, insert, where, err := b.openFill(ctx, dir)
	if err != nil {
		return fmt.Errorf("--fill: %w", err)
	}
	defer st.Close()
	_, have, err := st.SearchArtifacts(ctx, b.f.Org, vigil.ArtifactFilter{Page: vigil.Page{Limit: 1}})
	if err != nil {
		return fmt.Errorf("--fill: count: %w", err)
	}
	rep := &FillReport{Before: int64(have), Days: b.f.FillDays}
	b.rep.Fill = rep
	n := b.f.Fill - have
	if n <= 0 {
		b.logf("fill: the org holds %d artifacts already", have)
		return nil
	}
	now := time.Now().UTC()
	lines, err := b.fillLines(now)
	if err != nil {
		return fmt.Errorf("--fill-files: %w", err)
	}
	rep.Lines = len(lines)
	span := time.Duration(b.f.FillDays) * 24 * time.Hour
	first := now.Add(-span)
	step := span / time.Duration(n)
	r := rand.New(rand.NewPCG(5, 6))
	b.logf("fill: %d artifacts (%d lines) over %d days into %s", n, len(lines), b.f.FillDays, where)
	t0, cpu0 := time.Now(), cpuSeconds()
	last, lastCPU, lastDone := t0, cpu0, 0
	var slowest time.Duration
	for done := 0; done < n && ctx.Err() == nil; {
		arts := make([]*vigil.Artifact, min(b.f.Batch, n-done))
		for k := range arts {
			i := done + k
			l := lines[i%len(lines)]
			ts := first.Add(time.Duration(i) * step).Truncate(time.Microsecond)
			arts[k] = &vigil.Artifact{ID: idAt(ts, r), OrgID: b.f.Org, Source: l.Source, Raw: l.Raw, Timestamp: ts, CreatedAt: ts}
			rep.RawBytes += int64(len(l.Raw))
		}
		start := time.Now()
		if err := insert(ctx, b.f.Org, arts); err != nil {
			return fmt.Errorf("--fill: %w", err)
		}
		slowest = max(slowest, time.Since(start))
		done += len(arts)
		rep.Added = int64(done)
		if now := time.Now(); now.Sub(last) >= 10*time.Second || done == n {
			cpu := cpuSeconds()
			pt := FillPoint{Stored: int64(have + done), Rate: float64(done-lastDone) / now.Sub(last).Seconds(), SlowestMs: slowest.Seconds() * 1000}
			if cpu > lastCPU {
				pt.PerCPU = float64(done-lastDone) / (cpu - lastCPU)
			}
			rep.Points = append(rep.Points, pt)
			b.logf("fill: %d of %d, store holds %d: %.0f/s, %.0f per CPU-second over the last %.0fs, slowest batch %.0f ms",
				done, n, pt.Stored, pt.Rate, pt.PerCPU, now.Sub(last).Seconds(), pt.SlowestMs)
			last, lastCPU, lastDone, slowest = now, cpu, done, 0
		}
	}
	rep.Seconds, rep.CPUSeconds = time.Since(t0).Seconds(), cpuSeconds()-cpu0
	rep.Rate = float64(rep.Added) / rep.Seconds
	if rep.CPUSeconds > 0 {
		rep.PerCPU = float64(rep.Added) / rep.CPUSeconds
	}
	b.logf("fill: %d stored in %.0fs (%.0f/s, %.0f per CPU-second)", rep.Added, rep.Seconds, rep.Rate, rep.PerCPU)
	return ctx.Err()
}

// openFill opens the store --fill stores into: the embedded server's
// SQLite in dir, with InsertArtifacts, or with --database-url its
// PostgreSQL, with COPY (CopyArtifacts: the same rows, fresh ids only).
func (b *bench) openFill(ctx context.Context, dir string) (st interface {
	SearchArtifacts(context.Context, string, vigil.ArtifactFilter) ([]*vigil.Artifact, int, error)
	Close() error
}, insert func(context.Context, string, []*vigil.Artifact) error, where string, err error) {
	if b.f.DatabaseURL != "" {
		pg, err := postgres.Open(ctx, b.f.DatabaseURL, postgres.Options{})
		if err != nil {
			return nil, nil, "", err
		}
		if b.f.ArtifactsURL != "" {
			vs, err := openVLogs(pg, b.f.ArtifactsURL, b.f.ArtifactsStorage)
			if err != nil {
				pg.Close()
				return nil, nil, "", err
			}
			return vs, vs.LoadArtifacts, "VictoriaLogs (--artifacts-url, jsonline to the storage nodes)", nil
		}
		return pg, pg.CopyArtifacts, "PostgreSQL (--database-url)", nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, "", err
	}
	lite, err := sqlite.Open(ctx, filepath.Join(dir, "vigil.db"), sqlite.Options{FsyncAlways: b.f.Fsync == "always"})
	if err != nil {
		return nil, nil, "", err
	}
	return lite, lite.InsertArtifacts, dir, nil
}

// idAt is a UUIDv7 of time t: 48 bits of Unix milliseconds, then random
// bits, as uuid.NewV7 makes at the current time.
func idAt(t time.Time, r *rand.Rand) string {
	var u uuid.UUID
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()))
	copy(u[:6], ms[2:])
	binary.BigEndian.PutUint64(u[8:], r.Uint64())
	binary.BigEndian.PutUint16(u[6:], uint16(r.Uint32()))
	u[6] = 0x70 | u[6]&0x0f // version 7
	u[8] = 0x80 | u[8]&0x3f // RFC 4122 variant
	return u.String()
}

// DiskReport is the data dir after the server stopped (its queue drained,
// its WAL checkpointed into the database): bytes on disk per artifact, as
// a ratio to the raw bytes stored.
type DiskReport struct {
	Files            map[string]int64 `json:"files"` // database, wal, queue, ballast (not in Bytes), other
	Bytes            int64            `json:"bytes"`
	Artifacts        int64            `json:"artifacts"`
	RawBytes         int64            `json:"raw_bytes"`
	BytesPerArtifact float64          `json:"bytes_per_artifact"`
	RatioToRaw       float64          `json:"ratio_to_raw"`
	Sources          []SourceBytes    `json:"sources"`
	Objects          []SourceBytes    `json:"objects,omitempty"` // tables and indexes, by dbstat
	// VictoriaLogs is set when Files are the storage nodes' data dirs
	// (--artifacts-data) and RawBytes the run's lines.
	VictoriaLogs bool `json:"victorialogs,omitempty"`
}

// SourceBytes is the artifacts and raw bytes of a source, or the bytes
// of a database object (Artifacts 0).
type SourceBytes struct {
	Name      string `json:"name"`
	Artifacts int64  `json:"artifacts,omitempty"`
	Bytes     int64  `json:"bytes"`
}

// measureDisk sizes dir's files and reads the raw bytes stored per source
// from its database (a full scan: seconds at millions of artifacts).
func (b *bench) measureDisk(ctx context.Context, dir string) (*DiskReport, error) {
	d := &DiskReport{Files: map[string]int64{}}
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		kind := "other"
		switch {
		case rel == "vigil.db":
			kind = "database"
		case rel == "vigil.db-wal" || rel == "vigil.db-shm":
			kind = "wal"
		case rel == "space-ballast":
			kind = "ballast" // a fixed reserve, not per artifact
		case strings.Contains(rel, string(filepath.Separator)):
			kind = "queue"
		}
		d.Files[kind] += info.Size()
		if kind != "ballast" {
			d.Bytes += info.Size()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	db := sqlite.OpenDB(filepath.Join(dir, "vigil.db")+"?mode=ro", "query_only(1)")
	defer db.Close()
	sizes, err := sqlite.RawSizes(ctx, db) // compressed lines by their size as they came
	if err != nil {
		return nil, err
	}
	for _, r := range sizes {
		d.Sources = append(d.Sources, SourceBytes{Name: r.Source, Artifacts: r.Artifacts, Bytes: r.Bytes})
		d.Artifacts += r.Artifacts
		d.RawBytes += r.Bytes
	}
	if d.Artifacts > 0 {
		d.BytesPerArtifact = float64(d.Bytes) / float64(d.Artifacts)
	}
	if d.RawBytes > 0 {
		d.RatioToRaw = float64(d.Bytes) / float64(d.RawBytes)
	}
	// dbstat is compiled into some builds of SQLite only: without it the
	// objects are left out.
	if rows, err := db.QueryContext(ctx, `SELECT name, SUM(pgsize) FROM dbstat GROUP BY name`); err == nil {
		for rows.Next() {
			var s SourceBytes
			if rows.Scan(&s.Name, &s.Bytes) == nil {
				d.Objects = append(d.Objects, s)
			}
		}
		rows.Close()
		sort.Slice(d.Objects, func(i, j int) bool { return d.Objects[i].Bytes > d.Objects[j].Bytes })
	}
	return d, nil
}

// writeFillDisk prints the fill and the disk report, if any.
func (b *bench) writeFillDisk(p func(string, ...any)) {
	if f := b.rep.Fill; f != nil {
		p("")
		p("fill: %d artifacts held before, %d added in %.0fs (%.0f/s, %.0f per CPU-second of this process, InsertArtifacts), timestamps over %d days; %d distinct lines, %.0f raw bytes each",
			f.Before, f.Added, f.Seconds, f.Rate, f.PerCPU, f.Days, f.Lines, float64(f.RawBytes)/math.Max(float64(f.Added), 1))
	}
	d := b.rep.Disk
	if d == nil {
		return
	}
	mb := func(v int64) string { return fmt.Sprintf("%.1f MB", float64(v)/1e6) }
	p("")
	if d.VictoriaLogs {
		p("disk of the VictoriaLogs storage nodes (after a forced flush and %s): %s for %d artifacts of %s raw: %.0f bytes per artifact, %.2f × raw",
			flushWait, mb(d.Bytes), d.Artifacts, mb(d.RawBytes), d.BytesPerArtifact, d.RatioToRaw)
		for dir, n := range d.Files {
			p("  %s %s", dir, mb(n))
		}
		return
	}
	p("disk after the server stopped (queue drained, WAL checkpointed): %s for %d artifacts of %s raw", mb(d.Bytes), d.Artifacts, mb(d.RawBytes))
	p("  %.0f bytes per artifact, %.2f × raw; database %s, WAL %s, queue %s, other %s (and the fixed space ballast, %s)",
		d.BytesPerArtifact, d.RatioToRaw, mb(d.Files["database"]), mb(d.Files["wal"]), mb(d.Files["queue"]), mb(d.Files["other"]), mb(d.Files["ballast"]))
	for _, s := range d.Sources {
		p("  source %-10s %10d artifacts, %s raw (%.0f bytes each)", s.Name, s.Artifacts, mb(s.Bytes), float64(s.Bytes)/math.Max(float64(s.Artifacts), 1))
	}
	for _, o := range d.Objects {
		if o.Bytes*100 < d.Bytes {
			continue // under 1 %
		}
		p("  object %-32s %s (%.1f bytes per artifact)", o.Name, mb(o.Bytes), float64(o.Bytes)/math.Max(float64(d.Artifacts), 1))
	}
}
