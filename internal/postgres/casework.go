package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-soc/vigil"
)

// UpdateIncidentCase applies u and records what changed in the
// incident's history, the incident locked first so that each change
// records what it really moved from.
func (s *Store) UpdateIncidentCase(ctx context.Context, org, id string, u vigil.CaseUpdate, actor string, now time.Time) (*vigil.Incident, error) {
	var out *vigil.Incident
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var assignee *string
		var tags []string
		err := tx.QueryRow(ctx, `SELECT assignee, tags FROM incidents WHERE org_id = $1 AND id = $2 FOR UPDATE`, org, id).Scan(&assignee, &tags)
		if err != nil {
			return notFound(err, "incident")
		}
		from := ""
		if assignee != nil {
			from = *assignee
		}
		b := &pgx.Batch{}
		ev := vigil.IncidentEvent{IncidentID: id, Actor: actor, At: now}
		if u.Assignee != nil && *u.Assignee != from {
			var to *string
			if *u.Assignee != "" {
				to = u.Assignee
			}
			b.Queue(`UPDATE incidents SET assignee = $1, updated_at = $2 WHERE org_id = $3 AND id = $4`, to, nanos(now), org, id)
			ev.Type, ev.Detail = vigil.EventAssigned, vigil.EventDetail{AssigneeFrom: &from, AssigneeTo: u.Assignee}
			if err := queueEvent(b, org, ev); err != nil {
				return err
			}
		}
		if u.Tags != nil {
			next := vigil.NormalizeTags(u.Tags)
			if added, removed := vigil.TagDiff(tags, next); len(added)+len(removed) > 0 {
				b.Queue(`UPDATE incidents SET tags = $1, updated_at = $2 WHERE org_id = $3 AND id = $4`, append([]string{}, next...), nanos(now), org, id)
				ev.Type, ev.Detail = vigil.EventTagged, vigil.EventDetail{TagsAdded: added, TagsRemoved: removed}
				if err := queueEvent(b, org, ev); err != nil {
					return err
				}
			}
		}
		if err := sendBatch(ctx, tx, b); err != nil {
			return err
		}
		out, err = getIncident(ctx, tx, org, id)
		if err != nil {
			return err
		}
		return vigil.Audit(ctx, org, vigil.AuditIncident, id, vigil.CaseFields(assignee, tags), vigil.CaseFields(out.Assignee, out.Tags))
	})
	return out, wrap("UpdateIncidentCase", err)
}

// queueEvent queues the insert of ev of org.
func queueEvent(b *pgx.Batch, org string, ev vigil.IncidentEvent) error {
	args, err := eventArgs(org, ev)
	if err != nil {
		return err
	}
	b.Queue(insertEventSQL, args...)
	return nil
}

const commentCols = `id, incident_id, author, body, created_at, updated_at`

func scanComment(row pgx.Row) (*vigil.Comment, error) {
	var c vigil.Comment
	var created, updated int64
	if err := row.Scan(&c.ID, &c.IncidentID, &c.Author, &c.Body, &created, &updated); err != nil {
		return nil, err
	}
	c.CreatedAt, c.UpdatedAt = fromNanos(created), fromNanos(updated)
	return &c, nil
}

// CreateComment stores c and records it in the incident's history, in
// one statement that locks the incident first, as every change of it.
func (s *Store) CreateComment(ctx context.Context, org string, c *vigil.Comment) error {
	args, err := eventArgs(org, vigil.IncidentEvent{IncidentID: c.IncidentID, Type: vigil.EventCommented, Actor: c.Author,
		At: c.CreatedAt, Detail: vigil.EventDetail{CommentID: c.ID}})
	if err != nil {
		return wrap("CreateComment", err)
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		var n int
		err := tx.QueryRow(ctx, `WITH c AS (INSERT INTO incident_comments (id, org_id, incident_id, author, body, created_at, updated_at)
				SELECT $8, org_id, id, $4, $9, $6, $10 FROM incidents WHERE id = $1 AND org_id = $2 FOR UPDATE RETURNING incident_id),
			e AS (INSERT INTO incident_events (org_id, incident_id, type, actor, via, at, artifact_count, detail)
				SELECT i.org_id, i.id, $3, $4, $5, $6, i.artifact_count, $7 FROM incidents i JOIN c ON c.incident_id = i.id WHERE i.org_id = $2)
			SELECT COUNT(*) FROM c`, append(args, c.ID, c.Body, nanos(c.UpdatedAt))...).Scan(&n)
		if err != nil {
			return err
		}
		if n == 0 {
			return vigil.NotFound("incident")
		}
		return vigil.Audit(ctx, org, vigil.AuditComment, c.ID, nil, c)
	})
	return wrap("CreateComment", err)
}

// GetComment returns one comment of an incident of org.
func (s *Store) GetComment(ctx context.Context, org, incident, id string) (*vigil.Comment, error) {
	c, err := scanComment(s.pool.QueryRow(ctx, `SELECT `+commentCols+` FROM incident_comments
		WHERE org_id = $1 AND incident_id = $2 AND id = $3`, org, incident, id))
	return c, wrap("GetComment", notFound(err, "comment"))
}

// ListComments returns a page of an incident's comments, oldest first.
func (s *Store) ListComments(ctx context.Context, org, incident string, p vigil.Page) ([]*vigil.Comment, int, error) {
	var total int
	err := s.pool.QueryRow(ctx, `SELECT (SELECT COUNT(*) FROM incident_comments WHERE incident_id = $1 AND org_id = $2)
		FROM incidents WHERE id = $1 AND org_id = $2`, incident, org).Scan(&total)
	if err != nil {
		return nil, 0, wrap("ListComments", notFound(err, "incident"))
	}
	rows, err := s.pool.Query(ctx, `SELECT `+commentCols+` FROM incident_comments WHERE incident_id = $1 AND org_id = $2
		ORDER BY created_at, id LIMIT $3 OFFSET $4`, append([]any{incident, org}, pageArgs(p)...)...)
	if err != nil {
		return nil, 0, wrap("ListComments", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*vigil.Comment, error) { return scanComment(r) })
	if out == nil {
		out = []*vigil.Comment{}
	}
	return out, total, wrap("ListComments", err)
}

// UpdateComment replaces a comment's body.
func (s *Store) UpdateComment(ctx context.Context, org, incident, id, body string, now time.Time) (*vigil.Comment, error) {
	var out *vigil.Comment
	err := s.tx(ctx, func(tx pgx.Tx) error {
		before, err := lockComment(ctx, tx, org, incident, id)
		if err != nil {
			return err
		}
		c, err := scanComment(tx.QueryRow(ctx, `UPDATE incident_comments SET body = $1, updated_at = $2
			WHERE org_id = $3 AND incident_id = $4 AND id = $5 RETURNING `+commentCols, body, nanos(now), org, incident, id))
		if err != nil {
			return err
		}
		if err := commentEvent(ctx, tx, org, incident, id, vigil.EventCommentEdited, now); err != nil {
			return err
		}
		out = c
		return vigil.Audit(ctx, org, vigil.AuditComment, id, before, c)
	})
	return out, wrap("UpdateComment", err)
}

// lockComment locks incident of org, as every change of it does first,
// and returns its comment id; ENOTFOUND when there is none.
func lockComment(ctx context.Context, tx pgx.Tx, org, incident, id string) (*vigil.Comment, error) {
	if _, err := tx.Exec(ctx, `SELECT 1 FROM incidents WHERE org_id = $1 AND id = $2 FOR UPDATE`, org, incident); err != nil {
		return nil, err
	}
	c, err := scanComment(tx.QueryRow(ctx, `SELECT `+commentCols+` FROM incident_comments
		WHERE org_id = $1 AND incident_id = $2 AND id = $3`, org, incident, id))
	return c, notFound(err, "comment")
}

// commentEvent records in incident's history that the request's actor
// changed its comment id (typ).
func commentEvent(ctx context.Context, tx pgx.Tx, org, incident, id, typ string, now time.Time) error {
	args, err := eventArgs(org, vigil.IncidentEvent{IncidentID: incident, Type: typ, Actor: vigil.ActorFrom(ctx), At: now,
		Detail: vigil.EventDetail{CommentID: id}})
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, insertEventSQL, args...)
	return err
}

// DeleteComment removes a comment.
func (s *Store) DeleteComment(ctx context.Context, org, incident, id string) error {
	return wrap("DeleteComment", s.tx(ctx, func(tx pgx.Tx) error {
		c, err := lockComment(ctx, tx, org, incident, id)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM incident_comments WHERE org_id = $1 AND incident_id = $2 AND id = $3`, org, incident, id); err != nil {
			return err
		}
		if err := commentEvent(ctx, tx, org, incident, id, vigil.EventCommentDeleted, vigil.Now()); err != nil {
			return err
		}
		return vigil.Audit(ctx, org, vigil.AuditComment, id, c, nil)
	}))
}
