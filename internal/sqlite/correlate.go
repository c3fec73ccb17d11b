package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
)

var _ correlate.Store = (*Store)(nil)

// Correlate runs fn in a write transaction of org. The single writer
// connection serializes every transaction, so correlations and
// detections never run at once: the locks of correlate.Tx are no-ops.
func (s *Store) Correlate(ctx context.Context, org string, fn func(correlate.Tx) error) error {
	return wrap("Correlate", s.tx(ctx, func(tx *wtx) error {
		t := s.corrTx(tx, org)
		if err := fn(t); err != nil {
			return err
		}
		if err := t.settle(ctx); err != nil {
			return err
		}
		return t.widenPending(ctx)
	}))
}

func (s *Store) corrTx(tx *wtx, org string) *corrTx {
	return &corrTx{tx: tx, org: org, newest: s.newest, grown: &s.grown}
}

// corrTx is correlate.Tx on a write transaction. Every statement that
// reads, updates or deletes names the org: directly where the table has an
// org_id, through the incident or observation of the org it belongs to
// where it has not (the node and artifact tables of incidents and
// observations). Those child rows are inserted under an incident or
// observation this transaction found in the org or wrote for it.
type corrTx struct {
	tx     *wtx
	org    string
	newest *newestCache
	grown  *grownNodes
	// events are the event times that roll-ups' findings brought, by
	// incident, not written yet: the roll-up's refresh writes them once a
	// batch (UpdateRollup), or widenPending when the transaction's work
	// is done.
	events map[string]eventSpan
	// placed are the observations InsertObservation wrote into the
	// incident the engine set, by id: JoinRollup has nothing to move.
	placed map[string]string
	// pending are the growths not written yet (grow_pending.go).
	pending pendingGrowths
}

var _ correlate.Tx = (*corrTx)(nil)

func (t *corrTx) CheckRefs(ctx context.Context, nodeIDs, artifactIDs []string) error {
	return checkRefs(ctx, t.tx, t.org, nodeIDs, artifactIDs)
}

func (t *corrTx) UpsertNodes(ctx context.Context, refs []vigil.NodeRef, now time.Time) ([]vigil.Node, error) {
	return upsertNodes(ctx, t.tx, t.org, refs, now)
}

func (t *corrTx) LockKeys(context.Context, []string) error { return nil }

func (t *corrTx) LockDetections(context.Context, []correlate.DetectionKey) error { return nil }

func (t *corrTx) HubNodes(ctx context.Context, ids []string, limit int) ([]string, error) {
	return queryStrings(ctx, t.tx, hubNodesSQL(len(ids)), append([]any{t.org, limit}, stringArgs(ids)...)...)
}

// keyIncidents is the FROM and WHERE of the open incidents (new or in
// progress, not merged) of org ?1 in which one of the n nodes ?3… is a
// key. It starts from those nodes, through the node → incident index, and
// looks each of their incidents up by its primary key: CROSS JOIN keeps
// that order and "+" keeps SQLite off the incidents_org_* indexes. Walking
// the org's open incidents and probing each one's nodes (as SQLite chose
// to) cost what the org has open: a fifth of the ingest rate with 20,000.
func keyIncidents(n int) string {
	return `FROM incident_nodes n CROSS JOIN incidents i ON i.id = n.incident_id
		WHERE n.node_id IN (` + numbered(3, n) + `) AND n.key = 1
		AND +i.org_id = ?1 AND +i.status IN (1, 2) AND i.merged_into IS NULL`
}

// hubNodesSQL returns those of the n nodes ?3… that are key nodes of at
// least ?2 open incidents of org ?1.
func hubNodesSQL(n int) string {
	return `SELECT n.node_id ` + keyIncidents(n) + ` GROUP BY n.node_id HAVING COUNT(*) >= ?2`
}

// openIncidentsSQL returns the open incidents of org ?1 in which one of
// the n nodes ?3… is a key and that were active at or after ?2.
func openIncidentsSQL(n int) string {
	return `SELECT DISTINCT i.id, i.created_at ` + keyIncidents(n) + ` AND +i.last_activity_at >= ?2`
}

func (t *corrTx) OpenIncidents(ctx context.Context, keys []string, since time.Time) ([]correlate.Candidate, error) {
	rows, err := t.tx.QueryContext(ctx, openIncidentsSQL(len(keys)), append([]any{t.org, nanos(since)}, stringArgs(keys)...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []correlate.Candidate
	for rows.Next() {
		var c correlate.Candidate
		var created int64
		if err := rows.Scan(&c.ID, &created); err != nil {
			return nil, err
		}
		c.CreatedAt = fromNanos(created)
		out = append(out, c)
	}
	return out, rows.Err()
}

func (t *corrTx) CreateIncident(ctx context.Context, inc correlate.NewIncident) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO incidents (id, org_id, title, severity, computed_severity, status,
		created_at, updated_at, last_activity_at) VALUES (?1, ?2, ?3, ?4, ?4, 1, ?5, ?5, ?5)`,
		inc.ID, t.org, inc.Title, inc.Severity, nanos(inc.At))
	return err
}

// incidentOfOrg guards a statement on the rows of incident ?1: they are
// written only when it is an incident of org ?2. In this file "+org_id"
// keeps SQLite on the primary key (or the incident_id index) that finds
// the row: on an index of org_id it would walk the org's records.
const incidentOfOrg = `EXISTS (SELECT 1 FROM incidents WHERE id = ?1 AND +org_id = ?2)`

func (t *corrTx) MergeIncident(ctx context.Context, from, into string, now time.Time) error {
	if err := t.settle(ctx); err != nil {
		return err
	}
	// Each statement with the number of parameters it names (?1…?n): the
	// C driver refuses more arguments than a statement has.
	stmts := []struct {
		q string
		n int
	}{
		{`UPDATE observations SET incident_id = ?3 WHERE incident_id = ?1 AND +org_id = ?2`, 3},
		{`INSERT INTO incident_nodes (incident_id, node_id, key)
			SELECT t.id, x.node_id, x.key FROM incident_nodes x, incidents t
			WHERE x.incident_id = ?1 AND ` + incidentOfOrg + ` AND t.id = ?3 AND +t.org_id = ?2
			ON CONFLICT DO UPDATE SET key = MAX(key, excluded.key)`, 3},
		{`INSERT INTO incident_artifacts (incident_id, artifact_id)
			SELECT t.id, x.artifact_id FROM incident_artifacts x, incidents t
			WHERE x.incident_id = ?1 AND ` + incidentOfOrg + ` AND t.id = ?3 AND +t.org_id = ?2
			ON CONFLICT DO NOTHING`, 3},
		{`DELETE FROM incident_nodes WHERE incident_id = ?1 AND ` + incidentOfOrg, 2},
		{`DELETE FROM incident_artifacts WHERE incident_id = ?1 AND ` + incidentOfOrg, 2},
		// into spans its own events and from's.
		{`UPDATE incidents AS t SET
			first_event_at = MIN(COALESCE(t.first_event_at, f.first_event_at), COALESCE(f.first_event_at, t.first_event_at)),
			last_event_at = MAX(COALESCE(t.last_event_at, f.last_event_at), COALESCE(f.last_event_at, t.last_event_at))
			FROM incidents AS f WHERE t.id = ?3 AND +t.org_id = ?2 AND f.id = ?1 AND +f.org_id = ?2`, 3},
		{`UPDATE incidents SET merged_into = ?3, artifact_count = 0, node_count = 0, updated_at = ?4,
			first_event_at = NULL, last_event_at = NULL WHERE id = ?1 AND +org_id = ?2`, 4},
	}
	// What from's findings brought and no refresh wrote yet is into's now.
	if span, ok := t.events[from]; ok {
		t.pendEvents(into, span)
		delete(t.events, from)
	}
	args := []any{from, t.org, into, nanos(now)}
	for _, st := range stmts {
		if _, err := t.tx.ExecContext(ctx, st.q, args[:st.n]...); err != nil {
			return err
		}
	}
	return t.refresh(ctx, into, now, false, recount)
}

func (t *corrTx) RecordEvent(ctx context.Context, ev vigil.IncidentEvent) error {
	return insertEvent(ctx, t.tx, t.org, ev)
}

func (t *corrTx) RecordEvents(ctx context.Context, evs []vigil.IncidentEvent) error {
	return insertEvents(ctx, t.tx, t.org, evs)
}

func (t *corrTx) RebuildIncident(ctx context.Context, id string, now time.Time) error {
	if err := t.settle(ctx); err != nil {
		return err
	}
	stmts := []string{
		`DELETE FROM incident_nodes WHERE incident_id = ?1 AND ` + incidentOfOrg,
		// A roll-up's nodes are context, whatever its observations say.
		`INSERT INTO incident_nodes (incident_id, node_id, key)
			SELECT ?1, x.node_id, MAX(x.key) * NOT EXISTS (SELECT 1 FROM rollups WHERE incident_id = ?1)
			FROM observation_nodes x JOIN observations o ON o.id = x.observation_id
			WHERE o.incident_id = ?1 AND +o.org_id = ?2 GROUP BY x.node_id`,
		`DELETE FROM incident_artifacts WHERE incident_id = ?1 AND ` + incidentOfOrg,
		`INSERT INTO incident_artifacts (incident_id, artifact_id)
			SELECT DISTINCT ?1, x.artifact_id FROM observation_artifacts x JOIN observations o ON o.id = x.observation_id
			WHERE o.incident_id = ?1 AND +o.org_id = ?2`,
		// Its event times, from the artifacts still stored and the
		// observations that name none.
		`UPDATE incidents SET (first_event_at, last_event_at) = (
			SELECT MIN(t), MAX(t) FROM (
				SELECT a.ts AS t FROM incident_artifacts x JOIN artifacts a ON a.id = x.artifact_id
				WHERE x.incident_id = ?1 AND +a.org_id = ?2
				UNION ALL
				SELECT o.created_at FROM observations o WHERE o.incident_id = ?1 AND +o.org_id = ?2
				AND NOT EXISTS (SELECT 1 FROM observation_artifacts y WHERE y.observation_id = o.id)))
			WHERE id = ?1 AND +org_id = ?2`,
		// A roll-up's sources, counted again: each source's artifacts
		// among its observations'.
		`DELETE FROM rollup_sources WHERE incident_id = ?1 AND EXISTS (SELECT 1 FROM rollups WHERE incident_id = ?1 AND org_id = ?2)`,
		`INSERT INTO rollup_sources (incident_id, node_id, count, first_at, last_at)
			SELECT ?1, x.node_id, COUNT(DISTINCT a.artifact_id), MIN(o.created_at), MAX(o.updated_at)
			FROM observation_nodes x JOIN observations o ON o.id = x.observation_id
			JOIN observation_artifacts a ON a.observation_id = o.id
			WHERE o.incident_id = ?1 AND +o.org_id = ?2 AND x.key = 1
			AND EXISTS (SELECT 1 FROM rollups WHERE incident_id = ?1 AND org_id = ?2) GROUP BY x.node_id`,
		`UPDATE rollups SET sources = (SELECT COUNT(*) FROM rollup_sources WHERE incident_id = ?1),
			count = (SELECT COALESCE(SUM(count), 0) FROM rollup_sources WHERE incident_id = ?1)
			WHERE incident_id = ?1 AND org_id = ?2`,
	}
	// Its event times are counted again from what it holds.
	delete(t.events, id)
	for _, q := range stmts {
		if _, err := t.tx.ExecContext(ctx, q, id, t.org); err != nil {
			return err
		}
	}
	return t.refresh(ctx, id, now, false, recount)
}

// refresh recomputes an incident's node count and headline: its title
// and computed severity are those of its observation of the highest rank
// (the newest on ties; a headline without a title keeps the incident's),
// and its severity follows unless a rule decided it. Its node and
// artifact counts grow by added, or are recounted when added is recount,
// and its event times widen to added's.
// With activity it is marked active at now, unless it was already active
// later: an observation recorded late must not move the last activity
// back and close the correlation window early.
func (t *corrTx) refresh(ctx context.Context, id string, now time.Time, activity bool, added addedRefs) error {
	// The headline, read first: an UPDATE … FROM was slower.
	sev, title := vigil.SeverityLow, ""
	err := t.tx.QueryRowContext(ctx, `SELECT severity, title FROM observations WHERE incident_id = ? AND +org_id = ? `+headlineOrder+` LIMIT 1`,
		id, t.org).Scan(&sev, &title)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	q := `UPDATE incidents SET
		node_count = CASE WHEN ?7 < 0 THEN (SELECT COUNT(*) FROM incident_nodes WHERE incident_id = ?1) ELSE node_count + ?7 END,
		artifact_count = CASE WHEN ?5 < 0 THEN (SELECT COUNT(*) FROM incident_artifacts WHERE incident_id = ?1) ELSE artifact_count + ?5 END,
		computed_severity = ?3,
		severity = CASE WHEN classified_by_id IS NULL THEN ?3 ELSE severity END,
		title = COALESCE((SELECT r.title FROM rollups r WHERE r.incident_id = ?1), NULLIF(?6, ''), title),
		first_event_at = CASE WHEN ?8 IS NULL THEN first_event_at ELSE MIN(COALESCE(first_event_at, ?8), ?8) END,
		last_event_at = CASE WHEN ?9 IS NULL THEN last_event_at ELSE MAX(COALESCE(last_event_at, ?9), ?9) END,
		updated_at = ?4`
	if activity {
		q += `, last_activity_at = MAX(last_activity_at, ?4)`
	}
	if span, ok := t.events[id]; ok {
		added.events.widen(span)
		delete(t.events, id)
	}
	first, last := added.events.args()
	_, err = t.tx.ExecContext(ctx, q+` WHERE id = ?1 AND +org_id = ?2`, id, t.org, sev, nanos(now), added.artifacts, title, added.nodes, first, last)
	return err
}

// addedRefs counts the nodes and artifacts a statement added to an
// incident (-1 has them counted again), and spans the event times they
// bring.
type addedRefs struct {
	nodes, artifacts int
	events           eventSpan
}

var recount = addedRefs{nodes: -1, artifacts: -1}

// eventSpan is the earliest and latest of some event times (Unix
// nanoseconds); empty until one is added.
type eventSpan struct {
	first, last int64
	set         bool
}

func (e *eventSpan) add(t int64) {
	if !e.set || t < e.first {
		e.first = t
	}
	if !e.set || t > e.last {
		e.last = t
	}
	e.set = true
}

// widen adds the times of o to e.
func (e *eventSpan) widen(o eventSpan) {
	if o.set {
		e.add(o.first)
		e.add(o.last)
	}
}

// args returns the span as statement arguments: NULLs when empty.
func (e eventSpan) args() (first, last any) {
	if !e.set {
		return nil, nil
	}
	return e.first, e.last
}

// headlineOrder puts an incident's headline observation first; the index
// observations_incident_rank serves it.
const headlineOrder = `ORDER BY title_rank DESC, created_at DESC, id DESC`

func (t *corrTx) InsertObservation(ctx context.Context, o *vigil.Observation, rank int, keys map[string]bool) error {
	// In the incident the engine set (a roll-up it is sure to join), of
	// the org: writing it now spares the update of its two incident
	// indexes when it joins.
	if _, err := t.tx.ExecContext(ctx, `INSERT INTO observations (id, org_id, type, description, severity, created_at, updated_at,
		title, specificity, title_rank, artifact_count, incident_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,
		(SELECT id FROM incidents WHERE id = ?12 AND +org_id = ?2))`, o.ID, t.org, o.Type, o.Description, o.Severity,
		nanos(o.CreatedAt), nanos(o.UpdatedAt), o.Title, o.Specificity, rank, len(o.ArtifactIDs), o.IncidentID); err != nil {
		return err
	}
	if o.IncidentID != "" {
		if t.placed == nil {
			t.placed = map[string]string{}
		}
		t.placed[o.ID] = o.IncidentID
	}
	return t.insertRefs(ctx, o.ID, o.NodeIDs, keys, o.ArtifactIDs)
}

// observationOfOrg guards a statement on the rows of observation ?1: they
// are written only when it is an observation of org ?2.
const observationOfOrg = `EXISTS (SELECT 1 FROM observations WHERE id = ?1 AND +org_id = ?2)`

// insertRefs records the nodes and artifacts of an observation with their
// positions, so that they read back in the order given. One prepared
// statement per row: a JSON array cost more than it saved for the few
// rows detection writes at a time.
func (t *corrTx) insertRefs(ctx context.Context, obsID string, nodeIDs []string, keys map[string]bool, artifactIDs []string) error {
	for i, id := range nodeIDs {
		if _, err := t.tx.ExecContext(ctx, `INSERT INTO observation_nodes (observation_id, node_id, pos, key) VALUES (?, ?, ?, ?)`,
			obsID, id, i, keys[id]); err != nil {
			return err
		}
	}
	for i, id := range artifactIDs {
		if _, err := t.tx.ExecContext(ctx, `INSERT INTO observation_artifacts (observation_id, artifact_id, pos) VALUES (?, ?, ?)`,
			obsID, id, i); err != nil {
			return err
		}
	}
	return nil
}

func (t *corrTx) JoinIncident(ctx context.Context, incident string, o *vigil.Observation, keys map[string]bool, now time.Time) error {
	if err := t.settle(ctx); err != nil {
		return err
	}
	if _, err := t.tx.ExecContext(ctx, `UPDATE observations SET incident_id = ? WHERE id = ? AND +org_id = ?`, incident, o.ID, t.org); err != nil {
		return err
	}
	added, err := t.addToIncident(ctx, incident, o.NodeIDs, keys, o.ArtifactIDs)
	if err != nil {
		return err
	}
	if len(o.ArtifactIDs) == 0 {
		added.events.add(nanos(o.CreatedAt)) // an observation naming no artifact happened when reported
	}
	return t.refresh(ctx, incident, now, true, added)
}

func (t *corrTx) LockObservation(ctx context.Context, id string) (*vigil.Observation, error) {
	if err := t.settle(ctx); err != nil {
		return nil, err
	}
	return getObservation(ctx, t.tx, t.org, id)
}

func (t *corrTx) UpdateObservation(ctx context.Context, o *vigil.Observation, rank int, keys map[string]bool, refs bool) error {
	if err := t.settle(ctx); err != nil {
		return err
	}
	var count any // NULL: the artifacts stay as they are
	if refs {
		count = len(o.ArtifactIDs)
	}
	if _, err := t.tx.ExecContext(ctx, `UPDATE observations SET type = ?, description = ?, severity = ?, title_rank = ?, updated_at = ?,
		artifact_count = COALESCE(?, artifact_count) WHERE id = ? AND +org_id = ?`,
		o.Type, o.Description, o.Severity, rank, nanos(o.UpdatedAt), count, o.ID, t.org); err != nil {
		return err
	}
	if !refs {
		return nil
	}
	t.forgetGrown(o.ID)
	for _, q := range []string{
		`DELETE FROM observation_nodes WHERE observation_id = ?1 AND ` + observationOfOrg,
		`DELETE FROM observation_artifacts WHERE observation_id = ?1 AND ` + observationOfOrg,
	} {
		if _, err := t.tx.ExecContext(ctx, q, o.ID, t.org); err != nil {
			return err
		}
	}
	return t.insertRefs(ctx, o.ID, o.NodeIDs, keys, o.ArtifactIDs)
}

func (t *corrTx) DeleteObservation(ctx context.Context, id string) error {
	if err := t.settle(ctx); err != nil {
		return err
	}
	// Its nodes and artifacts go with it (ON DELETE CASCADE).
	t.forgetGrown(id)
	_, err := t.tx.ExecContext(ctx, `DELETE FROM observations WHERE id = ? AND +org_id = ?`, id, t.org)
	return err
}

func (t *corrTx) ObservationIncidents(ctx context.Context, ids []string) (map[string]string, error) {
	if err := t.settle(ctx); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ids))
	if len(ids) == 1 {
		var incident string
		err := t.tx.QueryRowContext(ctx, `SELECT COALESCE(incident_id, '') FROM observations WHERE id = ? AND +org_id = ?`,
			ids[0], t.org).Scan(&incident)
		out[ids[0]] = incident
		return out, err
	}
	// One statement for the batch's tens of findings, the ids as a JSON
	// array: an IN list of each length would be prepared anew.
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := t.tx.QueryContext(ctx, `SELECT o.id, COALESCE(o.incident_id, '') FROM json_each(?1) j
		CROSS JOIN observations o ON o.id = j.value WHERE +o.org_id = ?2`, string(list), t.org)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, incident string
		if err := rows.Scan(&id, &incident); err != nil {
			return nil, err
		}
		out[id] = incident
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if _, ok := out[id]; !ok {
			return nil, sql.ErrNoRows
		}
	}
	return out, nil
}

// numbered returns "?from, ?from+1, …" with n marks: the numbered
// parameters of a list after the statement's own.
func numbered(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("?" + strconv.Itoa(from+i))
	}
	return b.String()
}

// stringArgs returns ids as query arguments.
func stringArgs(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// queryStrings returns the first column of q's rows.
func queryStrings(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
