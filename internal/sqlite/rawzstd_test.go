package sqlite

import (
	"context"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// TestCompressedRaw stores the dataset lines twice, into a store that
// compresses them (a dictionary per source after 500 lines) and one that
// does not, and finds the same artifacts with the same totals and text
// in both: searches, pages, previews, reads by id, raw bytes per
// source, after retention, and after reopening.
func TestCompressedRaw(t *testing.T) {
	ctx := context.Background()
	lines := datasetLines(t)
	if len(lines) > 12000 {
		lines = lines[:12000]
	}
	dir := t.TempDir()
	open := func(name string, after int) *Store {
		s, err := Open(ctx, filepath.Join(dir, name), Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.raw.trainAfter = after
		return s
	}
	zs, plain := open("z.db", 500), open("p.db", 1<<30)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	long := strings.Repeat(lines[0][1]+" ", 2*vigil.PreviewRawBytes/len(lines[0][1]))
	var ids []string
	for start := 0; start < len(lines); start += 500 {
		var batch []*vigil.Artifact
		for i := start; i < min(start+500, len(lines)); i++ {
			raw := lines[i][1]
			if i == len(lines)-1 {
				raw = long // stored compressed, longer than a preview
			}
			at := t0.Add(time.Duration(i) * time.Second)
			batch = append(batch, &vigil.Artifact{ID: vigil.NewID(), Source: lines[i][0], Raw: raw, Timestamp: at, CreatedAt: at})
			ids = append(ids, batch[len(batch)-1].ID)
		}
		for _, s := range []*Store{zs, plain} {
			if err := s.InsertArtifacts(ctx, "o", batch); err != nil {
				t.Fatal(err)
			}
		}
	}
	var blobs, dicts int
	if err := zs.r.QueryRow(`SELECT (SELECT COUNT(*) FROM artifacts WHERE typeof(raw) = 'blob'), (SELECT COUNT(*) FROM raw_dicts)`).Scan(&blobs, &dicts); err != nil {
		t.Fatal(err)
	}
	if blobs < len(lines)/2 || dicts == 0 {
		t.Fatalf("%d of %d lines compressed, %d dictionaries", blobs, len(lines), dicts)
	}
	queries := []vigil.ArtifactFilter{
		{Query: "sshd"}, {Query: `"authentication failure"`}, {Query: "failed password"}, {Query: "fail*"},
		{Query: "sshd -failed"}, {Query: "udp", Source: "firewall"}, {Query: "-sshd"}, {},
		{Query: "sshd", Range: vigil.TimeRange{Start: t0.Add(time.Hour), End: t0.Add(2 * time.Hour)}},
		{Query: "sshd", Preview: true, Page: vigil.Page{Limit: 100}},
		{Preview: true, Page: vigil.Page{Limit: 3}},
	}
	same := func(when string) {
		t.Helper()
		for _, f := range queries {
			got, gotN, err := zs.SearchArtifacts(ctx, "o", f)
			if err != nil {
				t.Fatal(err)
			}
			want, wantN, err := plain.SearchArtifacts(ctx, "o", f)
			if err != nil {
				t.Fatal(err)
			}
			if gotN != wantN || len(got) != len(want) {
				t.Fatalf("%s, %+v: total %d, %d listed; uncompressed: %d, %d", when, f, gotN, len(got), wantN, len(want))
			}
			for i := range got {
				g, w := got[i], want[i]
				if g.ID != w.ID || g.Raw != w.Raw || g.RawBytes != w.RawBytes || g.RawTruncated != w.RawTruncated {
					t.Fatalf("%s, %+v: #%d is %s %q (%d bytes, cut %v); uncompressed: %s %q (%d, %v)",
						when, f, i, g.ID, g.Raw, g.RawBytes, g.RawTruncated, w.ID, w.Raw, w.RawBytes, w.RawTruncated)
				}
			}
		}
		got, err := zs.GetArtifacts(ctx, "o", ids)
		if err != nil {
			t.Fatal(err)
		}
		want, err := plain.GetArtifacts(ctx, "o", ids)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d read by id, uncompressed %d", when, len(got), len(want))
		}
		for i := range got {
			if got[i].Raw != want[i].Raw {
				t.Fatalf("%s: %s reads %q, uncompressed %q", when, got[i].ID, got[i].Raw, want[i].Raw)
			}
		}
	}
	same("stored")
	zsizes, err := RawSizes(ctx, zs.r)
	if err != nil {
		t.Fatal(err)
	}
	psizes, err := RawSizes(ctx, plain.r)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(zsizes, psizes) || len(psizes) != 4 {
		t.Fatalf("raw bytes per source %v, uncompressed %v", zsizes, psizes)
	}
	if got, _ := zs.GetArtifacts(ctx, "o", ids[len(ids)-1:]); len(got) != 1 || got[0].Raw != long {
		t.Fatalf("the long line reads back as %d artifacts", len(got))
	}

	// Retention removes compressed lines from the full-text index by
	// their text: the counts from the index alone stay right.
	cut := t0.Add(time.Duration(len(lines)/2) * time.Second)
	for _, s := range []*Store{zs, plain} {
		if _, err := s.DropArtifactsBefore(ctx, cut); err != nil {
			t.Fatal(err)
		}
	}
	same("after retention")

	// Reopened, the store knows its dictionaries.
	if err := zs.Close(); err != nil {
		t.Fatal(err)
	}
	zs = open("z.db", 500)
	same("reopened")
	for _, s := range []*Store{zs, plain} {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTrainTwoSourcesAtOnce: two workers that bring two sources to their
// dictionary at the same moment both get one, each under its own id,
// and nothing is logged as failed (they once took the same id, and one
// training failed on raw_dicts' key).
func TestTrainTwoSourcesAtOnce(t *testing.T) {
	ctx := context.Background()
	var logged strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logged.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := Open(ctx, filepath.Join(t.TempDir(), "v.db"), Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.raw.trainAfter = 1 << 30 // trained below, by hand
	bySource := map[string][]*vigil.Artifact{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, l := range datasetLines(t) {
		if l[0] != "auth" && l[0] != "firewall" || len(bySource[l[0]]) == trainSamples {
			continue
		}
		at := t0.Add(time.Duration(i) * time.Second)
		bySource[l[0]] = append(bySource[l[0]], &vigil.Artifact{ID: vigil.NewID(), Source: l[0], Raw: l[1], Timestamp: at, CreatedAt: at})
	}
	for _, arts := range bySource {
		if err := s.InsertArtifacts(ctx, "org", arts); err != nil {
			t.Fatal(err)
		}
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for src := range bySource {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			s.train(ctx, dictKey{"org", src})
		}()
	}
	close(start)
	wg.Wait()
	var n, ids int
	if err := s.w.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(DISTINCT id) FROM raw_dicts`).Scan(&n, &ids); err != nil {
		t.Fatal(err)
	}
	if n != 2 || ids != 2 || logged.Len() > 0 {
		t.Fatalf("%d dictionaries under %d ids, want 2 (log: %s)", n, ids, logged.String())
	}
	for src := range bySource {
		if !s.raw.has(dictKey{"org", src}) {
			t.Errorf("%s has no dictionary", src)
		}
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestCompressWhileOthersDo: the workers compress their batches before
// they take the writer, several at once with the same dictionaries; every
// line reads back as it was sent.
func TestCompressWhileOthersDo(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "v.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.raw.trainAfter = 300
	lines := datasetLines(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	batch := func(from, n int) []*vigil.Artifact {
		var arts []*vigil.Artifact
		for i := from; i < from+n; i++ {
			l := lines[i%len(lines)]
			at := t0.Add(time.Duration(i) * time.Millisecond)
			arts = append(arts, &vigil.Artifact{ID: vigil.NewID(), Source: l[0], Raw: l[1], Timestamp: at, CreatedAt: at})
		}
		return arts
	}
	// Enough lines of every source for its dictionary first.
	if err := s.InsertArtifacts(ctx, "org", batch(0, 4000)); err != nil {
		t.Fatal(err)
	}
	var trained int
	for _, src := range []string{"auth", "dns", "firewall", "suricata"} {
		if s.raw.has(dictKey{"org", src}) {
			trained++
		}
	}
	if trained < 2 {
		t.Fatalf("%d sources have a dictionary after 4,000 lines, want at least 2", trained)
	}
	const workers, batches, size = 4, 5, 400
	sent := make([][]*vigil.Artifact, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				arts := batch(4000+(w*batches+b)*size, size)
				sent[w] = append(sent[w], arts...)
				if err := s.InsertArtifacts(ctx, "org", arts); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var compressed int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM artifacts WHERE typeof(raw) = 'blob'`).Scan(&compressed); err != nil {
		t.Fatal(err)
	}
	if compressed < workers*batches*size/2 {
		t.Fatalf("%d lines stored compressed, want most of the %d sent at once", compressed, workers*batches*size)
	}
	for _, arts := range sent {
		ids := make([]string, len(arts))
		want := map[string]string{}
		for i, a := range arts {
			ids[i], want[a.ID] = a.ID, a.Raw
		}
		got, err := s.GetArtifacts(ctx, "org", ids)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(arts) {
			t.Fatalf("%d of %d artifacts read back", len(got), len(arts))
		}
		for _, a := range got {
			if a.Raw != want[a.ID] {
				t.Fatalf("artifact %s reads back %q, sent %q", a.ID, a.Raw, want[a.ID])
			}
		}
	}
}
