package postgres

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

// UpsertNodes returns the nodes named by refs, creating the missing ones.
func (s *Store) UpsertNodes(ctx context.Context, org string, refs []vigil.NodeRef) ([]vigil.Node, error) {
	var out []vigil.Node
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = upsertNodes(ctx, tx, org, refs, vigil.Now())
		return err
	})
	return out, wrap("UpsertNodes", err)
}

type nodeKey struct{ typ, value string }

// upsertNodes inserts the nodes of refs that do not exist (ON CONFLICT DO
// NOTHING: an existing node is not rewritten, which would leave a dead row
// version behind on every detection) and then reads them all back. The
// read is a statement of its own so that its snapshot sees a node that a
// concurrent transaction committed while the insert waited on it.
func upsertNodes(ctx context.Context, tx pgx.Tx, org string, refs []vigil.NodeRef, now time.Time) ([]vigil.Node, error) {
	for _, r := range refs {
		if !vigil.ValidNodeType(r.Type) || r.Value == "" {
			return nil, vigil.InvalidField("nodes", "unknown node type "+r.Type)
		}
	}
	out := make([]vigil.Node, 0, len(refs))
	if len(refs) == 0 {
		return out, nil
	}
	// New IDs are drawn in the order of refs, as the SQLite store does, so
	// that nodes created together list in that order (by created_at, id).
	newID := map[nodeKey]string{}
	var keys []nodeKey
	for _, r := range refs {
		k := nodeKey{r.Type, r.Value}
		if _, ok := newID[k]; !ok {
			newID[k] = vigil.NewID()
			keys = append(keys, k)
		}
	}
	// Inserting in one order everywhere keeps two concurrent upserts of
	// the same nodes from deadlocking on each other's index entries.
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].typ != keys[j].typ {
			return keys[i].typ < keys[j].typ
		}
		return keys[i].value < keys[j].value
	})
	ids, types, values := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		ids[i], types[i], values[i] = newID[k], k.typ, k.value
	}
	if _, err := tx.Exec(ctx, `INSERT INTO nodes (id, org_id, type, value, created_at)
		SELECT id, $1, type, value, $5 FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS t(id, type, value, n)
		ORDER BY n
		ON CONFLICT (org_id, type, value) DO NOTHING`, org, ids, types, values, nanos(now)); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, `SELECT n.id, n.type, n.value FROM nodes n
		JOIN unnest($2::text[], $3::text[]) AS t(type, value) ON n.type = t.type AND n.value = t.value
		WHERE n.org_id = $1`, org, types, values)
	if err != nil {
		return nil, err
	}
	found := map[nodeKey]string{}
	for rows.Next() {
		var id string
		var k nodeKey
		if err := rows.Scan(&id, &k.typ, &k.value); err != nil {
			rows.Close()
			return nil, err
		}
		found[k] = id
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, r := range refs {
		id, ok := found[nodeKey{r.Type, r.Value}]
		if !ok {
			// Every ref was inserted or existed, and nodes are never deleted.
			return nil, fmt.Errorf("node %s %q missing after upsert", r.Type, r.Value)
		}
		out = append(out, vigil.Node{ID: id, OrgID: org, Type: r.Type, Value: r.Value})
	}
	return out, nil
}
