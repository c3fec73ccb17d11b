package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

// UpsertNodes returns the nodes named by refs, creating the missing ones.
func (s *Store) UpsertNodes(ctx context.Context, org string, refs []vigil.NodeRef) ([]vigil.Node, error) {
	var out []vigil.Node
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = (&corrTx{tx: tx, org: org, b: &pgx.Batch{}}).UpsertNodes(ctx, refs, vigil.Now())
		return err
	})
	return out, wrap("UpsertNodes", err)
}

type nodeKey struct{ typ, value string }

// UpsertNodes inserts the nodes of refs that do not exist (ON CONFLICT DO
// NOTHING: an existing node is not rewritten, which would leave a dead row
// version behind on every detection) and then reads them all back, in one
// round trip with the writes queued before. The read is a statement of its
// own so that its snapshot sees a node that a concurrent transaction
// committed while the insert waited on it.
func (t *corrTx) UpsertNodes(ctx context.Context, refs []vigil.NodeRef, now time.Time) ([]vigil.Node, error) {
	org := t.org
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
	// A name joined to an account by its SID is the account's node
	// (JoinAccounts): two refs may name one node.
	t.exec(`INSERT INTO nodes (id, org_id, type, value, created_at)
		SELECT t.id, $1, t.type, COALESCE(a.account, t.value) AS v, $5
		FROM unnest($2::text[], $3::text[], $4::text[]) AS t(id, type, value)
		LEFT JOIN account_aliases a ON a.org_id = $1 AND t.type = 'User' AND a.name = t.value
		ORDER BY t.type, v
		ON CONFLICT (org_id, type, value) DO NOTHING`, org, ids, types, values, nanos(now))
	type node struct{ id, value string }
	found := map[nodeKey]node{} // by ref
	err := t.query(ctx, func(rows pgx.Rows) error {
		for rows.Next() {
			var k nodeKey
			var n node
			if err := rows.Scan(&n.id, &n.value, &k.typ, &k.value); err != nil {
				return err
			}
			found[k] = n
		}
		return rows.Err()
	}, `SELECT n.id, n.value, t.type, t.value FROM unnest($2::text[], $3::text[]) AS t(type, value)
		LEFT JOIN account_aliases a ON a.org_id = $1 AND t.type = 'User' AND a.name = t.value
		JOIN nodes n ON n.org_id = $1 AND n.type = t.type AND n.value = COALESCE(a.account, t.value)`, org, types, values)
	if err != nil {
		return nil, err
	}
	for _, r := range refs {
		f, ok := found[nodeKey{r.Type, r.Value}]
		if !ok {
			// Every ref was inserted or existed, and nodes are never deleted.
			return nil, fmt.Errorf("node %s %q missing after upsert", r.Type, r.Value)
		}
		n := vigil.Node{ID: f.id, OrgID: org, Type: r.Type, Value: f.value}
		if f.id == newID[nodeKey{r.Type, r.Value}] {
			n.CreatedAt = now // this transaction's insert
		}
		out = append(out, n)
	}
	return out, nil
}

// JoinAccounts records the SIDs of accounts as org's events name them:
// the first name recorded for a SID is its account, and every other name
// recorded for it an alias of that account (the first SID it was recorded
// with decides), whose node UpsertNodes gives from then on. Two workers
// recording one SID at once agree: the second insert waits for the
// first and reads its account.
func (s *Store) JoinAccounts(ctx context.Context, org string, names []vigil.AccountSID) error {
	if len(names) == 0 {
		return nil
	}
	return wrap("JoinAccounts", s.tx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, a := range names {
			b.Queue(`INSERT INTO account_sids (org_id, sid, account) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, org, a.SID, a.Account)
			b.Queue(`INSERT INTO account_aliases (org_id, name, account)
				SELECT $1, $3, account FROM account_sids WHERE org_id = $1 AND sid = $2 AND account <> $3 ON CONFLICT DO NOTHING`,
				org, a.SID, a.Account)
		}
		return tx.SendBatch(ctx, b).Close()
	}))
}

const nodeCols = `id, org_id, type, value, created_at`

func scanNode(row pgx.Row) (*vigil.Node, error) {
	var n vigil.Node
	var created int64
	if err := row.Scan(&n.ID, &n.OrgID, &n.Type, &n.Value, &created); err != nil {
		return nil, err
	}
	n.CreatedAt = fromNanos(created)
	return &n, nil
}

// GetNode returns one node of org.
func (s *Store) GetNode(ctx context.Context, org, id string) (*vigil.Node, error) {
	n, err := scanNode(s.pool.QueryRow(ctx, `SELECT `+nodeCols+` FROM nodes WHERE org_id = $1 AND id = $2`, org, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, vigil.NotFound("node")
	}
	return n, wrap("GetNode", err)
}

// nodeConds builds the condition of f over org's nodes. Every form is
// served by the unique index (org_id, type, value): a type is its second
// column, an exact (type, value) a point look-up per pair (a BitmapOr), a
// prefix a range of its third (the columns compare bytes, COLLATE "C").
func nodeConds(org string, f vigil.NodeFilter) conds {
	var c conds
	c.add("org_id = ?", org)
	if f.Type != "" {
		c.add("type = ?", f.Type)
	}
	if len(f.Match) > 0 {
		or := make([]string, 0, len(f.Match))
		for _, m := range f.Match {
			c.args = append(c.args, m.Type, m.Value)
			or = append(or, fmt.Sprintf("(type = $%d AND value = $%d)", len(c.args)-1, len(c.args)))
		}
		c.where += " AND (" + strings.Join(or, " OR ") + ")"
	}
	if f.Prefix != "" {
		c.add("value >= ?", f.Prefix)
		if end, ok := vigil.PrefixEnd(f.Prefix); ok {
			c.add("value < ?", end)
		}
	}
	return c
}

// ListNodes returns a page of org's nodes matching f, newest first.
func (s *Store) ListNodes(ctx context.Context, org string, f vigil.NodeFilter) ([]*vigil.Node, int, error) {
	c := nodeConds(org, f)
	limit, pageArgs := c.page(f.Page)
	var total int
	out := []*vigil.Node{}
	// One snapshot for the count and the page.
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM nodes WHERE `+c.where, c.args...).Scan(&total); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+nodeCols+` FROM nodes WHERE `+c.where+` ORDER BY created_at DESC, id DESC`+limit, pageArgs...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			n, err := scanNode(rows)
			if err != nil {
				return err
			}
			out = append(out, n)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, wrap("ListNodes", err)
	}
	return out, total, nil
}
