package postgres

import (
	"context"
	"hash/fnv"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

// RecordObservation stores o and correlates it into an incident.
func (s *Store) RecordObservation(ctx context.Context, org string, o *vigil.Observation, title string, p vigil.CorrelationPolicy) error {
	o.OrgID = org
	o.NodeIDs = vigil.Dedupe(o.NodeIDs)
	o.ArtifactIDs = vigil.Dedupe(o.ArtifactIDs)
	given, givenIDs := o.KeyNodeIDs, o.NodeIDs
	return wrap("RecordObservation", s.tx(ctx, func(tx pgx.Tx) error {
		if err := checkRefs(ctx, tx, org, givenIDs, o.ArtifactIDs); err != nil {
			return err
		}
		keys := make(map[string]bool, len(given))
		for _, id := range given {
			keys[id] = true
		}
		o.NodeIDs = givenIDs
		if len(o.Nodes) > 0 {
			nodes, err := upsertNodes(ctx, tx, org, o.Nodes, o.CreatedAt)
			if err != nil {
				return err
			}
			o.NodeIDs = vigil.AddNodes(slices.Clone(givenIDs), keys, nodes, o.Nodes)
		}
		return recordObservation(ctx, tx, org, o, keys, title, p)
	}))
}

// recordObservation inserts o with its node roles and correlates it.
//
// Several processes may record observations at once. It first takes a
// transaction-scoped advisory lock on each key node, (org, node) hashed to
// a bigint, in ascending order so that two observations sharing several
// keys cannot deadlock: observations that share a key node are correlated
// one after the other, and the second sees the incident the first opened
// (READ COMMITTED gives every later statement a snapshot taken after the
// lock was granted). Observations without key nodes open their own
// incident and need no lock.
func recordObservation(ctx context.Context, tx pgx.Tx, org string, o *vigil.Observation, keys map[string]bool, title string, p vigil.CorrelationPolicy) error {
	o.OrgID = org
	if err := lockKeyNodes(ctx, tx, org, keys); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO observations (id, org_id, type, description, severity, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, o.ID, org, o.Type, o.Description, o.Severity, nanos(o.CreatedAt), nanos(o.UpdatedAt)); err != nil {
		return err
	}
	if err := hubsToContext(ctx, tx, org, keys, p.HubLimit); err != nil {
		return err
	}
	if err := insertObservationRefs(ctx, tx, o.ID, o.NodeIDs, keys, o.ArtifactIDs); err != nil {
		return err
	}
	incID, err := correlate(ctx, tx, org, o, keys, title, p)
	if err != nil {
		return err
	}
	o.IncidentID = incID
	o.KeyNodeIDs = nil
	for _, id := range o.NodeIDs {
		if keys[id] {
			o.KeyNodeIDs = append(o.KeyNodeIDs, id)
		}
	}
	return nil
}

// lockKeyNodes takes the advisory locks of key nodes for the rest of the
// transaction.
func lockKeyNodes(ctx context.Context, tx pgx.Tx, org string, keys map[string]bool) error {
	locks := nodeLockKeys(org, setKeys(keys))
	if len(locks) == 0 {
		return nil
	}
	// unnest yields the keys in array order, already sorted.
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k`, locks)
	return err
}

// nodeLockKeys returns the advisory lock keys of the key nodes of org,
// sorted and without repeats. A collision of two hashes only serializes
// two unrelated observations; it never lets two related ones run at once.
func nodeLockKeys(org string, nodeIDs []string) []int64 {
	var out []int64
	for _, id := range nodeIDs {
		h := fnv.New64a()
		h.Write([]byte("vigil/correlate\x00"))
		h.Write([]byte(org))
		h.Write([]byte{0})
		h.Write([]byte(id))
		out = append(out, int64(h.Sum64()))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// checkRefs returns EINVALID naming node_ids or artifact_ids when one of
// them is not a record of org.
func checkRefs(ctx context.Context, tx pgx.Tx, org string, nodeIDs, artifactIDs []string) error {
	if missing, err := missingIDs(ctx, tx, "nodes", org, nodeIDs); err != nil {
		return err
	} else if len(missing) > 0 {
		return vigil.InvalidField("node_ids", "unknown node "+missing[0])
	}
	if missing, err := missingIDs(ctx, tx, "artifact_ids", org, artifactIDs); err != nil {
		return err
	} else if len(missing) > 0 {
		return vigil.InvalidField("artifact_ids", "unknown artifact "+missing[0])
	}
	return nil
}

// setKeys returns the members of a set, for an array parameter.
func setKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// hubsToContext drops from keys the nodes already key nodes of hubLimit or
// more open incidents: such a hub (a NAT gateway, a public resolver) would
// otherwise collapse unrelated incidents into one.
func hubsToContext(ctx context.Context, tx pgx.Tx, org string, keys map[string]bool, hubLimit int) error {
	if len(keys) == 0 || hubLimit <= 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT n.node_id FROM incident_nodes n JOIN incidents i ON i.id = n.incident_id
		WHERE i.org_id = $1 AND n.key AND i.status IN (1, 2) AND i.merged_into IS NULL AND n.node_id = ANY($2)
		GROUP BY n.node_id HAVING COUNT(*) >= $3`, org, setKeys(keys), hubLimit)
	if err != nil {
		return err
	}
	hubs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, id := range hubs {
		delete(keys, id)
	}
	return nil
}

// insertObservationRefs records the nodes and artifacts of an observation
// with their positions, so that they read back in the order given.
func insertObservationRefs(ctx context.Context, tx pgx.Tx, obsID string, nodeIDs []string, keys map[string]bool, artifactIDs []string) error {
	b := &pgx.Batch{}
	if len(nodeIDs) > 0 {
		b.Queue(`INSERT INTO observation_nodes (observation_id, node_id, pos, key)
			SELECT $1, n, o - 1, n = ANY($3) FROM unnest($2::text[]) WITH ORDINALITY AS t(n, o)`, obsID, nodeIDs, setKeys(keys))
	}
	if len(artifactIDs) > 0 {
		b.Queue(`INSERT INTO observation_artifacts (observation_id, artifact_id, pos)
			SELECT $1, a, o - 1 FROM unnest($2::text[]) WITH ORDINALITY AS t(a, o)`, obsID, artifactIDs)
	}
	return sendBatch(ctx, tx, b)
}

// sendBatch runs the queued statements in one round trip and returns the
// first error.
func sendBatch(ctx context.Context, tx pgx.Tx, b *pgx.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}

// correlate attaches observation o to an incident (DESIGN §8) and returns
// its id.
//
// The candidates are locked (FOR UPDATE) before they are used, and then
// looked up again, until the lookup finds no candidate it has not locked:
// the key node locks keep other observations with these keys out, but a
// concurrent merge (by an observation with other keys) may move one of
// these key nodes from an incident into another, or a status change may
// close one. Once every candidate is locked, such a change has either
// committed, and the next lookup (a new snapshot, READ COMMITTED) sees it,
// or it waits for this transaction.
func correlate(ctx context.Context, tx pgx.Tx, org string, o *vigil.Observation, keys map[string]bool, title string, p vigil.CorrelationPolicy) (string, error) {
	now := o.CreatedAt
	var candidates []string // oldest first
	if len(keys) > 0 {
		locked := map[string]bool{}
		for {
			rows, err := tx.Query(ctx, `SELECT i.id FROM incidents i
				WHERE i.org_id = $1 AND i.status IN (1, 2) AND i.merged_into IS NULL AND i.last_activity_at >= $3
				AND EXISTS (SELECT 1 FROM incident_nodes n WHERE n.incident_id = i.id AND n.key AND n.node_id = ANY($2))
				ORDER BY i.created_at, i.id`, org, setKeys(keys), nanos(now.Add(-p.Window)))
			if err != nil {
				return "", err
			}
			if candidates, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
				return "", err
			}
			var lock []string
			for _, id := range candidates {
				if !locked[id] {
					lock = append(lock, id)
					locked[id] = true
				}
			}
			if len(lock) == 0 {
				break
			}
			if _, err := tx.Exec(ctx, `SELECT 1 FROM incidents WHERE org_id = $1 AND id = ANY($2)
				ORDER BY created_at, id FOR UPDATE`, org, lock); err != nil {
				return "", err
			}
		}
	}
	var target string
	if len(candidates) == 0 {
		target = vigil.NewID()
		if _, err := tx.Exec(ctx, `INSERT INTO incidents (id, org_id, title, severity, computed_severity, status,
			created_at, updated_at, last_activity_at) VALUES ($1, $2, $3, $4, $4, 1, $5, $5, $5)`,
			target, org, title, o.Severity, nanos(now)); err != nil {
			return "", err
		}
	} else {
		// The observation bridges every candidate: merge them into the oldest.
		target = candidates[0]
		for _, other := range candidates[1:] {
			if err := mergeIncident(ctx, tx, org, other, target, now); err != nil {
				return "", err
			}
		}
	}
	b := &pgx.Batch{}
	b.Queue(`UPDATE observations SET incident_id = $1 WHERE org_id = $2 AND id = $3`, target, org, o.ID)
	if len(o.NodeIDs) > 0 {
		b.Queue(`INSERT INTO incident_nodes (incident_id, node_id, key)
			SELECT $1, n, n = ANY($3) FROM unnest($2::text[]) AS n
			ON CONFLICT (incident_id, node_id) DO UPDATE SET key = incident_nodes.key OR excluded.key`,
			target, o.NodeIDs, setKeys(keys))
	}
	if len(o.ArtifactIDs) > 0 {
		b.Queue(`INSERT INTO incident_artifacts (incident_id, artifact_id)
			SELECT $1, a FROM unnest($2::text[]) AS a ON CONFLICT DO NOTHING`, target, o.ArtifactIDs)
	}
	queueRefresh(b, org, target, now, true)
	return target, sendBatch(ctx, tx, b)
}

// mergeIncident moves everything of incident from into incident into and
// leaves from as a pointer (merged_into). Both are locked by the caller.
func mergeIncident(ctx context.Context, tx pgx.Tx, org, from, into string, now time.Time) error {
	b := &pgx.Batch{}
	b.Queue(`UPDATE observations SET incident_id = $2 WHERE org_id = $3 AND incident_id = $1`, from, into, org)
	b.Queue(`INSERT INTO incident_nodes (incident_id, node_id, key)
		SELECT $2, x.node_id, x.key FROM incident_nodes x JOIN incidents i ON i.id = x.incident_id
		WHERE x.incident_id = $1 AND i.org_id = $3
		ON CONFLICT (incident_id, node_id) DO UPDATE SET key = incident_nodes.key OR excluded.key`, from, into, org)
	b.Queue(`INSERT INTO incident_artifacts (incident_id, artifact_id)
		SELECT $2, x.artifact_id FROM incident_artifacts x JOIN incidents i ON i.id = x.incident_id
		WHERE x.incident_id = $1 AND i.org_id = $3
		ON CONFLICT DO NOTHING`, from, into, org)
	b.Queue(`DELETE FROM incident_nodes WHERE incident_id = $1
		AND incident_id IN (SELECT id FROM incidents WHERE org_id = $2)`, from, org)
	b.Queue(`DELETE FROM incident_artifacts WHERE incident_id = $1
		AND incident_id IN (SELECT id FROM incidents WHERE org_id = $2)`, from, org)
	b.Queue(`UPDATE incidents SET merged_into = $2, artifact_count = 0, node_count = 0, updated_at = $4
		WHERE org_id = $3 AND id = $1`, from, into, org, nanos(now))
	queueRefresh(b, org, into, now, false)
	return sendBatch(ctx, tx, b)
}

// queueRefresh queues the statement that recomputes an incident's counts
// and computed severity (the highest of its observations). With activity
// it also marks the incident active at now, unless it was already active
// later: an observation recorded late must not move the last activity back
// and close the correlation window early.
func queueRefresh(b *pgx.Batch, org, id string, now time.Time, activity bool) {
	queueRefreshCounts(b, org, id, now, activity, true)
}

// queueRefreshKeepArtifacts refreshes an incident that grew, whose
// artifact_count was already advanced by the statement that added them.
func queueRefreshKeepArtifacts(b *pgx.Batch, org, id string, now time.Time) {
	queueRefreshCounts(b, org, id, now, true, false)
}

func queueRefreshCounts(b *pgx.Batch, org, id string, now time.Time, activity, recountArtifacts bool) {
	artifacts := `artifact_count = (SELECT COUNT(*) FROM incident_artifacts WHERE incident_id = $1),`
	if !recountArtifacts {
		artifacts = ``
	}
	q := `UPDATE incidents i SET
		node_count = (SELECT COUNT(*) FROM incident_nodes WHERE incident_id = $1),
		` + artifacts + `
		computed_severity = c.sev,
		severity = CASE WHEN i.classified_by_id IS NULL THEN c.sev ELSE i.severity END,
		updated_at = $3`
	if activity {
		q += `, last_activity_at = GREATEST(i.last_activity_at, $3)`
	}
	q += ` FROM (SELECT CASE MAX(CASE severity WHEN 'critical' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 WHEN 'low' THEN 1 ELSE 0 END)
			WHEN 4 THEN 'critical' WHEN 3 THEN 'high' WHEN 2 THEN 'medium' ELSE 'low' END
			FROM observations WHERE org_id = $2 AND incident_id = $1) AS c(sev)
		WHERE i.org_id = $2 AND i.id = $1`
	b.Queue(q, id, org, nanos(now))
}

// lockIncident locks an incident of org for the rest of the transaction,
// so that its rebuild sees every observation a concurrent correlation
// added to it.
func lockIncident(ctx context.Context, tx pgx.Tx, org, id string) error {
	_, err := tx.Exec(ctx, `SELECT 1 FROM incidents WHERE org_id = $1 AND id = $2 FOR UPDATE`, org, id)
	return err
}

// rebuildIncident recomputes an incident's node and artifact sets from its
// observations, after one of them changed or left.
func rebuildIncident(ctx context.Context, tx pgx.Tx, org, id string, now time.Time) error {
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM incident_nodes WHERE incident_id = $1
		AND incident_id IN (SELECT id FROM incidents WHERE org_id = $2)`, id, org)
	b.Queue(`INSERT INTO incident_nodes (incident_id, node_id, key)
		SELECT $1, x.node_id, bool_or(x.key) FROM observation_nodes x JOIN observations o ON o.id = x.observation_id
		WHERE o.org_id = $2 AND o.incident_id = $1 GROUP BY x.node_id`, id, org)
	b.Queue(`DELETE FROM incident_artifacts WHERE incident_id = $1
		AND incident_id IN (SELECT id FROM incidents WHERE org_id = $2)`, id, org)
	b.Queue(`INSERT INTO incident_artifacts (incident_id, artifact_id)
		SELECT DISTINCT $1, x.artifact_id FROM observation_artifacts x JOIN observations o ON o.id = x.observation_id
		WHERE o.org_id = $2 AND o.incident_id = $1`, id, org)
	queueRefresh(b, org, id, now, false)
	return sendBatch(ctx, tx, b)
}

const observationCols = `id, org_id, type, description, severity, COALESCE(incident_id, ''), created_at, updated_at`

func scanObservation(row pgx.Row) (*vigil.Observation, error) {
	var o vigil.Observation
	var created, updated int64
	if err := row.Scan(&o.ID, &o.OrgID, &o.Type, &o.Description, &o.Severity, &o.IncidentID, &created, &updated); err != nil {
		return nil, err
	}
	o.CreatedAt, o.UpdatedAt = fromNanos(created), fromNanos(updated)
	o.NodeIDs, o.ArtifactIDs = []string{}, []string{}
	return &o, nil
}

// GetObservation returns one observation of org.
func (s *Store) GetObservation(ctx context.Context, org, id string) (*vigil.Observation, error) {
	o, err := getObservation(ctx, s.pool, org, id)
	return o, wrap("GetObservation", err)
}

func getObservation(ctx context.Context, q querier, org, id string) (*vigil.Observation, error) {
	o, err := scanObservation(q.QueryRow(ctx, `SELECT `+observationCols+` FROM observations WHERE org_id = $1 AND id = $2`, org, id))
	if err != nil {
		return nil, notFound(err, "observation")
	}
	if err := loadObservationRefs(ctx, q, org, []*vigil.Observation{o}); err != nil {
		return nil, err
	}
	return o, nil
}

// lockObservation returns an observation of org with its incident and the
// observation itself locked, in that order: the order in which correlation
// locks them (it locks incidents, then moves their observations), so that
// the two never deadlock. A merge that moved the observation while this
// waited is seen, and the new incident locked instead.
func lockObservation(ctx context.Context, tx pgx.Tx, org, id string) (*vigil.Observation, error) {
	for {
		o, err := getObservation(ctx, tx, org, id)
		if err != nil {
			return nil, err
		}
		if o.IncidentID != "" {
			if err := lockIncident(ctx, tx, org, o.IncidentID); err != nil {
				return nil, err
			}
		}
		var incident string
		err = tx.QueryRow(ctx, `SELECT COALESCE(incident_id, '') FROM observations WHERE org_id = $1 AND id = $2 FOR UPDATE`, org, id).Scan(&incident)
		if err != nil {
			return nil, notFound(err, "observation")
		}
		if incident == o.IncidentID {
			// Read again under the lock: a concurrent update may have
			// committed while this waited.
			return getObservation(ctx, tx, org, id)
		}
	}
}

// loadObservationRefs fills NodeIDs, KeyNodeIDs and ArtifactIDs of obs, in
// the order they were given.
func loadObservationRefs(ctx context.Context, q querier, org string, obs []*vigil.Observation) error {
	if len(obs) == 0 {
		return nil
	}
	byID := make(map[string]*vigil.Observation, len(obs))
	ids := make([]string, 0, len(obs))
	for _, o := range obs {
		byID[o.ID] = o
		ids = append(ids, o.ID)
	}
	rows, err := q.Query(ctx, `SELECT x.observation_id, x.node_id, x.key FROM observation_nodes x
		JOIN observations o ON o.id = x.observation_id
		WHERE o.org_id = $1 AND x.observation_id = ANY($2) ORDER BY x.observation_id, x.pos`, org, ids)
	if err != nil {
		return err
	}
	for rows.Next() {
		var oid, nid string
		var key bool
		if err := rows.Scan(&oid, &nid, &key); err != nil {
			rows.Close()
			return err
		}
		o := byID[oid]
		o.NodeIDs = append(o.NodeIDs, nid)
		if key {
			o.KeyNodeIDs = append(o.KeyNodeIDs, nid)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = q.Query(ctx, `SELECT x.observation_id, x.artifact_id FROM observation_artifacts x
		JOIN observations o ON o.id = x.observation_id
		WHERE o.org_id = $1 AND x.observation_id = ANY($2) ORDER BY x.observation_id, x.pos`, org, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var oid, aid string
		if err := rows.Scan(&oid, &aid); err != nil {
			return err
		}
		byID[oid].ArtifactIDs = append(byID[oid].ArtifactIDs, aid)
	}
	return rows.Err()
}

// ListObservations returns a page of org's observations, newest first.
func (s *Store) ListObservations(ctx context.Context, org string, f vigil.ObservationFilter) ([]*vigil.Observation, int, error) {
	var c conds
	c.add("org_id = ?", org)
	if f.Type != "" {
		c.add("type = ?", f.Type)
	}
	if f.Severity != "" {
		c.add("severity = ?", f.Severity)
	}
	c.timeRange("created_at", f.Range)
	limit, pageArgs := c.page(f.Page)
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT COUNT(*) FROM observations WHERE `+c.where, c.args...).Scan(&total); err != nil {
		return nil, 0, wrap("ListObservations", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+observationCols+` FROM observations WHERE `+c.where+
		` ORDER BY created_at DESC, id DESC`+limit, pageArgs...)
	if err != nil {
		return nil, 0, wrap("ListObservations", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*vigil.Observation, error) { return scanObservation(r) })
	if err != nil {
		return nil, 0, wrap("ListObservations", err)
	}
	if out == nil {
		out = []*vigil.Observation{}
	}
	return out, total, wrap("ListObservations", loadObservationRefs(ctx, s.pool, org, out))
}

// UpdateObservation applies a partial update and refreshes its incident.
func (s *Store) UpdateObservation(ctx context.Context, org, id string, u vigil.ObservationUpdate, now time.Time) (*vigil.Observation, error) {
	var out *vigil.Observation
	err := s.tx(ctx, func(tx pgx.Tx) error {
		o, err := lockObservation(ctx, tx, org, id)
		if err != nil {
			return err
		}
		nodeIDs, artifactIDs := u.Apply(o)
		if err := checkRefs(ctx, tx, org, nodeIDs, artifactIDs); err != nil {
			return err
		}
		keys := u.KeySet(o, nodeIDs)
		if len(u.Nodes) > 0 {
			nodes, err := upsertNodes(ctx, tx, org, u.Nodes, now)
			if err != nil {
				return err
			}
			nodeIDs = vigil.AddNodes(slices.Clone(nodeIDs), keys, nodes, u.Nodes)
		}
		o.UpdatedAt = now
		if _, err := tx.Exec(ctx, `UPDATE observations SET type = $1, description = $2, severity = $3, updated_at = $4
			WHERE org_id = $5 AND id = $6`, o.Type, o.Description, o.Severity, nanos(now), org, id); err != nil {
			return err
		}
		if u.ChangesRefs() {
			b := &pgx.Batch{}
			b.Queue(`DELETE FROM observation_nodes WHERE observation_id = $1
				AND observation_id IN (SELECT id FROM observations WHERE org_id = $2)`, id, org)
			b.Queue(`DELETE FROM observation_artifacts WHERE observation_id = $1
				AND observation_id IN (SELECT id FROM observations WHERE org_id = $2)`, id, org)
			if err := sendBatch(ctx, tx, b); err != nil {
				return err
			}
			if err := insertObservationRefs(ctx, tx, id, nodeIDs, keys, artifactIDs); err != nil {
				return err
			}
			o.NodeIDs, o.ArtifactIDs = nodeIDs, artifactIDs
			o.KeyNodeIDs = nil
			for _, n := range nodeIDs {
				if keys[n] {
					o.KeyNodeIDs = append(o.KeyNodeIDs, n)
				}
			}
		}
		if o.IncidentID != "" {
			if err := rebuildIncident(ctx, tx, org, o.IncidentID, now); err != nil {
				return err
			}
		}
		out = o
		return nil
	})
	return out, wrap("UpdateObservation", err)
}

// DeleteObservation removes an observation and refreshes its incident.
func (s *Store) DeleteObservation(ctx context.Context, org, id string) error {
	return wrap("DeleteObservation", s.tx(ctx, func(tx pgx.Tx) error {
		o, err := lockObservation(ctx, tx, org, id)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM observations WHERE org_id = $1 AND id = $2`, org, id); err != nil {
			return err
		}
		if o.IncidentID != "" {
			return rebuildIncident(ctx, tx, org, o.IncidentID, vigil.Now())
		}
		return nil
	}))
}
