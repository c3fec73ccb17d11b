package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/postgres/pgtest"
	"github.com/vigil-soc/vigil/internal/storetest"
)

// requirePostgres fails t at once when the server is not reachable,
// rather than once per subtest.
func requirePostgres(t *testing.T) { pgtest.Require(t) }

// freshDB creates an empty database and returns its URL.
func freshDB(t testing.TB) string { return pgtest.FreshDB(t) }

func mustOpen(t testing.TB, dbURL string, opt postgres.Options) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dbURL, opt)
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// mustConn returns a plain connection to dbURL, for looking at the tables.
func mustConn(t testing.TB, dbURL string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func TestConformance(t *testing.T) {
	requirePostgres(t)
	storetest.Run(t, func(t *testing.T) storetest.Store {
		return mustOpen(t, freshDB(t), postgres.Options{})
	})
}

// TestSearchesLeaveReads: at most MaxSearches searches hold connections
// of the pool, so that however many run, the others serve every other
// read.
func TestSearchesLeaveReads(t *testing.T) {
	requirePostgres(t)
	s := mustOpen(t, freshDB(t), postgres.Options{})
	storetest.SearchesLeaveReads(t, s, func(hook func(context.Context)) int { return postgres.SetSearchHook(s, hook) })
}

// Several processes starting at once against an empty database apply each
// migration exactly once.
func TestConcurrentMigrations(t *testing.T) {
	dbURL := freshDB(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), dbURL, postgres.Options{MaxConns: 2})
			if err == nil {
				err = s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Open: %v", err)
		}
	}
	if applied, err := postgres.Migrate(t.Context(), dbURL); err != nil || len(applied) != 0 {
		t.Errorf("Migrate on a migrated database: applied %v, error %v; want nothing to do", applied, err)
	}
	var n, distinct int
	if err := mustConn(t, dbURL).QueryRow(t.Context(), `SELECT COUNT(*), COUNT(DISTINCT name) FROM schema_migrations`).Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n != distinct || n < 1 {
		t.Errorf("schema_migrations has %d rows, %d distinct; want each migration once", n, distinct)
	}
}

// processes opens n stores on one database: n processes of a scaled-out
// deployment, each with its own pool.
func processes(t *testing.T, dbURL string, n int) []*postgres.Store {
	var out []*postgres.Store
	for range n {
		out = append(out, mustOpen(t, dbURL, postgres.Options{MaxConns: 10}))
	}
	return out
}

// Observations sharing a key node, recorded at the same moment by several
// processes, open exactly one incident.
func TestConcurrentCorrelationOneIncident(t *testing.T) {
	const workers = 20
	dbURL := freshDB(t)
	stores := processes(t, dbURL, 4)
	for round := range 3 {
		org := vigil.NewID()
		shared := mustNode(t, stores[0], org, vigil.NodeRef{Type: vigil.NodeIP, Value: "203.0.113.7", Key: true})
		var own []string
		for i := range workers {
			own = append(own, mustNode(t, stores[0], org, vigil.NodeRef{Type: vigil.NodeHost, Value: fmt.Sprintf("host-%d", i)}))
		}
		now := vigil.Now()
		start := make(chan struct{})
		errs := make([]error, workers)
		incidents := make([]string, workers)
		var wg sync.WaitGroup
		for i := range workers {
			wg.Go(func() {
				s := stores[i%len(stores)]
				o := &vigil.Observation{ID: vigil.NewID(), Type: "test.concurrent", Description: "d", Severity: vigil.SeverityLow,
					NodeIDs: []string{shared, own[i]}, KeyNodeIDs: []string{shared}, CreatedAt: now, UpdatedAt: now}
				<-start
				errs[i] = correlate.NewEngine(s, nil, vigil.DefaultCorrelationPolicy()).Record(t.Context(), org, o, "concurrent")
				incidents[i] = o.IncidentID
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: worker %d: %v", round, i, err)
			}
		}
		list, total, err := stores[1].ListIncidents(t.Context(), org, vigil.IncidentFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if total != 1 {
			t.Fatalf("round %d: %d concurrent observations sharing a key node opened %d incidents, want 1", round, workers, total)
		}
		for i, id := range incidents {
			if id != list[0].ID {
				t.Errorf("round %d: worker %d got incident %s, want %s", round, i, id, list[0].ID)
			}
		}
		inc, err := stores[2].GetIncident(t.Context(), org, list[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(inc.Observations) != workers || inc.NodeCount != workers+1 {
			t.Errorf("round %d: incident has %d observations and %d nodes, want %d and %d", round, len(inc.Observations), inc.NodeCount, workers, workers+1)
		}
	}
}

// Observations chained by their key nodes (observation i names keys i and
// i+1), recorded at once, end in one incident whatever the order: the
// bridges merge what the others opened, without deadlocking for good.
func TestConcurrentCorrelationChainMerges(t *testing.T) {
	const workers = 20
	dbURL := freshDB(t)
	stores := processes(t, dbURL, 4)
	org := vigil.NewID()
	var keys []string
	for i := range workers + 1 {
		keys = append(keys, mustNode(t, stores[0], org, vigil.NodeRef{Type: vigil.NodeIP, Value: fmt.Sprintf("198.51.100.%d", i), Key: true}))
	}
	now := vigil.Now()
	start := make(chan struct{})
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			o := &vigil.Observation{ID: vigil.NewID(), Type: "test.chain", Description: "d", Severity: vigil.SeverityLow,
				NodeIDs: keys[i : i+2], KeyNodeIDs: keys[i : i+2], CreatedAt: now, UpdatedAt: now}
			<-start
			errs[i] = correlate.NewEngine(stores[i%len(stores)], nil, vigil.DefaultCorrelationPolicy()).Record(t.Context(), org, o, "chain")
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	list, _, err := stores[0].ListIncidents(t.Context(), org, vigil.IncidentFilter{Page: vigil.Page{Limit: vigil.MaxLimit}})
	if err != nil {
		t.Fatal(err)
	}
	var live []*vigil.Incident
	for _, inc := range list {
		if inc.MergedInto == nil {
			live = append(live, inc)
		}
	}
	if len(live) != 1 {
		t.Fatalf("chained observations left %d incidents not merged, want 1", len(live))
	}
	inc, err := stores[0].GetIncident(t.Context(), org, live[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(inc.Observations) != workers || inc.NodeCount != workers+1 {
		t.Errorf("surviving incident has %d observations and %d nodes, want %d and %d", len(inc.Observations), inc.NodeCount, workers, workers+1)
	}
}

// Workers evaluating one attacker's lines at once fire the detection once
// and grow its observation with the rest.
func TestConcurrentDetectFiresOnce(t *testing.T) {
	const workers = 20
	dbURL := freshDB(t)
	stores := processes(t, dbURL, 4)
	org := vigil.NewID()
	base := vigil.Now()
	start := make(chan struct{})
	errs := make([]error, workers)
	fired := make([][]correlate.Recorded, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			d := &vigil.Detection{
				Detector: "test.burst", Key: "203.0.113.7", Span: time.Minute, MinCount: 5,
				// One instant for all: every signal recorded before the
				// burst fires is inside its window.
				Signals: []vigil.Signal{{ArtifactID: vigil.NewID(), At: base,
					Member: fmt.Sprintf("user%d", i), Nodes: []vigil.NodeRef{{Type: vigil.NodeIP, Value: "203.0.113.7", Key: true}}}},
				Describe: func(key string, w vigil.WindowState) vigil.Finding {
					return vigil.Finding{Type: "test.burst", Severity: vigil.SeverityHigh, Title: "burst from " + key,
						Description: fmt.Sprintf("%d signals from %s", w.Count, key)}
				},
			}
			<-start
			fired[i], errs[i] = correlate.NewEngine(stores[i%len(stores)], nil, vigil.DefaultCorrelationPolicy()).Detect(t.Context(), org, []*vigil.Detection{d})
		})
	}
	close(start)
	wg.Wait()
	ids := map[string]bool{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
		for _, d := range fired[i] {
			ids[d.ObservationID] = true
		}
	}
	if len(ids) != 1 {
		t.Fatalf("concurrent detections of one key recorded %d observations, want 1", len(ids))
	}
	for id := range ids {
		o, err := stores[0].GetObservation(t.Context(), org, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(o.ArtifactIDs) != workers {
			t.Errorf("observation lists %d artifacts, want all %d signals", len(o.ArtifactIDs), workers)
		}
	}
	if _, total, _ := stores[0].ListIncidents(t.Context(), org, vigil.IncidentFilter{}); total != 1 {
		t.Errorf("%d incidents, want 1", total)
	}
}

// Workers of several processes evaluating one signature's alerts from
// many sources at once open one roll-up of it, which ends up holding
// every source (those below the threshold taken in when it formed).
func TestConcurrentRollupOpensOnce(t *testing.T) {
	const workers = 20
	dbURL := freshDB(t)
	stores := processes(t, dbURL, 4)
	org := vigil.NewID()
	pol := vigil.DefaultRollupPolicy()
	pol.Threshold = 3
	policy := correlate.PolicyFunc(func(context.Context, string) (vigil.RollupPolicy, error) { return pol, nil })
	start := make(chan struct{})
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			src := fmt.Sprintf("198.51.100.%d", i+1)
			d := &vigil.Detection{Detector: "suricata_alert", Key: "2001219|" + src, Span: time.Hour, MinCount: 1,
				Signals: []vigil.Signal{{ArtifactID: vigil.NewID(), At: vigil.Now(),
					Nodes: []vigil.NodeRef{{Type: vigil.NodeIP, Value: src, Key: true}, {Type: vigil.NodeIP, Value: "203.0.113.10"}}}},
				Describe: func(key string, w vigil.WindowState) vigil.Finding {
					return vigil.Finding{Type: "recon", Severity: vigil.SeverityMedium, Title: "scan from " + src,
						Description: "scan", Rollup: "Suricata: ET SCAN Potential SSH Scan"}
				},
			}
			<-start
			_, errs[i] = correlate.NewEngine(stores[i%len(stores)], nil, vigil.DefaultCorrelationPolicy()).WithPolicies(policy).
				Detect(t.Context(), org, []*vigil.Detection{d})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	all, _, err := stores[0].ListIncidents(t.Context(), org, vigil.IncidentFilter{Page: vigil.Page{Limit: 100}})
	if err != nil {
		t.Fatal(err)
	}
	var live []*vigil.Incident
	for _, i := range all {
		if i.MergedInto == nil {
			live = append(live, i)
		}
	}
	if len(live) != 1 || live[0].Rollup == nil {
		for _, i := range live {
			t.Logf("incident %q, %d artifacts, roll-up %+v", i.Title, i.ArtifactCount, i.Rollup)
		}
		t.Fatalf("%d incidents not merged away, want one roll-up", len(live))
	}
	inc, err := stores[0].GetIncident(t.Context(), org, live[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if r := inc.Rollup; r.Sources != workers || r.Count != workers || len(inc.Observations) != workers || inc.NodeCount != workers+1 ||
		inc.ArtifactCount != workers || inc.Title != "Suricata: ET SCAN Potential SSH Scan from 20 sources" {
		t.Errorf("roll-up %q %+v: %d observations, %d nodes, %d artifacts; want every one of the %d sources once",
			inc.Title, r, len(inc.Observations), inc.NodeCount, inc.ArtifactCount, workers)
	}
}

func mustNode(t *testing.T, s vigil.Store, org string, ref vigil.NodeRef) string {
	t.Helper()
	n, err := s.UpsertNodes(t.Context(), org, []vigil.NodeRef{ref})
	if err != nil {
		t.Fatalf("UpsertNodes: %v", err)
	}
	return n[0].ID
}

func month(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 12, 0, 0, 0, time.UTC) }

func newArtifact(raw string, ts time.Time) *vigil.Artifact {
	return &vigil.Artifact{ID: vigil.NewID(), Source: "test", Raw: raw, Timestamp: ts, CreatedAt: ts, Metadata: json.RawMessage(`{}`)}
}

// partitions returns the partitions of artifacts, and for each artifact id
// the partition holding it.
func partitions(t *testing.T, conn *pgx.Conn) ([]string, map[string]string) {
	t.Helper()
	rows, err := conn.Query(t.Context(), `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'artifacts'::regclass ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	rows, err = conn.Query(t.Context(), `SELECT id, tableoid::regclass::text FROM artifacts`)
	if err != nil {
		t.Fatal(err)
	}
	where := map[string]string{}
	for rows.Next() {
		var id, part string
		if err := rows.Scan(&id, &part); err != nil {
			t.Fatal(err)
		}
		where[id] = part
	}
	return names, where
}

func searchIDs(t *testing.T, s vigil.Store, org, query string) []string {
	t.Helper()
	arts, _, err := s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{Query: query, Page: vigil.Page{Limit: vigil.MaxLimit}})
	if err != nil {
		t.Fatalf("SearchArtifacts(%q): %v", query, err)
	}
	var ids []string
	for _, a := range arts {
		ids = append(ids, a.ID)
	}
	return ids
}

// Artifacts go to monthly partitions created on demand (timestamps outside
// 1900..2200 to DEFAULT), and retention drops whole months.
func TestArtifactPartitionsAndRetention(t *testing.T) {
	dbURL := freshDB(t)
	s := mustOpen(t, dbURL, postgres.Options{})
	conn := mustConn(t, dbURL)
	org := vigil.NewID()
	nov := newArtifact("november line", month(2025, time.November, 15))
	dec := newArtifact("december line", month(2025, time.December, 31).Add(11*time.Hour+59*time.Minute)) // last minute of the year
	jan := newArtifact("january line", month(2026, time.January, 1).Add(-12*time.Hour))                  // first instant of the month
	feb := newArtifact("february line", month(2026, time.February, 15))
	old := newArtifact("ancient line", time.Date(1850, 1, 1, 0, 0, 0, 0, time.UTC))
	if err := s.InsertArtifacts(t.Context(), org, []*vigil.Artifact{nov, dec, jan, feb, old}); err != nil {
		t.Fatalf("InsertArtifacts: %v", err)
	}
	names, where := partitions(t, conn)
	wantNames := []string{"artifacts_default", "artifacts_p202511", "artifacts_p202512", "artifacts_p202601", "artifacts_p202602"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("partitions = %v, want %v", names, wantNames)
	}
	for a, want := range map[*vigil.Artifact]string{nov: "artifacts_p202511", dec: "artifacts_p202512", jan: "artifacts_p202601",
		feb: "artifacts_p202602", old: "artifacts_default"} {
		if where[a.ID] != want {
			t.Errorf("%q is in %s, want %s", a.Raw, where[a.ID], want)
		}
	}
	if got := searchIDs(t, s, org, "line"); !slices.Equal(got, []string{feb.ID, jan.ID, dec.ID, nov.ID, old.ID}) {
		t.Errorf("search across partitions = %v, want newest first over all five", got)
	}
	// An enrichment set on an artifact reaches it in its partition.
	if err := s.SetArtifactEnrichment(t.Context(), org, dec.ID, json.RawMessage(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}

	// Retention at 20 January: November and December go whole, January
	// stays (it is not entirely before), the 1850 row leaves DEFAULT.
	n, err := s.DropArtifactsBefore(t.Context(), month(2026, time.January, 20))
	if err != nil {
		t.Fatalf("DropArtifactsBefore: %v", err)
	}
	if n != 2 {
		t.Errorf("dropped %d partitions, want 2", n)
	}
	names, _ = partitions(t, conn)
	if want := []string{"artifacts_default", "artifacts_p202601", "artifacts_p202602"}; !slices.Equal(names, want) {
		t.Errorf("partitions after retention = %v, want %v", names, want)
	}
	if got := searchIDs(t, s, org, ""); !slices.Equal(got, []string{feb.ID, jan.ID}) {
		t.Errorf("artifacts after retention = %v, want %v", got, []string{feb.ID, jan.ID})
	}
	var claims int
	if err := conn.QueryRow(t.Context(), `SELECT COUNT(*) FROM artifact_ids`).Scan(&claims); err != nil {
		t.Fatal(err)
	}
	if claims != 2 {
		t.Errorf("artifact_ids holds %d ids after retention, want 2", claims)
	}
	// A dropped artifact is gone for references too.
	o := &vigil.Observation{ID: vigil.NewID(), Type: "t", Description: "d", Severity: vigil.SeverityLow,
		ArtifactIDs: []string{nov.ID}, CreatedAt: vigil.Now(), UpdatedAt: vigil.Now()}
	if err := correlate.NewEngine(s, nil, vigil.DefaultCorrelationPolicy()).Record(t.Context(), org, o, "t"); vigil.ErrorCode(err) != vigil.EINVALID {
		t.Errorf("observation naming a dropped artifact: %v, want %s", err, vigil.EINVALID)
	}

	// A late artifact of a dropped month brings its partition back.
	if err := s.InsertArtifacts(t.Context(), org, []*vigil.Artifact{nov}); err != nil {
		t.Fatalf("InsertArtifacts after retention: %v", err)
	}
	if _, where = partitions(t, conn); where[nov.ID] != "artifacts_p202511" {
		t.Errorf("late November artifact in %q, want artifacts_p202511", where[nov.ID])
	}
	// Retention exactly at a month boundary drops the month before it.
	if n, err := s.DropArtifactsBefore(t.Context(), time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)); err != nil || n != 1 {
		t.Errorf("DropArtifactsBefore(1 December) = %d, %v; want 1 partition", n, err)
	}
	if n, err := s.DropArtifactsBefore(t.Context(), time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)); err != nil || n != 0 {
		t.Errorf("DropArtifactsBefore again = %d, %v; want 0", n, err)
	}
	if got := searchIDs(t, s, org, ""); !slices.Equal(got, []string{feb.ID, jan.ID}) {
		t.Errorf("artifacts = %v, want %v", got, []string{feb.ID, jan.ID})
	}
}

// A month whose partition another process dropped while this one still
// believed in it lands in DEFAULT, and its partition can then no longer
// be attached: inserts go on into DEFAULT and retention still applies.
func TestArtifactDefaultPartitionFallback(t *testing.T) {
	dbURL := freshDB(t)
	a, b := mustOpen(t, dbURL, postgres.Options{}), mustOpen(t, dbURL, postgres.Options{})
	conn := mustConn(t, dbURL)
	org := vigil.NewID()
	first := newArtifact("first line", month(2025, time.March, 1))
	if err := a.InsertArtifacts(t.Context(), org, []*vigil.Artifact{first}); err != nil {
		t.Fatal(err)
	}
	if n, err := b.DropArtifactsBefore(t.Context(), month(2025, time.April, 2)); err != nil || n != 1 {
		t.Fatalf("DropArtifactsBefore = %d, %v; want 1", n, err)
	}
	// a still caches March as existing.
	late := newArtifact("late line", month(2025, time.March, 2))
	if err := a.InsertArtifacts(t.Context(), org, []*vigil.Artifact{late}); err != nil {
		t.Fatalf("insert into a dropped month: %v", err)
	}
	if _, where := partitions(t, conn); where[late.ID] != "artifacts_default" {
		t.Errorf("late artifact in %q, want artifacts_default", where[late.ID])
	}
	// b has no cache for March: it tries to create the partition, cannot
	// (DEFAULT holds a March row), and stores into DEFAULT.
	later := newArtifact("later line", month(2025, time.March, 3))
	if err := b.InsertArtifacts(t.Context(), org, []*vigil.Artifact{later}); err != nil {
		t.Fatalf("insert while DEFAULT holds the month: %v", err)
	}
	if got := searchIDs(t, b, org, "line"); !slices.Equal(got, []string{later.ID, late.ID}) {
		t.Errorf("search = %v, want %v", got, []string{later.ID, late.ID})
	}
	if _, err := b.DropArtifactsBefore(t.Context(), month(2025, time.April, 2)); err != nil {
		t.Fatal(err)
	}
	if got := searchIDs(t, b, org, ""); len(got) != 0 {
		t.Errorf("DEFAULT rows of a month before the retention cut-off survived: %v", got)
	}
}

// The same id inserted again with another timestamp, so into another
// partition, is stored once: the first one is kept.
func TestArtifactIdempotentAcrossPartitions(t *testing.T) {
	dbURL := freshDB(t)
	s := mustOpen(t, dbURL, postgres.Options{})
	conn := mustConn(t, dbURL)
	org := vigil.NewID()
	a := newArtifact("original text", month(2026, time.January, 10))
	if err := s.InsertArtifacts(t.Context(), org, []*vigil.Artifact{a}); err != nil {
		t.Fatal(err)
	}
	again := *a
	again.Raw, again.Timestamp = "replayed text", month(2026, time.March, 10)
	if err := s.InsertArtifacts(t.Context(), org, []*vigil.Artifact{&again}); err != nil {
		t.Fatal(err)
	}
	// Within one batch too: the first occurrence wins.
	b := newArtifact("batch first", month(2026, time.February, 1))
	bDup := *b
	bDup.Raw, bDup.Timestamp = "batch second", month(2026, time.April, 1)
	if err := s.InsertArtifacts(t.Context(), org, []*vigil.Artifact{b, &bDup}); err != nil {
		t.Fatal(err)
	}
	_, where := partitions(t, conn)
	var rows int
	if err := conn.QueryRow(t.Context(), `SELECT COUNT(*) FROM artifacts WHERE id = ANY($1)`, []string{a.ID, b.ID}).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 2 {
		t.Errorf("%d rows for two ids inserted twice each, want 2", rows)
	}
	if where[a.ID] != "artifacts_p202601" || where[b.ID] != "artifacts_p202602" {
		t.Errorf("kept copies in %s and %s, want the first ones (artifacts_p202601, artifacts_p202602)", where[a.ID], where[b.ID])
	}
	arts, total, err := s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if total != 2 {
		t.Fatalf("total %d, want 2", total)
	}
	for _, g := range arts {
		if g.Raw != "original text" && g.Raw != "batch first" {
			t.Errorf("stored %q, want the first insert's text", g.Raw)
		}
	}
	for _, q := range []string{"replayed", "second"} {
		if got := searchIDs(t, s, org, q); len(got) != 0 {
			t.Errorf("text of an ignored re-insert is searchable: %q → %v", q, got)
		}
	}
}

// Raw text is kept byte for byte (NUL included) and odd lines index
// within PostgreSQL's tsvector limits.
func TestArtifactRawEdgeCases(t *testing.T) {
	s := mustOpen(t, freshDB(t), postgres.Options{})
	org := vigil.NewID()
	var distinct strings.Builder
	for i := 0; distinct.Len() < vigil.MaxRawBytes-100; i++ {
		fmt.Fprintf(&distinct, "w%x ", i)
	}
	long := strings.Repeat("z", 3000)
	raws := map[string]string{
		"nul":            "before\x00after",
		"distinct words": distinct.String(),
		"long token":     "start " + long + " end",
		"nanoseconds":    "ts with nanoseconds",
	}
	byID := map[string]string{}
	var arts []*vigil.Artifact
	for name, raw := range raws {
		a := newArtifact(raw, month(2026, time.May, 5).Add(123456789*time.Nanosecond))
		arts = append(arts, a)
		byID[a.ID] = name
	}
	if err := s.InsertArtifacts(t.Context(), org, arts); err != nil {
		t.Fatalf("InsertArtifacts: %v", err)
	}
	got, _, err := s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range got {
		name := byID[g.ID]
		if g.Raw != raws[name] {
			t.Errorf("%s: raw came back different (%d bytes, want %d)", name, len(g.Raw), len(raws[name]))
		}
		// Timestamps keep their nanoseconds, as with SQLite.
		if want := month(2026, time.May, 5).Add(123456789 * time.Nanosecond); !g.Timestamp.Equal(want) || g.Timestamp.Location() != time.UTC {
			t.Errorf("%s: timestamp %v, want %v in UTC", name, g.Timestamp, want)
		}
	}
	for q, want := range map[string]string{"after": "nul", "w0": "distinct words", "z*": "long token", "end": "long token"} {
		ids := searchIDs(t, s, org, q)
		if len(ids) != 1 || byID[ids[0]] != want {
			t.Errorf("query %q found %v, want the %s artifact", q, ids, want)
		}
	}
}

func TestErrorCodes(t *testing.T) {
	s := mustOpen(t, freshDB(t), postgres.Options{})
	org := vigil.NewID()
	r := &vigil.Role{ID: vigil.NewID(), Name: "analyst", Permissions: []string{vigil.PermIncidentsRead}, CreatedAt: vigil.Now(), UpdatedAt: vigil.Now()}
	if err := s.CreateRole(t.Context(), org, r); err != nil {
		t.Fatal(err)
	}
	dup := *r
	dup.ID = vigil.NewID()
	err := s.CreateRole(t.Context(), org, &dup)
	if vigil.ErrorCode(err) != vigil.ECONFLICT || vigil.ErrorMessage(err) != "a role with this name already exists" {
		t.Errorf("duplicate role: code %q message %q", vigil.ErrorCode(err), vigil.ErrorMessage(err))
	}
	if d := vigil.ErrorDetails(err); len(d) != 1 || d[0].Field != "name" {
		t.Errorf("duplicate role details = %+v, want the name field", d)
	}

	_, err = s.GetIncident(t.Context(), org, vigil.NewID())
	if vigil.ErrorCode(err) != vigil.ENOTFOUND || vigil.ErrorMessage(err) != "incident not found" {
		t.Errorf("missing incident: %v", err)
	}

	// PostgreSQL text cannot hold NUL: refused as invalid, not internal.
	o := &vigil.Observation{ID: vigil.NewID(), Type: "t", Description: "nul\x00here", Severity: vigil.SeverityLow,
		CreatedAt: vigil.Now(), UpdatedAt: vigil.Now()}
	if err := correlate.NewEngine(s, nil, vigil.DefaultCorrelationPolicy()).Record(t.Context(), org, o, "t"); vigil.ErrorCode(err) != vigil.EINVALID {
		t.Errorf("NUL in a description: %v, want %s", err, vigil.EINVALID)
	}
	// JSON may carry an escaped NUL: json columns keep the text as sent.
	a := newArtifact("x", vigil.Now())
	a.Metadata = json.RawMessage(`{"k":"a\u0000b"}`)
	if err := s.InsertArtifacts(t.Context(), org, []*vigil.Artifact{a}); err != nil {
		t.Errorf("metadata with \\u0000: %v", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err = s.ListIncidents(ctx, org, vigil.IncidentFilter{})
	if vigil.ErrorCode(err) != vigil.EUNAVAILABLE {
		t.Errorf("cancelled context: code %q (%v), want %q", vigil.ErrorCode(err), err, vigil.EUNAVAILABLE)
	}
	var ve *vigil.Error
	if !errors.As(err, &ve) || ve.Op != "ListIncidents" {
		t.Errorf("cancelled context: error %v does not name its operation", err)
	}
}

// BenchmarkInsertArtifacts measures the hot path: batches of 1000 syslog
// lines, one transaction each.
//
//	go test -run '^$' -bench InsertArtifacts ./internal/postgres/
func BenchmarkInsertArtifacts(b *testing.B) {
	s := mustOpen(b, freshDB(b), postgres.Options{})
	org := vigil.NewID()
	ts := vigil.Now()
	b.ReportAllocs()
	for b.Loop() {
		arts := make([]*vigil.Artifact, 1000)
		for i := range arts {
			arts[i] = newArtifact(fmt.Sprintf("<38>Jan  2 03:04:05 web-%d sshd[%d]: Failed password for invalid user admin%d from 203.0.113.%d port %d ssh2",
				i%7, 4000+i, i, i%250, 40000+i), ts.Add(time.Duration(i)*time.Millisecond))
		}
		if err := s.InsertArtifacts(b.Context(), org, arts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "lines/s")
}
