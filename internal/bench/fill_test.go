package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/sqlite"
)

// TestFill: --fill stores what it is asked to, its timestamps spread over
// the days asked and its ids UUIDv7 of their timestamps; a second fill to
// the same size adds nothing; the disk report counts them and their raw
// bytes.
func TestFill(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := &bench{f: Config{Fill: 450, Batch: 100, Org: "o", FillDays: 2, FillFiles: "synthetic", Fsync: "deferred"},
		rep: &Report{}, stderr: io.Discard, start: time.Now()}
	if err := b.fill(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if b.rep.Fill.Added != 450 || b.rep.Fill.Before != 0 {
		t.Fatalf("fill: %+v", b.rep.Fill)
	}
	raw := b.rep.Fill.RawBytes
	if err := b.fill(ctx, dir); err != nil || b.rep.Fill.Before != 450 || b.rep.Fill.Added != 0 {
		t.Fatalf("second fill: %+v, %v", b.rep.Fill, err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "vigil.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	arts, total, err := st.SearchArtifacts(ctx, "o", vigil.ArtifactFilter{Page: vigil.Page{Limit: 1000}})
	st.Close()
	if err != nil || total != 450 {
		t.Fatalf("stored %d, %v", total, err)
	}
	newest, oldest := arts[0].Timestamp, arts[len(arts)-1].Timestamp
	if span := newest.Sub(oldest); span < 47*time.Hour || span > 48*time.Hour || time.Since(newest) > time.Hour {
		t.Errorf("timestamps from %s to %s", oldest, newest)
	}
	for _, a := range arts {
		u, err := uuid.Parse(a.ID)
		if err != nil || u.Version() != 7 {
			t.Fatalf("id %s: version %d, %v", a.ID, u.Version(), err)
		}
		if sec, nsec := u.Time().UnixTime(); time.Unix(sec, nsec).UnixMilli() != a.Timestamp.UnixMilli() {
			t.Fatalf("id %s is of %s, its artifact of %s", a.ID, time.Unix(sec, nsec), a.Timestamp)
		}
	}
	d, err := b.measureDisk(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.Artifacts != 450 || d.RawBytes != raw || d.Files["database"] == 0 || d.RatioToRaw <= 1 {
		t.Errorf("disk: %+v, want 450 artifacts of %d raw bytes", d, raw)
	}
}

// TestGrowthPlot: --growth-png reads the reports and draws a PNG.
func TestGrowthPlot(t *testing.T) {
	dir := t.TempDir()
	var spec []string
	for i, stored := range []int64{1_000_000, 10_000_000} {
		r := Report{Load: &LoadReport{E2ERate: 5000 / float64(i+1), ArtifactsPerCPUs: 9000}, Search: &SearchReport{Stored: stored,
			Classes: []SearchClass{{Name: "single term", P99Ms: 20}, {Name: "phrase + 24 h filter", P99Ms: 30}}}}
		data, _ := json.Marshal(r)
		path := filepath.Join(dir, "r.json"+string(rune('0'+i)))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		spec = append(spec, "after="+path)
	}
	points, err := readGrowth(spec[0] + "," + spec[1])
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writeGrowth(&buf, points); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&buf); err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if _, err := readGrowth("no-label.json"); err == nil {
		t.Error("a report without label= was read")
	}
}
