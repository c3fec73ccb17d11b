package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
)

// The writes of a growing burst (correlate.Tx.GrowObservation,
// GrowIncident) and of an incident taking an observation's nodes and
// artifacts: a few statements for each, their rows as JSON arrays.

func (t *corrTx) GrowObservation(ctx context.Context, g correlate.Growth) (int, int, error) {
	if !g.Context {
		// Its nodes now, the rest with the batch's other growths
		// (settle); the incident grows once a batch (GrowIncident).
		if err := t.growNodes(ctx, g); err != nil {
			return 0, 0, err
		}
		t.queueGrowth(g)
		return 0, 0, nil
	}
	if err := t.settle(ctx); err != nil {
		return 0, 0, err
	}
	added, err := t.growObservation(ctx, g)
	return added.nodes, added.artifacts, err
}

func (t *corrTx) growObservation(ctx context.Context, g correlate.Growth) (addedRefs, error) {
	var none addedRefs
	if err := t.growNodes(ctx, g); err != nil {
		return none, err
	}
	if err := t.writeGrowth(ctx, g); err != nil {
		return none, err
	}
	if !g.Context {
		return none, nil // the incident grows once a batch (GrowIncident)
	}
	// A roll-up: its nodes are context; counted, refreshed and its event
	// times widened once a batch (UpdateRollup).
	inc, err := t.addToIncident(ctx, g.IncidentID, g.NodeIDs, nil, g.ArtifactIDs)
	if err != nil {
		return none, err
	}
	t.pendEvents(g.IncidentID, inc.events)
	return inc, nil
}

// writeGrowth appends g's artifacts to its observation and writes its
// description, severity, rank and count, in two statements: one growth
// alone (settle writes many at once).
func (t *corrTx) writeGrowth(ctx context.Context, g correlate.Growth) error {
	// The observation lists at most MaxObservationArtifacts artifacts, in
	// the order they came, after those it has; the incident takes them
	// all. How many it has is kept with it (counted once for an
	// observation of an older build): counting up to 5,000 rows at every
	// batch of a long burst took a tenth of its growth. One statement for
	// the growth's artifacts, their ids as a JSON array: a statement per
	// artifact, and one to read the count, were a fifth of the
	// statements of a batch of Sigma matches on Windows events.
	added := 0
	if len(g.ArtifactIDs) > 0 {
		list, err := json.Marshal(g.ArtifactIDs)
		if err != nil {
			return err
		}
		res, err := t.tx.ExecContext(ctx, `INSERT INTO observation_artifacts (observation_id, artifact_id, pos)
			SELECT o.id, j.value, o.n + j.key FROM (SELECT id, COALESCE(artifact_count,
				(SELECT COUNT(*) FROM observation_artifacts WHERE observation_id = ?1)) AS n
				FROM observations WHERE id = ?1 AND +org_id = ?2) o, json_each(?3) j
			WHERE o.n + j.key < ?4 ORDER BY j.key ON CONFLICT DO NOTHING`,
			g.ObservationID, t.org, string(list), vigil.MaxObservationArtifacts)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		added = int(n)
	}
	_, err := t.tx.ExecContext(ctx, `UPDATE observations SET description = ?1, severity = ?2, title_rank = ?3, updated_at = ?4,
		artifact_count = COALESCE(artifact_count + ?5, (SELECT COUNT(*) FROM observation_artifacts WHERE observation_id = ?6))
		WHERE id = ?6 AND +org_id = ?7`,
		g.Description, g.Severity, g.TitleRank, nanos(g.Now), added, g.ObservationID, t.org)
	return err
}

func (t *corrTx) GrowIncident(ctx context.Context, g correlate.IncidentGrowth) error {
	if err := t.settle(ctx); err != nil {
		return err
	}
	added, err := t.addToIncident(ctx, g.IncidentID, g.NodeIDs, g.Keys, g.ArtifactIDs)
	if err != nil {
		return err
	}
	return t.refresh(ctx, g.IncidentID, g.At, true, added)
}

// growNodes adds the nodes of g new to its observation after the ones it
// has, in order, and makes a key of a node it has that g names as one,
// in one statement (their ids and roles as a JSON array): a growing burst
// brings the same few nodes at every batch, and a look-up of each was the
// commonest statement of a batch of Sigma matches on Windows events.
func (t *corrTx) growNodes(ctx context.Context, g correlate.Growth) error {
	if len(g.NodeIDs) == 0 || t.grown.has(g.ObservationID, g.NodeIDs, g.Keys) {
		return nil
	}
	refs := make([][2]any, len(g.NodeIDs))
	for i, id := range g.NodeIDs {
		refs[i] = [2]any{id, g.Keys[id]}
	}
	list, err := json.Marshal(refs)
	if err != nil {
		return err
	}
	_, err = t.tx.ExecContext(ctx, `INSERT INTO observation_nodes (observation_id, node_id, pos, key)
		SELECT ?1, j.value ->> '$[0]', (SELECT COALESCE(MAX(pos), -1) + 1 FROM observation_nodes WHERE observation_id = ?1) + j.key,
			j.value ->> '$[1]'
		FROM json_each(?3) j WHERE `+observationOfOrg+` ORDER BY j.key
		ON CONFLICT (observation_id, node_id) DO UPDATE SET key = 1 WHERE excluded.key = 1 AND key = 0`,
		g.ObservationID, t.org, string(list))
	if err == nil {
		t.grown.add(g.ObservationID, g.NodeIDs, g.Keys)
		t.tx.grown = append(t.tx.grown, g.ObservationID)
	}
	return err
}

// forgetGrown drops what grownNodes knows of observation id, now and if
// the transaction does not commit (a growth before it in the
// transaction may have taught it).
func (t *corrTx) forgetGrown(id string) {
	t.grown.forget([]string{id})
	t.tx.grown = append(t.tx.grown, id)
}

// addToIncident adds nodes (a key stays a key) and artifacts to an
// incident and returns how many of each were new to it, and the span of
// the new artifacts' timestamps. The nodes in one statement and the
// artifacts in another (their ids as JSON arrays), and the key nodes it
// had as context in a third: the incident a batch's growths write once
// takes some ten of each.
func (t *corrTx) addToIncident(ctx context.Context, incident string, nodeIDs []string, keys map[string]bool, artifactIDs []string) (addedRefs, error) {
	var added addedRefs
	if len(nodeIDs) > 0 {
		refs := make([][2]any, len(nodeIDs))
		var keyIDs []string
		for i, id := range nodeIDs {
			refs[i] = [2]any{id, keys[id]}
			if keys[id] {
				keyIDs = append(keyIDs, id)
			}
		}
		list, err := json.Marshal(refs)
		if err != nil {
			return added, err
		}
		res, err := t.tx.ExecContext(ctx, `INSERT INTO incident_nodes (incident_id, node_id, key)
			SELECT ?1, j.value ->> '$[0]', j.value ->> '$[1]' FROM json_each(?2) j WHERE true ORDER BY j.key ON CONFLICT DO NOTHING`,
			incident, string(list))
		if err != nil {
			return added, err
		}
		n, _ := res.RowsAffected()
		added.nodes = int(n)
		if len(keyIDs) > 0 && added.nodes < len(nodeIDs) {
			list, err := json.Marshal(keyIDs)
			if err != nil {
				return added, err
			}
			if _, err := t.tx.ExecContext(ctx, `UPDATE incident_nodes SET key = 1
				WHERE incident_id = ?1 AND key = 0 AND node_id IN (SELECT value FROM json_each(?2))`, incident, string(list)); err != nil {
				return added, err
			}
		}
	}
	if len(artifactIDs) == 0 {
		return added, nil
	}
	list, err := json.Marshal(artifactIDs)
	if err != nil {
		return added, err
	}
	// A row for each artifact new to the incident, with its time (NULL: no
	// artifact of the org).
	rows, err := t.tx.QueryContext(ctx, `INSERT INTO incident_artifacts (incident_id, artifact_id)
		SELECT ?1, value FROM json_each(?2) WHERE true ORDER BY key ON CONFLICT DO NOTHING
		RETURNING (SELECT ts FROM artifacts WHERE id = artifact_id AND +org_id = ?3)`, incident, string(list), t.org)
	if err != nil {
		return added, err
	}
	defer rows.Close()
	for rows.Next() {
		var ts sql.NullInt64
		if err := rows.Scan(&ts); err != nil {
			return added, err
		}
		if !ts.Valid {
			return added, sql.ErrNoRows
		}
		added.artifacts++
		added.events.add(ts.Int64)
	}
	return added, rows.Err()
}
