package postgres

import (
	"context"
	"hash/fnv"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
)

var _ correlate.Store = (*Store)(nil)

// Correlate runs fn in a READ COMMITTED transaction of org (run again when
// the server aborts it to break a deadlock).
//
// Several processes correlate at once: correlate.Tx's locks are
// transaction-scoped advisory locks on hashes of what they serialize,
// taken in ascending order, and the incidents an observation may join are
// locked (FOR UPDATE) before they are used. Writes are queued and sent
// with the next read, or at the end, in one round trip (pgx.Batch): a
// correlation costs a few round trips however many statements it runs.
func (s *Store) Correlate(ctx context.Context, org string, fn func(correlate.Tx) error) error {
	return wrap("Correlate", s.tx(ctx, func(tx pgx.Tx) error {
		t := &corrTx{tx: tx, org: org, b: &pgx.Batch{}}
		if err := fn(t); err != nil {
			return err
		}
		return t.flush(ctx)
	}))
}

// corrTx is correlate.Tx on a transaction. Every statement names the org:
// directly where the table has an org_id, through the incident or
// observation of the org it belongs to where it has not.
type corrTx struct {
	tx  pgx.Tx
	org string
	b   *pgx.Batch // writes not sent yet
}

var _ correlate.Tx = (*corrTx)(nil)

// exec queues a write.
func (t *corrTx) exec(sql string, args ...any) { t.b.Queue(sql, args...) }

// flush sends the queued writes.
func (t *corrTx) flush(ctx context.Context) error {
	if t.b.Len() == 0 {
		return nil
	}
	b := t.b
	t.b = &pgx.Batch{}
	return t.tx.SendBatch(ctx, b).Close()
}

// query sends the queued writes and then sql, in one round trip, and
// hands its rows to scan.
func (t *corrTx) query(ctx context.Context, scan func(pgx.Rows) error, sql string, args ...any) error {
	if t.b.Len() == 0 {
		rows, err := t.tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		if err := scan(rows); err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	}
	b := t.b
	t.b = &pgx.Batch{}
	b.Queue(sql, args...).Query(scan)
	return t.tx.SendBatch(ctx, b).Close()
}

// queryStrings returns the first column of sql's rows.
func (t *corrTx) queryStrings(ctx context.Context, sql string, args ...any) ([]string, error) {
	var out []string
	err := t.query(ctx, func(rows pgx.Rows) error {
		var err error
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	}, sql, args...)
	return out, err
}

func (t *corrTx) CheckRefs(ctx context.Context, nodeIDs, artifactIDs []string) error {
	if err := t.flush(ctx); err != nil {
		return err
	}
	return checkRefs(ctx, t.tx, t.org, nodeIDs, artifactIDs)
}

// advisoryLock queues the advisory locks of keys, sorted so that two
// transactions never wait on each other's.
func (t *corrTx) advisoryLock(keys []int64) {
	if len(keys) == 0 {
		return
	}
	slices.Sort(keys)
	// unnest yields the keys in array order.
	t.exec(`SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k`, slices.Compact(keys))
}

// lockKey hashes the parts of what a lock serializes to an advisory lock
// key. A collision of two hashes only serializes two unrelated
// transactions; it never lets two related ones run at once.
func lockKey(parts ...string) int64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return int64(h.Sum64())
}

// LockKeys takes the lock of each key node (org, node): observations that
// share a key node are correlated one after the other, and the second
// sees the incident the first opened (READ COMMITTED gives every later
// statement a snapshot taken after the lock was granted).
func (t *corrTx) LockKeys(_ context.Context, ids []string) error {
	keys := make([]int64, len(ids))
	for i, id := range ids {
		keys[i] = lockKey("vigil/correlate", t.org, id)
	}
	t.advisoryLock(keys)
	return nil
}

// LockDetections takes the lock of each (org, detector, key), so that two
// workers that split one attacker's lines evaluate them one after the
// other and the burst fires once.
func (t *corrTx) LockDetections(_ context.Context, pairs []correlate.DetectionKey) error {
	keys := make([]int64, len(pairs))
	for i, p := range pairs {
		keys[i] = lockKey("vigil/detect", t.org, p.Detector, p.Key)
	}
	t.advisoryLock(keys)
	return nil
}

func (t *corrTx) HubNodes(ctx context.Context, ids []string, limit int) ([]string, error) {
	return t.queryStrings(ctx, hubNodesSQL, t.org, ids, limit)
}

// keyIncidents is the FROM and WHERE of the open incidents (new or in
// progress, not merged) of org $1 in which one of the nodes $2 is a key.
// It starts from those nodes, through the node → incident index, and reads
// each of their incidents by its primary key: the lateral subquery (kept
// whole by OFFSET 0, so that the planner neither reorders the join nor
// takes the incident's conditions into it) leaves no other way. Planned
// freely, without statistics or with stale ones, it walked the org's open
// incidents (incidents_org_open) and probed each one's nodes: a cost that
// grows with what the org has open.
const keyIncidents = `FROM incident_nodes n
	CROSS JOIN LATERAL (SELECT id, created_at, org_id, status, merged_into, last_activity_at
		FROM incidents WHERE id = n.incident_id OFFSET 0) i
	WHERE n.node_id = ANY($2) AND n.key AND i.org_id = $1 AND i.status IN (1, 2) AND i.merged_into IS NULL`

// hubNodesSQL returns those of the nodes $2 that are key nodes of at least
// $3 open incidents of org $1.
const hubNodesSQL = `SELECT n.node_id ` + keyIncidents + ` GROUP BY n.node_id HAVING COUNT(*) >= $3`

// openIncidentsSQL returns the open incidents of org $1 in which one of
// the nodes $2 is a key and that were active at or after $3, in the order
// in which they are locked.
const openIncidentsSQL = `SELECT DISTINCT i.id, i.created_at ` + keyIncidents + ` AND i.last_activity_at >= $3
	ORDER BY i.created_at, i.id`

// lockIncidentsSQL locks the incidents $2 of org $1 one after the other,
// in the order given (that of openIncidentsSQL, which every transaction
// that locks several follows), each read by its primary key as in
// keyIncidents: with the org's condition in it, a generic plan on stale
// statistics read the org's whole part of incidents_org_open to intersect
// it with the ids. The ids are the org's (openIncidentsSQL found them).
const lockIncidentsSQL = `SELECT 1 FROM unnest($2::text[]) AS c(id)
	CROSS JOIN LATERAL (SELECT org_id FROM incidents WHERE id = c.id OFFSET 0 FOR UPDATE) i
	WHERE i.org_id = $1`

// OpenIncidents locks the candidates (FOR UPDATE) and then looks them up
// again, until the lookup finds no candidate it has not locked: the key
// node locks keep other observations with these keys out, but a concurrent
// merge (by an observation with other keys) may move one of these key
// nodes from an incident into another, or a status change may close one.
// Once every candidate is locked, such a change has either committed, and
// the next lookup (a new snapshot) sees it, or it waits for this
// transaction.
func (t *corrTx) OpenIncidents(ctx context.Context, keys []string, since time.Time) ([]correlate.Candidate, error) {
	locked := map[string]bool{}
	for {
		var out []correlate.Candidate
		err := t.query(ctx, func(rows pgx.Rows) error {
			for rows.Next() {
				var c correlate.Candidate
				var created int64
				if err := rows.Scan(&c.ID, &created); err != nil {
					return err
				}
				c.CreatedAt = fromNanos(created)
				out = append(out, c)
			}
			return rows.Err()
		}, openIncidentsSQL, t.org, keys, nanos(since))
		if err != nil {
			return nil, err
		}
		var lock []string
		for _, c := range out {
			if !locked[c.ID] {
				lock = append(lock, c.ID)
				locked[c.ID] = true
			}
		}
		if len(lock) == 0 {
			return out, nil
		}
		// Sent with the next lookup.
		t.exec(lockIncidentsSQL, t.org, lock)
	}
}

func (t *corrTx) CreateIncident(_ context.Context, inc correlate.NewIncident) error {
	t.exec(`INSERT INTO incidents (id, org_id, title, severity, computed_severity, status,
		created_at, updated_at, last_activity_at) VALUES ($1, $2, $3, $4, $4, 1, $5, $5, $5)`,
		inc.ID, t.org, inc.Title, inc.Severity, nanos(inc.At))
	return nil
}

// incidentOfOrg guards a statement on the rows of incident $1: they are
// written only when it is an incident of org $2.
const incidentOfOrg = `EXISTS (SELECT 1 FROM incidents WHERE id = $1 AND org_id = $2)`

func (t *corrTx) MergeIncident(_ context.Context, from, into string, now time.Time) error {
	t.exec(`UPDATE observations SET incident_id = $3 WHERE org_id = $2 AND incident_id = $1`, from, t.org, into)
	t.exec(`INSERT INTO incident_nodes (incident_id, node_id, key)
		SELECT $3, x.node_id, x.key FROM incident_nodes x
		WHERE x.incident_id = $1 AND `+incidentOfOrg+` AND EXISTS (SELECT 1 FROM incidents WHERE id = $3 AND org_id = $2)
		ON CONFLICT (incident_id, node_id) DO UPDATE SET key = incident_nodes.key OR excluded.key`, from, t.org, into)
	t.exec(`INSERT INTO incident_artifacts (incident_id, artifact_id)
		SELECT $3, x.artifact_id FROM incident_artifacts x
		WHERE x.incident_id = $1 AND `+incidentOfOrg+` AND EXISTS (SELECT 1 FROM incidents WHERE id = $3 AND org_id = $2)
		ON CONFLICT DO NOTHING`, from, t.org, into)
	t.exec(`DELETE FROM incident_nodes WHERE incident_id = $1 AND `+incidentOfOrg, from, t.org)
	t.exec(`DELETE FROM incident_artifacts WHERE incident_id = $1 AND `+incidentOfOrg, from, t.org)
	// into spans its own events and from's (LEAST and GREATEST skip NULLs).
	t.exec(`UPDATE incidents t SET first_event_at = LEAST(t.first_event_at, f.first_event_at),
		last_event_at = GREATEST(t.last_event_at, f.last_event_at)
		FROM incidents f WHERE t.org_id = $2 AND t.id = $3 AND f.org_id = $2 AND f.id = $1`, from, t.org, into)
	t.exec(`UPDATE incidents SET merged_into = $3, artifact_count = 0, node_count = 0, updated_at = $4,
		first_event_at = NULL, last_event_at = NULL WHERE org_id = $2 AND id = $1`, from, t.org, into, nanos(now))
	t.refresh(into, now, false, true)
	return nil
}

func (t *corrTx) RebuildIncident(_ context.Context, id string, now time.Time) error {
	t.exec(`DELETE FROM incident_nodes WHERE incident_id = $1 AND `+incidentOfOrg, id, t.org)
	// A roll-up's nodes are context, whatever its observations say.
	t.exec(`INSERT INTO incident_nodes (incident_id, node_id, key)
		SELECT $1, x.node_id, bool_or(x.key) AND NOT EXISTS (SELECT 1 FROM rollups WHERE incident_id = $1)
		FROM observation_nodes x JOIN observations o ON o.id = x.observation_id
		WHERE o.org_id = $2 AND o.incident_id = $1 GROUP BY x.node_id`, id, t.org)
	t.exec(`DELETE FROM incident_artifacts WHERE incident_id = $1 AND `+incidentOfOrg, id, t.org)
	t.exec(`INSERT INTO incident_artifacts (incident_id, artifact_id)
		SELECT DISTINCT $1, x.artifact_id FROM observation_artifacts x JOIN observations o ON o.id = x.observation_id
		WHERE o.org_id = $2 AND o.incident_id = $1`, id, t.org)
	// Its event times, from the artifacts still stored and the
	// observations that name none.
	t.exec(`UPDATE incidents SET (first_event_at, last_event_at) = (
		SELECT MIN(e.t), MAX(e.t) FROM (
			SELECT k.ts AS t FROM incident_artifacts x JOIN artifact_ids k ON k.id = x.artifact_id
			WHERE x.incident_id = $1 AND k.org_id = $2
			UNION ALL
			SELECT o.created_at FROM observations o WHERE o.org_id = $2 AND o.incident_id = $1
			AND NOT EXISTS (SELECT 1 FROM observation_artifacts y WHERE y.observation_id = o.id)) e)
		WHERE org_id = $2 AND id = $1`, id, t.org)
	// A roll-up's sources, counted again: each source's artifacts among
	// its observations'.
	t.exec(`DELETE FROM rollup_sources WHERE incident_id = $1 AND `+rollupOfOrg, id, t.org)
	t.exec(`INSERT INTO rollup_sources (incident_id, node_id, count, first_at, last_at)
		SELECT $1, x.node_id, COUNT(DISTINCT a.artifact_id), MIN(o.created_at), MAX(o.updated_at)
		FROM observation_nodes x JOIN observations o ON o.id = x.observation_id
		JOIN observation_artifacts a ON a.observation_id = o.id
		WHERE o.incident_id = $1 AND o.org_id = $2 AND x.key AND `+rollupOfOrg+` GROUP BY x.node_id`, id, t.org)
	t.exec(`UPDATE rollups SET sources = (SELECT COUNT(*) FROM rollup_sources WHERE incident_id = $1),
		count = (SELECT COALESCE(SUM(count), 0) FROM rollup_sources WHERE incident_id = $1)
		WHERE incident_id = $1 AND org_id = $2`, id, t.org)
	t.refresh(id, now, false, true)
	return nil
}

// refresh queues the statement that recomputes an incident's headline:
// its title and computed severity are those of its observation of the
// highest rank (the newest on ties; a headline without a title keeps the
// incident's; a roll-up keeps its own), and its severity follows unless a
// rule decided it; with recount, its node and artifact counts too (else
// the statements that added nodes and artifacts advanced them: counting a
// roll-up's million nodes at every join would not do). With
// activity it is marked active at now, unless it was already active
// later: an observation recorded late must not move the last activity
// back and close the correlation window early.
func (t *corrTx) refresh(id string, now time.Time, activity, recount bool) {
	q := `UPDATE incidents i SET`
	if recount {
		q += `
		node_count = (SELECT COUNT(*) FROM incident_nodes WHERE incident_id = $1),
		artifact_count = (SELECT COUNT(*) FROM incident_artifacts WHERE incident_id = $1),`
	}
	q += `
		computed_severity = COALESCE(h.sev, 'low'),
		severity = CASE WHEN i.classified_by_id IS NULL THEN COALESCE(h.sev, 'low') ELSE i.severity END,
		title = COALESCE((SELECT r.title FROM rollups r WHERE r.incident_id = $1), NULLIF(h.title, ''), i.title),
		updated_at = $3`
	if activity {
		q += `, last_activity_at = GREATEST(i.last_activity_at, $3)`
	}
	q += ` FROM (SELECT (SELECT severity FROM observations WHERE org_id = $2 AND incident_id = $1 ` + headlineOrder + ` LIMIT 1),
			(SELECT title FROM observations WHERE org_id = $2 AND incident_id = $1 ` + headlineOrder + ` LIMIT 1)) AS h(sev, title)
		WHERE i.org_id = $2 AND i.id = $1`
	t.exec(q, id, t.org, nanos(now))
}

// headlineOrder puts an incident's headline observation first; the index
// observations_incident_rank serves it.
const headlineOrder = `ORDER BY title_rank DESC, created_at DESC, id DESC`

func (t *corrTx) InsertObservation(_ context.Context, o *vigil.Observation, rank int, keys map[string]bool) error {
	t.exec(`INSERT INTO observations (id, org_id, type, description, severity, created_at, updated_at, title, specificity, title_rank)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, o.ID, t.org, o.Type, o.Description, o.Severity, nanos(o.CreatedAt), nanos(o.UpdatedAt),
		o.Title, o.Specificity, rank)
	t.insertRefs(o.ID, o.NodeIDs, keys, o.ArtifactIDs)
	return nil
}

// observationOfOrg guards a statement on the rows of observation $1: they
// are written only when it is an observation of org $2.
const observationOfOrg = `EXISTS (SELECT 1 FROM observations WHERE id = $1 AND org_id = $2)`

// insertRefs queues the statements that record the nodes and artifacts of
// an observation with their positions, so that they read back in the
// order given.
func (t *corrTx) insertRefs(obsID string, nodeIDs []string, keys map[string]bool, artifactIDs []string) {
	if len(nodeIDs) > 0 {
		t.exec(`INSERT INTO observation_nodes (observation_id, node_id, pos, key)
			SELECT $1, n, o - 1, n = ANY($4) FROM unnest($3::text[]) WITH ORDINALITY AS t(n, o) WHERE `+observationOfOrg,
			obsID, t.org, nodeIDs, setKeys(keys))
	}
	if len(artifactIDs) > 0 {
		t.exec(`INSERT INTO observation_artifacts (observation_id, artifact_id, pos)
			SELECT $1, a, o - 1 FROM unnest($3::text[]) WITH ORDINALITY AS t(a, o) WHERE `+observationOfOrg,
			obsID, t.org, artifactIDs)
	}
}

func (t *corrTx) JoinIncident(_ context.Context, incident string, o *vigil.Observation, keys map[string]bool, now time.Time) error {
	t.exec(`UPDATE observations SET incident_id = $1 WHERE org_id = $2 AND id = $3`, incident, t.org, o.ID)
	t.addToIncident(incident, o.NodeIDs, keys, o.ArtifactIDs)
	if len(o.ArtifactIDs) == 0 {
		// An observation naming no artifact happened when reported.
		t.exec(`UPDATE incidents SET first_event_at = LEAST(first_event_at, $3), last_event_at = GREATEST(last_event_at, $3)
			WHERE org_id = $2 AND id = $1`, incident, t.org, nanos(o.CreatedAt))
	}
	t.refresh(incident, now, true, false)
	return nil
}

// addToIncident queues the statements that add nodes (a key stays a key)
// and artifacts to an incident, advancing its node and artifact counts by
// those new to it and widening its event times to their timestamps (LEAST
// and GREATEST skip NULLs: none new, nothing changes).
func (t *corrTx) addToIncident(incident string, nodeIDs []string, keys map[string]bool, artifactIDs []string) {
	if len(nodeIDs) > 0 {
		t.exec(`WITH ins AS (INSERT INTO incident_nodes (incident_id, node_id, key)
			SELECT $1, n, n = ANY($4) FROM unnest($3::text[]) AS n WHERE `+incidentOfOrg+`
			ON CONFLICT (incident_id, node_id) DO UPDATE SET key = incident_nodes.key OR excluded.key RETURNING (xmax = 0) AS inserted)
			UPDATE incidents SET node_count = node_count + (SELECT COUNT(*) FROM ins WHERE inserted) WHERE id = $1 AND org_id = $2`,
			incident, t.org, nodeIDs, setKeys(keys))
	}
	if len(artifactIDs) > 0 {
		t.exec(`WITH ins AS (INSERT INTO incident_artifacts (incident_id, artifact_id)
				SELECT $1, a FROM unnest($3::text[]) AS a WHERE `+incidentOfOrg+` ON CONFLICT DO NOTHING RETURNING artifact_id),
			ev AS (SELECT MIN(k.ts) AS lo, MAX(k.ts) AS hi FROM artifact_ids k
				WHERE k.org_id = $2 AND k.id IN (SELECT artifact_id FROM ins))
			UPDATE incidents SET artifact_count = artifact_count + (SELECT COUNT(*) FROM ins),
				first_event_at = LEAST(first_event_at, (SELECT lo FROM ev)),
				last_event_at = GREATEST(last_event_at, (SELECT hi FROM ev))
			WHERE id = $1 AND org_id = $2`,
			incident, t.org, artifactIDs)
	}
}

func (t *corrTx) LockObservation(ctx context.Context, id string) (*vigil.Observation, error) {
	if err := t.flush(ctx); err != nil {
		return nil, err
	}
	return lockObservation(ctx, t.tx, t.org, id)
}

func (t *corrTx) UpdateObservation(_ context.Context, o *vigil.Observation, rank int, keys map[string]bool, refs bool) error {
	t.exec(`UPDATE observations SET type = $1, description = $2, severity = $3, updated_at = $4, title_rank = $7
		WHERE org_id = $5 AND id = $6`, o.Type, o.Description, o.Severity, nanos(o.UpdatedAt), t.org, o.ID, rank)
	if refs {
		t.exec(`DELETE FROM observation_nodes WHERE observation_id = $1 AND `+observationOfOrg, o.ID, t.org)
		t.exec(`DELETE FROM observation_artifacts WHERE observation_id = $1 AND `+observationOfOrg, o.ID, t.org)
		t.insertRefs(o.ID, o.NodeIDs, keys, o.ArtifactIDs)
	}
	return nil
}

func (t *corrTx) DeleteObservation(_ context.Context, id string) error {
	// Its nodes and artifacts go with it (ON DELETE CASCADE).
	t.exec(`DELETE FROM observations WHERE org_id = $1 AND id = $2`, t.org, id)
	return nil
}

// GrowObservation locks the incident first, as every other change to it,
// after the key node locks the caller took: the order in which Record
// takes them.
func (t *corrTx) GrowObservation(ctx context.Context, g correlate.Growth) (int, int, error) {
	t.exec(`SELECT 1 FROM incidents WHERE org_id = $1 AND id = $2 FOR UPDATE`, t.org, g.IncidentID)
	if len(g.NodeIDs) > 0 {
		// New nodes go after the observation's, in order.
		t.exec(`INSERT INTO observation_nodes (observation_id, node_id, pos, key)
			SELECT $1, n, p.next + o - 1, n = ANY($4)
			FROM unnest($3::text[]) WITH ORDINALITY AS t(n, o),
				(SELECT COALESCE(MAX(pos), -1) + 1 AS next FROM observation_nodes WHERE observation_id = $1) p
			WHERE `+observationOfOrg+`
			ON CONFLICT (observation_id, node_id) DO UPDATE SET key = observation_nodes.key OR excluded.key`,
			g.ObservationID, t.org, g.NodeIDs, setKeys(g.Keys))
	}
	if len(g.ArtifactIDs) > 0 {
		// The observation lists at most MaxObservationArtifacts artifacts,
		// in the order they came; the incident takes them all.
		t.exec(`WITH c AS (SELECT COUNT(*) AS n FROM observation_artifacts WHERE observation_id = $1)
			INSERT INTO observation_artifacts (observation_id, artifact_id, pos)
			SELECT $1, a, (c.n + o - 1)::int FROM unnest($3::text[]) WITH ORDINALITY AS t(a, o), c
			WHERE `+observationOfOrg+`
			AND NOT EXISTS (SELECT 1 FROM observation_artifacts x WHERE x.observation_id = $1 AND x.artifact_id = t.a)
			ORDER BY o LIMIT (SELECT GREATEST(0, $4 - n) FROM c)`,
			g.ObservationID, t.org, g.ArtifactIDs, vigil.MaxObservationArtifacts)
	}
	t.exec(`UPDATE observations SET description = $1, severity = $2, updated_at = $3, title_rank = $6 WHERE org_id = $4 AND id = $5`,
		g.Description, g.Severity, nanos(g.Now), t.org, g.ObservationID, g.TitleRank)
	if g.Context {
		// A roll-up: counted and refreshed once a batch (UpdateRollup).
		return t.addToRollup(ctx, g.IncidentID, g.NodeIDs, g.ArtifactIDs)
	}
	return 0, 0, nil // the incident grows once a batch (GrowIncident)
}

// GrowIncident runs on the incident GrowObservation locked.
func (t *corrTx) GrowIncident(_ context.Context, g correlate.IncidentGrowth) error {
	t.addToIncident(g.IncidentID, g.NodeIDs, g.Keys, g.ArtifactIDs)
	t.refresh(g.IncidentID, g.At, true, false)
	return nil
}

func (t *corrTx) ObservationIncidents(ctx context.Context, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	err := t.query(ctx, func(rows pgx.Rows) error {
		for rows.Next() {
			var id, incident string
			if err := rows.Scan(&id, &incident); err != nil {
				return err
			}
			out[id] = incident
		}
		return rows.Err()
	}, `SELECT id, COALESCE(incident_id, '') FROM observations WHERE org_id = $1 AND id = ANY($2)`, t.org, ids)
	return out, err
}
