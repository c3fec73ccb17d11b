package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/detectionrules"
	"github.com/vigil-soc/vigil/internal/evtx"
	"github.com/vigil-soc/vigil/internal/pipeline"
	"github.com/vigil-soc/vigil/internal/starterrules"
)

// windowsMix returns every record of the real recordings under
// ../shared/datasets/windows/evtx as vigil import sends them, in file
// order; the test is skipped without them.
func windowsMix(tb testing.TB) []vigil.Artifact {
	tb.Helper()
	root := filepath.Join("..", "..", "..", "shared", "datasets", "windows", "evtx")
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.evtx"))
	deeper, _ := filepath.Glob(filepath.Join(root, "*", "*", "*.evtx"))
	var lines []vigil.Artifact
	for _, f := range append(files, deeper...) {
		docs, err := evtx.Documents(f)
		if err != nil {
			tb.Fatal(err)
		}
		for _, d := range docs {
			lines = append(lines, vigil.Artifact{Source: "windows", Raw: string(d)})
		}
	}
	if len(lines) == 0 {
		tb.Skipf("no recordings under %s (../shared/datasets beside the checkout)", root)
	}
	return lines
}

// replayer returns a function that runs the next n batches of 1000
// records of the Windows mix through the worker's stages (the built-in
// detectors and the starter Sigma rules) into s, replaying the
// recordings in file order as vigil bench does; artifact n has a fixed
// id and time, so that two replays store the same correlation.
func replayer(t *testing.T, s pipeline.Store, lines []vigil.Artifact) func(n int) {
	t.Helper()
	dets := detect.Default(detect.Config{})
	sigma, errs := detectionrules.Compile(starterrules.ForOrg("org", nil), "")
	if len(errs) > 0 {
		t.Fatalf("starter rules left out: %v", errs)
	}
	p := pipeline.NewProcessor(s, nil, nil)
	p.WithDetection(detect.NewEngine(append(dets, sigma...)...), vigil.DefaultCorrelationPolicy())
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	next := 0
	return func(n int) {
		for range n {
			arts := make([]*vigil.Artifact, 1000)
			for i := range arts {
				a := lines[next%len(lines)]
				a.ID = fmt.Sprintf("%08x-0000-4000-8000-000000000000", next)
				a.OrgID = "org"
				a.Timestamp = base.Add(time.Duration(next) * time.Millisecond)
				a.CreatedAt = a.Timestamp
				arts[i] = &a
				next++
			}
			if err := p.Process(t.Context(), "org", arts); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// correlationDump writes what correlation stored in s, every id it made
// itself (observations, incidents, nodes) named by what it is and no
// wall-clock time, one fact a line: each burst with its observation, its
// nodes and artifacts in order; each incident with its counts, event
// times, nodes, artifacts and history; the order of every event; the
// entity risk and the roll-ups.
func correlationDump(ctx context.Context, s *Store) (string, error) {
	var out []string
	db := s.w
	q := func(query string, scan func(*sql.Rows) error, args ...any) error {
		rows, err := db.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	}
	// Observations by their burst (detector, key, first signal).
	obsName := map[string]string{}
	incName := map[string]string{}
	err := q(`SELECT b.detector, b.key, b.first_at, b.last_at, b.signals, o.id, o.type, o.description, o.severity,
			COALESCE(o.title, ''), o.title_rank, COALESCE(o.artifact_count, -1), COALESCE(o.specificity, 0), COALESCE(o.incident_id, ''),
			(SELECT group_concat(artifact_id || '@' || pos, ' ') FROM (SELECT artifact_id, pos FROM observation_artifacts
				WHERE observation_id = o.id ORDER BY pos, artifact_id)),
			(SELECT group_concat(n.type || ':' || n.value || '@' || x.pos || '/' || x.key, ' ') FROM (SELECT node_id, pos, key
				FROM observation_nodes WHERE observation_id = o.id ORDER BY pos, node_id) x JOIN nodes n ON n.id = x.node_id)
		FROM detect_bursts b JOIN observations o ON o.id = b.observation_id ORDER BY b.detector, b.key, b.first_at`,
		func(r *sql.Rows) error {
			var det, key, id, typ, desc, sev, title, inc string
			var arts, nodes sql.NullString
			var first, last, sigs, rank, count, spec int64
			if err := r.Scan(&det, &key, &first, &last, &sigs, &id, &typ, &desc, &sev, &title, &rank, &count, &spec, &inc, &arts, &nodes); err != nil {
				return err
			}
			name := fmt.Sprintf("%s|%s|%d", det, key, first)
			obsName[id] = name
			if inc != "" && (incName[inc] == "" || name < incName[inc]) {
				incName[inc] = name
			}
			out = append(out, fmt.Sprintf("burst %s last=%d signals=%d obs type=%s sev=%s title=%q rank=%d count=%d spec=%d desc=%q\n  artifacts %s\n  nodes %s",
				name, last, sigs, typ, sev, title, rank, count, spec, desc, arts.String, nodes.String))
			return nil
		})
	if err != nil {
		return "", err
	}
	name := func(m map[string]string, id string) string {
		if n, ok := m[id]; ok {
			return n
		}
		if id == "" {
			return ""
		}
		return "?" // made by no burst
	}
	// The observations' incidents.
	for id, n := range obsName {
		var inc string
		if err := db.QueryRowContext(ctx, `SELECT COALESCE(incident_id, '') FROM observations WHERE id = ?`, id).Scan(&inc); err != nil {
			return "", err
		}
		out = append(out, fmt.Sprintf("in %s: %s", n, name(incName, inc)))
	}
	// Incidents without observations (merged) by their title and where
	// they went.
	var incs []string
	err = q(`SELECT id, title, severity, computed_severity, status, artifact_count, node_count, COALESCE(first_event_at, 0),
			COALESCE(last_event_at, 0), COALESCE(merged_into, ''), COALESCE(raised_by, ''),
			(SELECT group_concat(v, ' ') FROM (SELECT n.type || ':' || n.value || '/' || x.key AS v FROM incident_nodes x
				JOIN nodes n ON n.id = x.node_id WHERE x.incident_id = i.id ORDER BY v)),
			(SELECT COUNT(*) || ':' || COALESCE(MIN(artifact_id), '') || ':' || COALESCE(MAX(artifact_id), '') FROM incident_artifacts WHERE incident_id = i.id)
		FROM incidents i`, func(r *sql.Rows) error {
		var id, title, sev, csev, merged, raised string
		var nodes sql.NullString
		var arts string
		var status, ac, nc, fe, le int64
		if err := r.Scan(&id, &title, &sev, &csev, &status, &ac, &nc, &fe, &le, &merged, &raised, &nodes, &arts); err != nil {
			return err
		}
		if _, ok := incName[id]; !ok {
			incName[id] = "empty:" + title
		}
		incs = append(incs, id)
		out = append(out, fmt.Sprintf("incident %s title=%q sev=%s/%s status=%d artifacts=%d nodes=%d events=%d..%d merged=%s raised=%s\n  nodes %s\n  artifacts %s",
			incName[id], title, sev, csev, status, ac, nc, fe, le, name(incName, merged), raised, nodes.String, arts))
		return nil
	})
	if err != nil {
		return "", err
	}
	// Every event, in the order of the stream.
	var events []string
	err = q(`SELECT incident_id, type, actor, via, artifact_count, detail FROM incident_events ORDER BY id`, func(r *sql.Rows) error {
		var inc, typ, actor, via, detail string
		var count int64
		if err := r.Scan(&inc, &typ, &actor, &via, &count, &detail); err != nil {
			return err
		}
		for id, n := range obsName {
			detail = strings.ReplaceAll(detail, id, n)
		}
		for _, id := range incs {
			detail = strings.ReplaceAll(detail, id, name(incName, id))
		}
		events = append(events, fmt.Sprintf("event %s %s %s/%s artifacts=%d %s", name(incName, inc), typ, actor, via, count, detail))
		return nil
	})
	if err != nil {
		return "", err
	}
	err = q(`SELECT r.observation_id, n.type || ':' || n.value, r.detection, r.points FROM entity_risk r JOIN nodes n ON n.id = r.node_id`,
		func(r *sql.Rows) error {
			var obs, node, det string
			var points int64
			if err := r.Scan(&obs, &node, &det, &points); err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("risk %s %s %s %d", name(obsName, obs), node, det, points))
			return nil
		})
	if err != nil {
		return "", err
	}
	err = q(`SELECT incident_id, detection, sources, count, title FROM rollups`, func(r *sql.Rows) error {
		var inc, det, title string
		var sources, count int64
		if err := r.Scan(&inc, &det, &sources, &count, &title); err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("rollup %s %s sources=%d count=%d %q", name(incName, inc), det, sources, count, title))
		return nil
	})
	if err != nil {
		return "", err
	}
	slices.Sort(out)
	return strings.Join(append(out, events...), "\n") + "\n", nil
}

// replayDump is the SHA-256 of correlationDump after 23 batches of the
// Windows mix (replayer), as main at 5798f3c stored them, before a
// batch's growths were written at once (settle), their events an
// incident at once and the hub checks asked once: those changed how
// many statements correlation runs, and nothing it stores. A change to
// the recordings, the parsers, the detectors or the starter rules
// changes it too: then check that the difference is theirs (the dump
// lists every fact; VIGIL_CORR_DUMP=file writes it) and set it anew.
// Set anew for the built-in Windows detectors of remote threads, tool
// pipes, admin-share writes and debug rights, the starter set's
// Security-log rules and the 5145s' source address (a share access's
// Sigma matches keyed by the address it came from): 41 incidents where
// there were 37; the differences are those detectors' and rules'
// observations and incidents, the two 5145 rules' re-keyed bursts, and
// what they joined or left (the Sigma engine's guards and groups, before
// them, left the dump as it was: bf4245…).
const replayDump = "4675a33e5e8951d1acfaca9a834c04dd8c9b52884ff522db8ba2ef6cf9ed063a"

// TestCorrelationReplayUnchanged replays 23 batches of the Windows mix
// (some 2,400 history events, 1,300 of them growths, 260 bursts, 37
// incidents, a merge) and compares every fact correlation stored with
// what the code before this change stored.
func TestCorrelationReplayUnchanged(t *testing.T) {
	lines := windowsMix(t)
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "v.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	replayer(t, s, lines)(23)
	d, err := correlationDump(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	if path := os.Getenv("VIGIL_CORR_DUMP"); path != "" {
		if err := os.WriteFile(path, []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if sum := fmt.Sprintf("%x", sha256.Sum256([]byte(d))); sum != replayDump {
		t.Errorf("the replay's correlation dump is %s, want %s (%d lines; VIGIL_CORR_DUMP=file writes it)", sum, replayDump, strings.Count(d, "\n"))
	}
}
