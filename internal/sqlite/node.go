package sqlite

import (
	"context"

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
		err := tx.QueryRowContext(ctx, `INSERT INTO nodes (id, org_id, type, value, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (org_id, type, value) DO UPDATE SET type = excluded.type RETURNING id`,
			vigil.NewID(), org, r.Type, r.Value, now.UnixNano()).Scan(&n.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}
