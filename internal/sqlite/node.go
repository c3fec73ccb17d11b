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
		if id, ok := tx.nodes[ref]; ok {
			// Looked up or created earlier in the transaction: it exists
			// (no transaction deletes a node it names).
			n.ID = id
			out = append(out, n)
			continue
		}
		// Most nodes exist (a growing burst names the same ones at every
		// batch): a look-up first, which writes no page. The one writer
		// holds the transaction: a node it did not find is new.
		err := tx.QueryRowContext(ctx, `SELECT id FROM nodes WHERE org_id = ? AND type = ? AND value = ?`,
			org, r.Type, r.Value).Scan(&n.ID)
		if errors.Is(err, sql.ErrNoRows) {
			n.ID, n.CreatedAt = vigil.NewID(), fromNanos(now.UnixNano())
			_, err = tx.ExecContext(ctx, `INSERT INTO nodes (id, org_id, type, value, created_at) VALUES (?, ?, ?, ?, ?)`,
				n.ID, org, r.Type, r.Value, now.UnixNano())
		}
		if err != nil {
			return nil, err
		}
		if tx.nodes == nil {
			tx.nodes = map[nodeRef]string{}
		}
		tx.nodes[ref] = n.ID
		out = append(out, n)
	}
	return out, nil
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
