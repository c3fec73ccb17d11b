package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
)

// The roll-ups and entity risk of correlate.RollupTx. The roll-up
// decisions of one detection run one after the other (LockRollup, an
// advisory lock), and a roll-up's incident is locked (FOR UPDATE) before
// it changes, after the key node locks the caller took: the order in
// which Record takes them.

func (t *corrTx) AddRisk(_ context.Context, r correlate.RiskEntry) error {
	t.exec(`INSERT INTO entity_risk (org_id, observation_id, node_id, detection, points, at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (org_id, observation_id, node_id) DO UPDATE SET points = GREATEST(entity_risk.points, excluded.points)`,
		t.org, r.ObservationID, r.NodeID, r.Detection, r.Points, nanos(r.At))
	return nil
}

func (t *corrTx) Risk(ctx context.Context, node string, since time.Time) (int, []string, error) {
	points, dets := 0, []string{}
	err := t.query(ctx, func(rows pgx.Rows) error {
		for rows.Next() {
			var d string
			var p int64
			if err := rows.Scan(&d, &p); err != nil {
				return err
			}
			points += int(p)
			dets = append(dets, d)
		}
		return rows.Err()
	}, `SELECT detection, SUM(points) FROM entity_risk WHERE org_id = $1 AND node_id = $2 AND at >= $3
		GROUP BY detection ORDER BY detection`, t.org, node, nanos(since))
	return points, dets, err
}

func (t *corrTx) DetectionSources(ctx context.Context, detection string, since time.Time) (int, time.Time, error) {
	var n int64
	var oldest *int64
	err := t.query(ctx, func(rows pgx.Rows) error {
		for rows.Next() {
			if err := rows.Scan(&n, &oldest); err != nil {
				return err
			}
		}
		return rows.Err()
	}, `SELECT COUNT(DISTINCT node_id), MIN(at) FROM entity_risk WHERE org_id = $1 AND detection = $2 AND at >= $3`,
		t.org, detection, nanos(since))
	var at time.Time
	if oldest != nil {
		at = fromNanos(*oldest)
	}
	return int(n), at, err
}

func (t *corrTx) LockRollup(_ context.Context, detection string) error {
	t.advisoryLock([]int64{lockKey("vigil/rollup", t.org, detection)})
	return nil
}

// rollupCols are a roll-up's columns, as rollups reads them.
const rollupCols = `r.incident_id, r.detection, r.detector, r.name, r.window_start, r.window_end, r.sources, r.count, r.title`

// rollups runs sql and returns the roll-ups it selects (rollupCols).
func (t *corrTx) rollups(ctx context.Context, sql string, args ...any) ([]correlate.Rollup, error) {
	var out []correlate.Rollup
	err := t.query(ctx, func(rows pgx.Rows) error {
		for rows.Next() {
			var r correlate.Rollup
			var start, end, sources, count int64
			if err := rows.Scan(&r.IncidentID, &r.Detection, &r.Detector, &r.Name, &start, &end, &sources, &count, &r.Title); err != nil {
				return err
			}
			r.WindowStart, r.WindowEnd, r.Sources, r.Count = fromNanos(start), fromNanos(end), int(sources), int(count)
			out = append(out, r)
		}
		return rows.Err()
	}, sql, args...)
	return out, err
}

// first returns the first of rs, or nil.
func first(rs []correlate.Rollup, err error) (*correlate.Rollup, error) {
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	return &rs[0], nil
}

// openRollup keeps the roll-ups whose incident is open and not merged.
const openRollup = `i.id = r.incident_id AND i.org_id = r.org_id AND i.status IN (1, 2) AND i.merged_into IS NULL`

func (t *corrTx) OpenRollup(ctx context.Context, detection string, at time.Time) (*correlate.Rollup, error) {
	return first(t.rollups(ctx, `SELECT `+rollupCols+` FROM rollups r, incidents i
		WHERE r.org_id = $1 AND r.detection = $2 AND r.window_end > $3 AND `+openRollup+`
		ORDER BY r.window_end DESC LIMIT 1 FOR UPDATE OF i, r`, t.org, detection, nanos(at)))
}

func (t *corrTx) RollupOf(ctx context.Context, incident string) (*correlate.Rollup, error) {
	return first(t.rollups(ctx, `SELECT `+rollupCols+` FROM rollups r WHERE r.incident_id = $1 AND r.org_id = $2`, incident, t.org))
}

func (t *corrTx) CreateRollup(_ context.Context, r correlate.Rollup) error {
	t.exec(`INSERT INTO rollups (incident_id, org_id, detection, detector, name, window_start, window_end, sources, count, title)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 WHERE EXISTS (SELECT 1 FROM incidents WHERE id = $1 AND org_id = $2)`,
		r.IncidentID, t.org, r.Detection, r.Detector, r.Name, nanos(r.WindowStart), nanos(r.WindowEnd), r.Sources, r.Count, r.Title)
	return nil
}

func (t *corrTx) JoinRollup(ctx context.Context, incident string, o *vigil.Observation) (int, int, error) {
	t.exec(`UPDATE observations SET incident_id = $1 WHERE org_id = $2 AND id = $3`, incident, t.org, o.ID)
	if len(o.ArtifactIDs) == 0 {
		// An observation naming no artifact happened when reported.
		t.exec(fmt.Sprintf(widenEvents, unnestIDs), incident, t.org, []string{}, nanos(o.CreatedAt))
	}
	return t.addToRollup(ctx, incident, o.NodeIDs, o.ArtifactIDs)
}

// widenEvents widens incident $1's event times to those of the artifacts
// of org $2 that its %s selects (from $3) and to $4 (NULL: none), writing
// the incident only when they widen: a roll-up is counted once a batch,
// its event times as its artifacts come.
const widenEvents = `UPDATE incidents i SET first_event_at = LEAST(i.first_event_at, e.lo), last_event_at = GREATEST(i.last_event_at, e.hi)
	FROM (SELECT LEAST(MIN(k.ts), $4::bigint) AS lo, GREATEST(MAX(k.ts), $4::bigint) AS hi FROM artifact_ids k
		WHERE k.org_id = $2 AND k.id IN (%s)) e
	WHERE i.org_id = $2 AND i.id = $1 AND e.lo IS NOT NULL
	AND (i.first_event_at IS NULL OR e.lo < i.first_event_at OR e.hi > i.last_event_at)`

// unnestIDs selects the ids of $3 for widenEvents.
const unnestIDs = `SELECT unnest($3::text[])`

// addToRollup adds nodes (as context) and artifacts to roll-up incident
// and returns how many of each were new to it, without counting them on
// it; its event times widen to the artifacts'.
func (t *corrTx) addToRollup(ctx context.Context, incident string, nodeIDs, artifactIDs []string) (int, int, error) {
	if len(artifactIDs) > 0 {
		t.exec(fmt.Sprintf(widenEvents, unnestIDs), incident, t.org, artifactIDs, nil)
	}
	var nodes, arts int64
	err := t.query(ctx, func(rows pgx.Rows) error {
		for rows.Next() {
			if err := rows.Scan(&nodes, &arts); err != nil {
				return err
			}
		}
		return rows.Err()
	}, `WITH n AS (INSERT INTO incident_nodes (incident_id, node_id, key)
			SELECT $1, x, false FROM unnest($3::text[]) AS x WHERE `+incidentOfOrg+` ON CONFLICT DO NOTHING RETURNING 1),
		a AS (INSERT INTO incident_artifacts (incident_id, artifact_id)
			SELECT $1, x FROM unnest($4::text[]) AS x WHERE `+incidentOfOrg+` ON CONFLICT DO NOTHING RETURNING 1)
		SELECT (SELECT COUNT(*) FROM n), (SELECT COUNT(*) FROM a)`, incident, t.org, nodeIDs, artifactIDs)
	return int(nodes), int(arts), err
}

func (t *corrTx) UpdateRollup(_ context.Context, u correlate.RollupUpdate) error {
	t.exec(`UPDATE rollups SET sources = sources + $3, count = count + $4, title = COALESCE(NULLIF($5, ''), title)
		WHERE incident_id = $1 AND org_id = $2`, u.IncidentID, t.org, u.Sources, u.Count, u.Title)
	t.exec(`UPDATE incidents SET node_count = node_count + $3, artifact_count = artifact_count + $4 WHERE id = $1 AND org_id = $2`,
		u.IncidentID, t.org, u.Nodes, u.Artifacts)
	// The title follows from the roll-up's (refresh).
	t.refresh(u.IncidentID, u.At, u.Active, false)
	return nil
}

// rollupOfOrg guards a statement on the rows of roll-up $1 (its incident
// id): they are written only when it is a roll-up of org $2.
const rollupOfOrg = `EXISTS (SELECT 1 FROM rollups WHERE incident_id = $1 AND org_id = $2)`

func (t *corrTx) AddRollupSource(ctx context.Context, incident, node string, count int, at time.Time) (bool, error) {
	var inserted []bool
	err := t.query(ctx, func(rows pgx.Rows) error {
		var err error
		inserted, err = pgx.CollectRows(rows, pgx.RowTo[bool])
		return err
	}, `INSERT INTO rollup_sources (incident_id, node_id, count, first_at, last_at)
		SELECT $1, $3, $4, $5, $5 WHERE `+rollupOfOrg+`
		ON CONFLICT (incident_id, node_id) DO UPDATE SET count = rollup_sources.count + excluded.count,
			last_at = GREATEST(rollup_sources.last_at, excluded.last_at)
		RETURNING (xmax = 0)`, incident, t.org, node, count, nanos(at))
	return len(inserted) == 1 && inserted[0], err
}

func (t *corrTx) RollupCandidates(ctx context.Context, detection string, since time.Time) ([]correlate.Candidacy, error) {
	var out []correlate.Candidacy
	err := t.query(ctx, func(rows pgx.Rows) error {
		for rows.Next() {
			var c correlate.Candidacy
			if err := rows.Scan(&c.IncidentID, &c.ObservationID, &c.Severity, &c.Detection, &c.NodeID); err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
	}, `WITH inc AS (SELECT i.id, i.created_at FROM incidents i
			WHERE i.id IN (SELECT o2.incident_id FROM entity_risk r2 JOIN observations o2 ON o2.id = r2.observation_id
				WHERE r2.org_id = $1 AND r2.detection = $2 AND r2.at >= $3 AND o2.incident_id IS NOT NULL)
			AND i.org_id = $1 AND i.status = 1 AND i.merged_into IS NULL AND i.assignee IS NULL
			AND NOT EXISTS (SELECT 1 FROM rollups WHERE incident_id = i.id)
			FOR UPDATE OF i)
		SELECT o.incident_id, o.id, o.severity, COALESCE(r.detection, ''), COALESCE(r.node_id, '')
		FROM inc JOIN observations o ON o.incident_id = inc.id AND o.org_id = $1
		LEFT JOIN entity_risk r ON r.org_id = $1 AND r.observation_id = o.id
		ORDER BY inc.created_at, o.incident_id, o.created_at, o.id`, t.org, detection, nanos(since))
	return out, err
}

func (t *corrTx) TakeIntoRollup(ctx context.Context, obs []string, node, from, into string, now time.Time) (bool, int, bool, error) {
	// The artifacts new to the roll-up count on the source.
	var arts int64
	err := t.query(ctx, func(rows pgx.Rows) error {
		for rows.Next() {
			if err := rows.Scan(&arts); err != nil {
				return err
			}
		}
		return rows.Err()
	}, `WITH ins AS (INSERT INTO incident_artifacts (incident_id, artifact_id)
			SELECT DISTINCT $1, x.artifact_id FROM observation_artifacts x WHERE x.observation_id = ANY($3) AND `+incidentOfOrg+`
			ON CONFLICT DO NOTHING RETURNING 1),
		n AS (UPDATE incidents SET artifact_count = artifact_count + (SELECT COUNT(*) FROM ins) WHERE id = $1 AND org_id = $2)
		SELECT COUNT(*) FROM ins`, into, t.org, obs)
	if err != nil {
		return false, 0, false, err
	}
	t.exec(`WITH ins AS (INSERT INTO incident_nodes (incident_id, node_id, key)
			SELECT DISTINCT $1, x.node_id, false FROM observation_nodes x WHERE x.observation_id = ANY($3) AND `+incidentOfOrg+`
			ON CONFLICT DO NOTHING RETURNING 1)
		UPDATE incidents SET node_count = node_count + (SELECT COUNT(*) FROM ins) WHERE id = $1 AND org_id = $2`, into, t.org, obs)
	t.exec(fmt.Sprintf(widenEvents, `SELECT artifact_id FROM observation_artifacts WHERE observation_id = ANY($3)`), into, t.org, obs, nil)
	t.exec(`UPDATE observations SET incident_id = $3 WHERE org_id = $2 AND incident_id = $1 AND id = ANY($4)`, from, t.org, into, obs)
	isNew, err := t.AddRollupSource(ctx, into, node, int(arts), now)
	if err != nil {
		return false, 0, false, err
	}
	added := 0
	if isNew {
		added = 1
	}
	t.exec(`UPDATE rollups SET sources = sources + $3, count = count + $4 WHERE incident_id = $1 AND org_id = $2`, into, t.org, added, arts)
	t.refresh(into, now, true, false)
	left, err := t.queryStrings(ctx, `SELECT id FROM observations WHERE org_id = $1 AND incident_id = $2 LIMIT 1`, t.org, from)
	if err != nil {
		return false, 0, false, err
	}
	if len(left) > 0 {
		return isNew, int(arts), false, t.RebuildIncident(ctx, from, now)
	}
	t.exec(`DELETE FROM incident_nodes WHERE incident_id = $1 AND `+incidentOfOrg, from, t.org)
	t.exec(`DELETE FROM incident_artifacts WHERE incident_id = $1 AND `+incidentOfOrg, from, t.org)
	t.exec(`UPDATE incidents SET merged_into = $3, artifact_count = 0, node_count = 0, updated_at = $4,
		first_event_at = NULL, last_event_at = NULL WHERE org_id = $2 AND id = $1`, from, t.org, into, nanos(now))
	return isNew, int(arts), true, nil
}

func (t *corrTx) RollupsOf(ctx context.Context, node string) ([]correlate.Rollup, error) {
	return t.rollups(ctx, `SELECT `+rollupCols+` FROM rollups r, incidents i
		WHERE r.incident_id IN (SELECT incident_id FROM rollup_sources WHERE node_id = $1) AND r.org_id = $2 AND `+openRollup+`
		ORDER BY r.window_start, r.incident_id`, node, t.org)
}

func (t *corrTx) LeaveRollup(ctx context.Context, r correlate.Rollup, node, to string, now time.Time) ([]string, int, error) {
	t.exec(`SELECT 1 FROM incidents WHERE org_id = $1 AND id = $2 FOR UPDATE`, t.org, r.IncidentID)
	moved, err := t.queryStrings(ctx, `SELECT o.id FROM observation_nodes x JOIN observations o ON o.id = x.observation_id
		WHERE x.node_id = $1 AND x.key AND o.incident_id = $2 AND o.org_id = $3 ORDER BY o.created_at, o.id`, node, r.IncidentID, t.org)
	if err != nil {
		return nil, 0, err
	}
	var counts []int64
	err = t.query(ctx, func(rows pgx.Rows) error {
		var err error
		counts, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		return err
	}, `DELETE FROM rollup_sources WHERE incident_id = $1 AND node_id = $3 AND `+rollupOfOrg+` RETURNING count`, r.IncidentID, t.org, node)
	if err != nil {
		return nil, 0, err
	}
	count := 0
	for _, c := range counts {
		count += int(c)
	}
	t.exec(`UPDATE rollups SET sources = sources - $3, count = count - $4 WHERE incident_id = $1 AND org_id = $2`,
		r.IncidentID, t.org, len(counts), count)
	if len(moved) > 0 {
		// Their artifacts are their source's alone in the roll-up (one
		// line has one source): they leave with them.
		t.exec(`WITH d AS (DELETE FROM incident_artifacts WHERE incident_id = $1 AND `+incidentOfOrg+`
			AND artifact_id IN (SELECT artifact_id FROM observation_artifacts WHERE observation_id = ANY($3)) RETURNING 1)
			UPDATE incidents SET artifact_count = artifact_count - (SELECT COUNT(*) FROM d) WHERE id = $1 AND org_id = $2`,
			r.IncidentID, t.org, moved)
		t.exec(`UPDATE observations SET incident_id = $3 WHERE org_id = $2 AND id = ANY($1)`, moved, t.org, to)
		t.exec(`WITH ins AS (INSERT INTO incident_nodes (incident_id, node_id, key)
			SELECT $1, x.node_id, bool_or(x.key) FROM observation_nodes x WHERE x.observation_id = ANY($3) AND `+incidentOfOrg+`
			GROUP BY x.node_id
			ON CONFLICT (incident_id, node_id) DO UPDATE SET key = incident_nodes.key OR excluded.key RETURNING (xmax = 0) AS inserted)
			UPDATE incidents SET node_count = node_count + (SELECT COUNT(*) FROM ins WHERE inserted) WHERE id = $1 AND org_id = $2`,
			to, t.org, moved)
		t.exec(`WITH ins AS (INSERT INTO incident_artifacts (incident_id, artifact_id)
			SELECT DISTINCT $1, a.artifact_id FROM observation_artifacts a WHERE a.observation_id = ANY($3) AND `+incidentOfOrg+`
			ON CONFLICT DO NOTHING RETURNING 1)
			UPDATE incidents SET artifact_count = artifact_count + (SELECT COUNT(*) FROM ins) WHERE id = $1 AND org_id = $2`,
			to, t.org, moved)
		t.refresh(to, now, true, false)
	}
	// The source's node leaves; the context nodes its observations named
	// (the address they attacked) stay with the sources that remain.
	t.exec(`WITH d AS (DELETE FROM incident_nodes WHERE incident_id = $1 AND node_id = $3 AND `+incidentOfOrg+` RETURNING 1)
		UPDATE incidents SET node_count = node_count - (SELECT COUNT(*) FROM d) WHERE id = $1 AND org_id = $2`, r.IncidentID, t.org, node)
	t.refresh(r.IncidentID, now, false, false)
	return moved, count, nil
}

func (t *corrTx) SetRaisedBy(_ context.Context, incident string, why vigil.RaisedBy) error {
	b, err := json.Marshal(why)
	if err != nil {
		return err
	}
	t.exec(`UPDATE incidents SET raised_by = $3 WHERE id = $1 AND org_id = $2 AND raised_by IS NULL`, incident, t.org, string(b))
	return nil
}

func (t *corrTx) Node(ctx context.Context, id string) (vigil.Node, error) {
	var out []vigil.Node
	err := t.query(ctx, func(rows pgx.Rows) error {
		for rows.Next() {
			var n vigil.Node
			if err := rows.Scan(&n.ID, &n.Type, &n.Value); err != nil {
				return err
			}
			out = append(out, n)
		}
		return rows.Err()
	}, `SELECT id, type, value FROM nodes WHERE org_id = $1 AND id = $2`, t.org, id)
	if err != nil {
		return vigil.Node{}, err
	}
	if len(out) == 0 {
		return vigil.Node{}, vigil.NotFound("node")
	}
	return out[0], nil
}

// RollupSources returns a page of the sources of org's roll-up id,
// heaviest first, and how many it has.
func (s *Store) RollupSources(ctx context.Context, org, id string, p vigil.Page) ([]vigil.RollupSource, int, error) {
	out := []vigil.RollupSource{}
	var total int64
	// One snapshot for the count and the page.
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT sources FROM rollups WHERE incident_id = $1 AND org_id = $2`, id, org).Scan(&total); err != nil {
			return notFound(err, "roll-up")
		}
		rows, err := tx.Query(ctx, `SELECT n.id, n.type, n.value, s.count, s.first_at, s.last_at
			FROM (SELECT node_id FROM rollup_sources WHERE incident_id = $1 ORDER BY count DESC, node_id LIMIT $3 OFFSET $4) p
			JOIN rollup_sources s ON s.incident_id = $1 AND s.node_id = p.node_id
			JOIN nodes n ON n.id = p.node_id
			WHERE n.org_id = $2 ORDER BY s.count DESC, s.node_id`,
			append([]any{id, org}, pageArgs(p)...)...)
		if err != nil {
			return err
		}
		page, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (vigil.RollupSource, error) {
			var src vigil.RollupSource
			var count, first, last int64
			err := r.Scan(&src.Node.ID, &src.Node.Type, &src.Node.Value, &count, &first, &last)
			src.Count, src.FirstSeen, src.LastSeen = int(count), fromNanos(first), fromNanos(last)
			return src, err
		})
		out = append(out, page...)
		return err
	})
	if err != nil {
		return nil, 0, wrap("RollupSources", err)
	}
	return out, int(total), nil
}
