package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/vigil-soc/vigil"
)

// UpsertNodes returns the nodes named by refs, creating the missing ones.
func (s *Store) UpsertNodes(ctx context.Context, org string, refs []vigil.NodeRef) ([]vigil.Node, error) {
	var out []vigil.Node
	err := s.tx(ctx, func(tx *wtx) error {
		var err error
		out, err = upsertNodes(ctx, tx, org, refs, vigil.Now())
		return err
	})
	return out, wrap("UpsertNodes", err)
}

func upsertNodes(ctx context.Context, tx *wtx, org string, refs []vigil.NodeRef, now interface{ UnixNano() int64 }) ([]vigil.Node, error) {
	out := make([]vigil.Node, 0, len(refs))
	for _, r := range refs {
		if !vigil.ValidNodeType(r.Type) || r.Value == "" {
			return nil, vigil.InvalidField("nodes", "unknown node type "+r.Type)
		}
		n := vigil.Node{OrgID: org, Type: r.Type, Value: r.Value}
		ref := nodeRef{org, r.Type, r.Value}
		if c, ok := tx.nodes[ref]; ok {
			// Looked up or created earlier in the transaction: it exists
			// (no transaction deletes a node it names).
			n.ID, n.Value = c.id, c.value
			out = append(out, n)
			continue
		}
		// Most nodes exist (a growing burst names the same ones at every
		// batch): a look-up first, which writes no page. The one writer
		// holds the transaction: a node it did not find is new.
		var err error
		if r.Type == vigil.NodeUser {
			// A name joined to an account by its SID is the account's node
			// (JoinAccounts).
			var id sql.NullString
			err = tx.QueryRowContext(ctx, `SELECT a.account, n.id FROM (SELECT COALESCE((SELECT account FROM account_aliases
				WHERE org_id = ?1 AND name = ?2), ?2) AS account) a LEFT JOIN nodes n ON n.org_id = ?1 AND n.type = 'User' AND n.value = a.account`,
				org, r.Value).Scan(&n.Value, &id)
			if n.ID = id.String; err == nil && !id.Valid {
				err = sql.ErrNoRows
			}
		} else {
			err = tx.QueryRowContext(ctx, `SELECT id FROM nodes WHERE org_id = ? AND type = ? AND value = ?`,
				org, r.Type, r.Value).Scan(&n.ID)
		}
		if errors.Is(err, sql.ErrNoRows) {
			n.ID, n.CreatedAt = vigil.NewID(), fromNanos(now.UnixNano())
			_, err = tx.ExecContext(ctx, `INSERT INTO nodes (id, org_id, type, value, created_at) VALUES (?, ?, ?, ?, ?)`,
				n.ID, org, r.Type, n.Value, now.UnixNano())
		}
		if err != nil {
			return nil, err
		}
		if tx.nodes == nil {
			tx.nodes = map[nodeRef]cachedNode{}
		}
		tx.nodes[ref] = cachedNode{n.ID, n.Value}
		out = append(out, n)
	}
	return out, nil
}

// JoinAccounts records the SIDs of accounts as org's events name them:
// the first name recorded for a SID is its account, and every other name
// recorded for it an alias of that account (the first SID it was recorded
// with decides), whose node upsertNodes gives from then on.
func (s *Store) JoinAccounts(ctx context.Context, org string, names []vigil.AccountSID) error {
	if len(names) == 0 {
		return nil
	}
	return wrap("JoinAccounts", s.tx(ctx, func(tx *wtx) error {
		for _, a := range names {
			if _, err := tx.ExecContext(ctx, `INSERT INTO account_sids (org_id, sid, account) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
				org, a.SID, a.Account); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO account_aliases (org_id, name, account)
				SELECT ?1, ?3, account FROM account_sids WHERE org_id = ?1 AND sid = ?2 AND account != ?3 ON CONFLICT DO NOTHING`,
				org, a.SID, a.Account)
			if err != nil {
				return err
			}
		}
		return nil
	}))
}

const nodeCols = `id, org_id, type, value, created_at`

func scanNode(row interface{ Scan(...any) error }) (*vigil.Node, error) {
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
	n, err := scanNode(s.r.QueryRowContext(ctx, `SELECT `+nodeCols+` FROM nodes WHERE org_id = ? AND id = ?`, org, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, vigil.NotFound("node")
	}
	return n, wrap("GetNode", err)
}

// nodeWhere builds the condition of f over org's nodes. Every form is
// served by the unique index (org_id, type, value): a type is its second
// column, an exact (type, value) a point look-up per pair, a prefix of a
// typed value a range of its third.
func nodeWhere(org string, f vigil.NodeFilter) (string, []any) {
	where := []string{"org_id = ?"}
	args := []any{org}
	if f.Type != "" {
		where = append(where, "type = ?")
		args = append(args, f.Type)
	}
	if len(f.Match) > 0 {
		var or []string
		for _, m := range f.Match {
			or = append(or, "(type = ? AND value = ?)")
			args = append(args, m.Type, m.Value)
		}
		where = append(where, "("+strings.Join(or, " OR ")+")")
	}
	if f.Prefix != "" {
		where = append(where, "value >= ?")
		args = append(args, f.Prefix)
		if end, ok := vigil.PrefixEnd(f.Prefix); ok {
			where = append(where, "value < ?")
			args = append(args, end)
		}
	}
	return strings.Join(where, " AND "), args
}

// ListNodes returns a page of org's nodes matching f, newest first.
func (s *Store) ListNodes(ctx context.Context, org string, f vigil.NodeFilter) ([]*vigil.Node, int, error) {
	cond, args := nodeWhere(org, f)
	// One snapshot for the count and the page.
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, wrap("ListNodes", err)
	}
	defer tx.Rollback()
	var total int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM nodes WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, wrap("ListNodes", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+nodeCols+` FROM nodes WHERE `+cond+
		` ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`, append(args, pageArgs(f.Page)...)...)
	if err != nil {
		return nil, 0, wrap("ListNodes", err)
	}
	defer rows.Close()
	out := []*vigil.Node{}
	for rows.Next() {
		n, err := scanNode(rows)
		if err != nil {
			return nil, 0, wrap("ListNodes", err)
		}
		out = append(out, n)
	}
	return out, total, wrap("ListNodes", rows.Err())
}
