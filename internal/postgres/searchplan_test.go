package postgres_test

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/storetest"
)

// statement is one statement a search ran, with its arguments.
type statement struct {
	sql  string
	args []any
}

// traceSearch runs one search of f (its total exact up to exactUpTo) on
// the store at dbURL, opened traced and given to tune first, and returns
// the statements it ran in order, its total and whether it was estimated.
func traceSearch(t *testing.T, dbURL, org string, f vigil.ArtifactFilter, exactUpTo int, tune func(*postgres.Store)) ([]statement, int, bool) {
	t.Helper()
	var mu sync.Mutex
	var stmts []statement
	on := false
	s, err := postgres.OpenTraced(t.Context(), dbURL, postgres.Options{}, func(sql string, args []any) {
		mu.Lock()
		defer mu.Unlock()
		if on {
			stmts = append(stmts, statement{sql, args})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if tune != nil {
		tune(s)
	}
	mu.Lock()
	on = true
	mu.Unlock()
	_, total, estimated, err := s.SearchArtifactsEstimated(t.Context(), org, f, exactUpTo)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return stmts, total, estimated
}

// planNode is the part of a node of EXPLAIN (ANALYZE, FORMAT JSON) that
// the plan tests read.
type planNode struct {
	Type        string     `json:"Node Type"`
	Relation    string     `json:"Relation Name"`
	Index       string     `json:"Index Name"`
	Rows        float64    `json:"Actual Rows"`
	Loops       float64    `json:"Actual Loops"`
	Filtered    float64    `json:"Rows Removed by Filter"`
	Rechecked   float64    `json:"Rows Removed by Index Recheck"`
	ExactBlocks float64    `json:"Exact Heap Blocks"`
	LossyBlocks float64    `json:"Lossy Heap Blocks"`
	Children    []planNode `json:"Plans"`
}

// work is what a search's statements did, from their plans as run.
type work struct {
	// heapRows: rows of artifacts read from its partitions (returned by
	// a scan, or removed by its filter or recheck), samples included.
	heapRows float64
	// sampleRows: of heapRows, those of samples (TABLESAMPLE).
	sampleRows float64
	// heapBlocks: blocks of artifacts read by bitmap scans; lossyBlocks,
	// of them, those whose bitmap had gone lossy (every row of the block
	// tested again).
	heapBlocks, lossyBlocks float64
	// walkRows: of heapRows, those read by scans other than bitmap
	// heap scans and samples (walks of an index or of the table).
	walkRows float64
	// bitmapRows: the rows bitmap heap scans returned (their matches).
	bitmapRows float64
	// page: what the reads of rows (no COUNT, no sample) did.
	page *work
	// statements: reads of artifacts; of them, ginScans read the GIN
	// index, brinScans the BRIN index.
	statements, ginScans, brinScans int
	// plans: each statement's plan, for messages.
	plans []string
}

// replay runs stmts again on a connection to dbURL, in one transaction,
// in order: the settings a search makes (set_config) as they are, those
// of the planner for the next read only, each read of artifacts under
// EXPLAIN (ANALYZE, FORMAT JSON), the planner's own estimates (EXPLAIN)
// left out; and adds up what the reads did.
func replay(t *testing.T, dbURL string, stmts []statement) work {
	t.Helper()
	conn := mustConn(t, dbURL)
	ctx := t.Context()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var w work
	for _, st := range stmts {
		switch {
		case strings.HasPrefix(st.sql, "EXPLAIN"):
			continue
		case strings.Contains(st.sql, "set_config("):
			if _, err := tx.Exec(ctx, st.sql, st.args...); err != nil {
				t.Fatalf("%s: %v", st.sql, err)
			}
			continue
		case !strings.Contains(st.sql, "FROM artifacts"):
			continue
		}
		var raw []byte
		if err := tx.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+st.sql, st.args...).Scan(&raw); err != nil {
			t.Fatalf("%s: %v", st.sql, err)
		}
		var plans []struct {
			Plan planNode `json:"Plan"`
		}
		if err := json.Unmarshal(raw, &plans); err != nil || len(plans) != 1 {
			t.Fatalf("plan of %s: %v", st.sql, err)
		}
		// The search sets bitmapOnly (or no bitmaps) for the one read
		// after it, in a transaction of its own.
		if _, err := tx.Exec(ctx, `SELECT set_config('enable_seqscan', 'on', true), set_config('enable_indexscan', 'on', true),
			set_config('enable_bitmapscan', 'on', true)`); err != nil {
			t.Fatal(err)
		}
		w.statements++
		gin, brin := w.add(plans[0].Plan)
		if !strings.Contains(st.sql, "COUNT(") {
			if w.page == nil {
				w.page = &work{}
			}
			w.page.add(plans[0].Plan)
		}
		if gin {
			w.ginScans++
		}
		if brin {
			w.brinScans++
		}
		w.plans = append(w.plans, st.sql+"\n"+planText(plans[0].Plan, "  "))
	}
	return w
}

// add adds what n and the nodes under it did, and reports whether they
// read the GIN index (of the vectors) and a BRIN index (of the
// timestamps).
func (w *work) add(n planNode) (gin, brin bool) {
	loops := max(n.Loops, 1)
	switch {
	case n.Type == "Bitmap Index Scan" && strings.HasSuffix(n.Index, "_search_idx"):
		gin = true
	case n.Type == "Bitmap Index Scan" && strings.HasSuffix(n.Index, "_ts_idx"):
		brin = true
	case n.Relation != "" && strings.HasPrefix(n.Relation, "artifacts") && n.Type != "Bitmap Index Scan":
		w.heapRows += (n.Rows + n.Filtered + n.Rechecked) * loops
		w.heapBlocks += n.ExactBlocks + n.LossyBlocks
		w.lossyBlocks += n.LossyBlocks
		switch n.Type {
		case "Sample Scan":
			w.sampleRows += (n.Rows + n.Filtered) * loops
		case "Bitmap Heap Scan":
			w.bitmapRows += n.Rows * loops
		default:
			w.walkRows += (n.Rows + n.Filtered) * loops
		}
	}
	for _, c := range n.Children {
		g, b := w.add(c)
		gin, brin = gin || g, brin || b
	}
	return gin, brin
}

// planText is a short text form of a plan as run, one node a line.
func planText(n planNode, indent string) string {
	var b strings.Builder
	b.WriteString(indent + n.Type)
	if n.Relation != "" {
		b.WriteString(" on " + n.Relation)
	}
	if n.Index != "" {
		b.WriteString(" using " + n.Index)
	}
	b.WriteString(" rows=" + jsonNum(n.Rows) + " loops=" + jsonNum(n.Loops))
	if n.Filtered > 0 {
		b.WriteString(" filtered=" + jsonNum(n.Filtered))
	}
	if n.Rechecked > 0 {
		b.WriteString(" rechecked=" + jsonNum(n.Rechecked))
	}
	if n.LossyBlocks > 0 {
		b.WriteString(" lossy=" + jsonNum(n.LossyBlocks))
	}
	b.WriteString("\n")
	for _, c := range n.Children {
		b.WriteString(planText(c, indent+"  "))
	}
	return b.String()
}

func jsonNum(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// planArtifacts are the datasets' auth and firewall lines, shuffled, six
// times over (66,000 artifacts), stored in the order of their timestamps
// spread evenly over the 30 days before end, as a sensor streaming them
// would have sent them.
func planArtifacts(t *testing.T, end time.Time) []*vigil.Artifact {
	t.Helper()
	var lines []*vigil.Artifact
	for _, src := range []string{"auth", "firewall"} {
		for _, l := range storetest.DatasetLines(t, src+"/*") {
			lines = append(lines, &vigil.Artifact{Source: src, Raw: l})
		}
	}
	if len(lines) < 5000 {
		t.Skip("datasets not found in ../../../shared/datasets")
	}
	r := rand.New(rand.NewPCG(1, 2))
	n := 6 * len(lines)
	step := 30 * 24 * time.Hour / time.Duration(n)
	arts := make([]*vigil.Artifact, 0, n)
	for i := range 6 {
		r.Shuffle(len(lines), func(a, b int) { lines[a], lines[b] = lines[b], lines[a] })
		for k, l := range lines {
			at := end.Add(-time.Duration(n-(i*len(lines)+k)) * step)
			arts = append(arts, &vigil.Artifact{ID: vigil.NewID(), Source: l.Source, Raw: l.Raw, Timestamp: at, CreatedAt: at, Metadata: []byte("{}")})
		}
	}
	return arts
}

// TestSearchPlans: what the statements of a search read, as run
// (EXPLAIN ANALYZE of each, replayed with the search's settings), on
// 66,000 dataset lines over 30 days, analyzed.
func TestSearchPlans(t *testing.T) {
	ctx := t.Context()
	dbURL := freshDB(t)
	s := mustOpen(t, dbURL, postgres.Options{})
	end := time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC)
	arts := planArtifacts(t, end)
	for i := 0; i < len(arts); i += 5000 {
		if err := s.CopyArtifacts(ctx, "o1", arts[i:min(i+5000, len(arts))]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := mustConn(t, dbURL).Exec(ctx, `VACUUM ANALYZE artifacts`); err != nil {
		t.Fatal(err)
	}
	exact := func(f vigil.ArtifactFilter) int {
		_, n, err := s.SearchArtifacts(ctx, "o1", f)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	// A phrase over the last week: its matches are read once (the page
	// by the keys the count found), and that read of the GIN index reads
	// the blocks that hold the week (the BRIN index of the timestamps, ANDed with
	// the GIN index's bitmap), not every block of the month holding the
	// phrase's words. Before, the planner took those words as
	// independent, so expected a few rows from the GIN index, and tested
	// the time of each of the month's (at 10 M artifacts, 25,000 rows for
	// the 1,000 matches of a day).
	t.Run("phrase over a week", func(t *testing.T) {
		f := vigil.ArtifactFilter{Query: `"authentication failure"`, Range: vigil.TimeRange{Start: end.Add(-7 * 24 * time.Hour), End: end}}
		stmts, total, estimated := traceSearch(t, dbURL, "o1", f, 10000, nil)
		if want := exact(f); total != want || estimated || want == 0 {
			t.Fatalf("total %d (estimated %v), want %d exact", total, estimated, want)
		}
		// The blocks holding the phrase's words.
		var blocks float64
		if err := mustConn(t, dbURL).QueryRow(ctx, `SELECT COUNT(DISTINCT (ctid::text::point)[0]) FROM artifacts
			WHERE org_id = 'o1' AND search @@ 'authentication & failure'::tsquery`).Scan(&blocks); err != nil {
			t.Fatal(err)
		}
		w := replay(t, dbURL, stmts)
		if w.ginScans != 1 || w.brinScans != w.ginScans || w.heapBlocks > 0.75*blocks {
			t.Errorf("%d of the %d reads of the GIN index (want 1) read the week's blocks, %.0f blocks in all, of %.0f holding the words:\n%s",
				w.brinScans, w.ginScans, w.heapBlocks, blocks, strings.Join(w.plans, "\n"))
		}
	})

	// A phrase with more matches over the month than the bound, but no
	// more than four times it by the planner's statistics (0.7 % of the
	// rows, 444 in all; "invalid", its rarer word, on 516): the count by
	// the GIN bitmap goes on to the last match, keeping the keys of the
	// page, so the total is exact and the page is read by key, no sample
	// taken. Before, the count stopped at the bound+1st match, the page's
	// statement read every match again to sort them for the newest, and
	// a sample estimated the total (at 10 M artifacts, "authentication
	// failure" over 30 days: 10,001 + 22,724 rows fetched and a sample of
	// 20,000 rows, 258 ms at p99).
	for _, off := range []int{0, 10} {
		t.Run("phrase a few times the bound, offset "+strconv.Itoa(off), func(t *testing.T) {
			const upTo, limit = 150, 10
			f := vigil.ArtifactFilter{Query: `"invalid user"`, Range: vigil.TimeRange{Start: end.Add(-30 * 24 * time.Hour), End: end},
				Page: vigil.Page{Limit: limit, Offset: off}}
			stmts, total, estimated := traceSearch(t, dbURL, "o1", f, upTo, nil)
			want := exact(f)
			if estimated || total != want || want <= upTo {
				t.Fatalf("total %d (estimated %v), want %d exact (more than %d)", total, estimated, want, upTo)
			}
			page, _, _, err := s.SearchArtifactsEstimated(ctx, "o1", f, upTo)
			if err != nil {
				t.Fatal(err)
			}
			wantPage, _, err := s.SearchArtifacts(ctx, "o1", f)
			if err != nil {
				t.Fatal(err)
			}
			if got, w := artifactIDs(page), artifactIDs(wantPage); !slices.Equal(got, w) {
				t.Fatalf("page of %d: %v, want %v", len(got), got, w)
			}
			w := replay(t, dbURL, stmts)
			if p := w.page; w.sampleRows > 0 || p == nil || p.heapRows > float64(limit) {
				t.Errorf("the page of %d at offset %d (%d matches) read %+v besides the count, the sample %.0f rows:\n%s",
					limit, off, want, p, w.sampleRows, strings.Join(w.plans, "\n"))
			}
		})
	}

	// A word excluded from a frequent one (kernel lines that are not
	// TCP: 2.6 % of lines, the planner's statistics say 19 %): the count
	// up to the bound reads the GIN index's bitmap of the matches, and
	// neither walks the newest rows (too few of them match) nor tests
	// the table's rows until it finds bound+1.
	t.Run("exclusion", func(t *testing.T) {
		const upTo = 1000
		f := vigil.ArtifactFilter{Query: "kernel -tcp", Page: vigil.Page{Limit: 10}}
		stmts, total, estimated := traceSearch(t, dbURL, "o1", f, upTo, func(s *postgres.Store) { postgres.SetNewestRows(s, 10*upTo) })
		want := exact(f)
		if !estimated || total <= upTo || total < want*7/10 || total > want*13/10 {
			t.Errorf("total %d (estimated %v), want an estimate near %d", total, estimated, want)
		}
		w := replay(t, dbURL, stmts)
		if w.heapRows-w.sampleRows > 3*(upTo+1) {
			t.Errorf("the search read %.0f rows besides its sample's %.0f, for a count up to %d:\n%s", w.heapRows-w.sampleRows, w.sampleRows, upTo+1, strings.Join(w.plans, "\n"))
		}
	})

	// Two frequent words (kernel lines of TCP, 72 % of lines), counted up
	// to 1,000: the sample leaves no doubt that they are more, so the
	// search reads its page and its sample only. Before, it counted
	// them too, up to the 1,001st match among the newest rows (or, in
	// the GIN index, every match of the partition holding it: at 10 M,
	// hundreds of milliseconds for "failed password").
	t.Run("two frequent words", func(t *testing.T) {
		const upTo = 1000
		f := vigil.ArtifactFilter{Query: "kernel tcp", Page: vigil.Page{Limit: 50}}
		stmts, total, estimated := traceSearch(t, dbURL, "o1", f, upTo, nil)
		want := exact(f)
		if !estimated || total < want*7/10 || total > want*13/10 {
			t.Errorf("total %d (estimated %v), want an estimate near %d", total, estimated, want)
		}
		w := replay(t, dbURL, stmts)
		if read := w.heapRows - w.sampleRows; read > 4*50 {
			t.Errorf("the search read %.0f rows besides its sample's %.0f, for a page of 50:\n%s", read, w.sampleRows, strings.Join(w.plans, "\n"))
		}
	})

	// A term within a source, where it is seldom: "kernel" is on nearly
	// every firewall line and on 0.7 % of the auth lines. The search
	// reads the matches within the source only (the source inside the
	// full-text index), with or without a window; before, the bitmap of
	// "kernel" in every source was read and each of its rows fetched to
	// test its source (51,000 rows for the 462 matches; at 10 M, 985 ms
	// for "udp" within the firewall, 1.6 s within a day of it). On a
	// server whose work_mem is small for its tables (as 4 MB, the
	// default, is for 10 M artifacts, here made 64 kB for these 66,000),
	// its bitmaps stay exact: a lossy one has every row of its blocks
	// read and tested again.
	if _, err := mustConn(t, dbURL).Exec(ctx, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET work_mem = %L', current_database(), '64kB'); END $$`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		start time.Time
	}{
		{"term + source", time.Time{}},
		{"term + source + a week", end.Add(-7 * 24 * time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := vigil.ArtifactFilter{Query: "kernel", Source: "auth", Range: vigil.TimeRange{Start: tc.start}, Page: vigil.Page{Limit: 50}}
			if !tc.start.IsZero() {
				f.Range.End = end
			}
			stmts, total, estimated := traceSearch(t, dbURL, "o1", f, 10000, nil)
			if want := exact(f); total != want || estimated || want == 0 {
				t.Fatalf("total %d (estimated %v), want %d exact", total, estimated, want)
			}
			// Within a window, PostgreSQL ANDs the BRIN index's blocks of
			// the window, a lossy bitmap, with the matches; the blocks
			// both hold are then read whole, each row tested again: about
			// the rows of the blocks holding the matches, twice that at
			// most (the BRIN index's ranges of 128 blocks reach beyond
			// the window's ends). Before, every row of the window's
			// blocks holding the term in any source (7,600 here).
			blockRows := 0.0
			if !tc.start.IsZero() {
				if err := mustConn(t, dbURL).QueryRow(ctx, `SELECT COUNT(*) FROM artifacts WHERE (tableoid, (ctid::text::point)[0]) IN
					(SELECT tableoid, (ctid::text::point)[0] FROM artifacts WHERE org_id = 'o1' AND source = $1 AND search @@ $2::tsquery AND ts >= $3 AND ts < $4)`,
					f.Source, f.Query, f.Range.Start.UnixNano(), f.Range.End.UnixNano()).Scan(&blockRows); err != nil {
					t.Fatal(err)
				}
			}
			w := replay(t, dbURL, stmts)
			if read := w.heapRows - w.sampleRows; w.ginScans == 0 || read > 2*blockRows+3*float64(total)+100 || tc.start.IsZero() && w.lossyBlocks > 0 {
				t.Errorf("the search read %.0f rows besides its sample's %.0f (%d reads of the GIN index, %.0f lossy blocks) for %d matches within the source (in blocks of %.0f rows):\n%s",
					read, w.sampleRows, w.ginScans, w.lossyBlocks, total, blockRows, strings.Join(w.plans, "\n"))
			}
		})
	}
}

// artifactIDs are the ids of arts, in order.
func artifactIDs(arts []*vigil.Artifact) []string {
	ids := make([]string, len(arts))
	for i, a := range arts {
		ids[i] = a.ID
	}
	return ids
}
