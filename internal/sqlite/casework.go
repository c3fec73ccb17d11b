package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/vigil-soc/vigil"
)

// UpdateIncidentCase applies u and records what changed in the
// incident's history.
func (s *Store) UpdateIncidentCase(ctx context.Context, org, id string, u vigil.CaseUpdate, actor string, now time.Time) (*vigil.Incident, error) {
	var out *vigil.Incident
	err := s.tx(ctx, func(tx *wtx) error {
		var assignee sql.NullString
		var tagsJSON string
		err := tx.QueryRowContext(ctx, `SELECT assignee, tags FROM incidents WHERE org_id = ? AND id = ?`, org, id).Scan(&assignee, &tagsJSON)
		if errors.Is(err, sql.ErrNoRows) {
			return vigil.NotFound("incident")
		}
		if err != nil {
			return err
		}
		var tags []string
		if err := json.Unmarshal([]byte(tagsJSON), &tags); err != nil {
			return err
		}
		ev := vigil.IncidentEvent{IncidentID: id, Actor: actor, At: now}
		if u.Assignee != nil && *u.Assignee != assignee.String {
			var to any
			if *u.Assignee != "" {
				to = *u.Assignee
			}
			if _, err := tx.ExecContext(ctx, `UPDATE incidents SET assignee = ?, updated_at = ? WHERE org_id = ? AND id = ?`,
				to, nanos(now), org, id); err != nil {
				return err
			}
			ev.Type, ev.Detail = vigil.EventAssigned, vigil.EventDetail{AssigneeFrom: &assignee.String, AssigneeTo: u.Assignee}
			if err := insertEvent(ctx, tx, org, ev); err != nil {
				return err
			}
		}
		if u.Tags != nil {
			next := vigil.NormalizeTags(u.Tags)
			if added, removed := vigil.TagDiff(tags, next); len(added)+len(removed) > 0 {
				b, err := json.Marshal(slices.Concat([]string{}, next))
				if err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `UPDATE incidents SET tags = ?, updated_at = ? WHERE org_id = ? AND id = ?`,
					string(b), nanos(now), org, id); err != nil {
					return err
				}
				ev.Type, ev.Detail = vigil.EventTagged, vigil.EventDetail{TagsAdded: added, TagsRemoved: removed}
				if err := insertEvent(ctx, tx, org, ev); err != nil {
					return err
				}
			}
		}
		out, err = getIncident(ctx, tx, org, id)
		if err != nil {
			return err
		}
		return vigil.Audit(ctx, org, vigil.AuditIncident, id, vigil.CaseFields(&assignee.String, tags), vigil.CaseFields(out.Assignee, out.Tags))
	})
	return out, wrap("UpdateIncidentCase", err)
}

const commentCols = `id, incident_id, author, body, created_at, updated_at`

func scanComment(row interface{ Scan(...any) error }) (*vigil.Comment, error) {
	var c vigil.Comment
	var created, updated int64
	if err := row.Scan(&c.ID, &c.IncidentID, &c.Author, &c.Body, &created, &updated); err != nil {
		return nil, err
	}
	c.CreatedAt, c.UpdatedAt = fromNanos(created), fromNanos(updated)
	return &c, nil
}

// CreateComment stores c and records it in the incident's history.
func (s *Store) CreateComment(ctx context.Context, org string, c *vigil.Comment) error {
	err := s.tx(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO incident_comments (id, org_id, incident_id, author, body, created_at, updated_at)
			SELECT ?, org_id, id, ?, ?, ?, ? FROM incidents WHERE org_id = ? AND id = ?`,
			c.ID, c.Author, c.Body, nanos(c.CreatedAt), nanos(c.UpdatedAt), org, c.IncidentID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmpErr(err, vigil.NotFound("incident"))
		}
		if err := insertEvent(ctx, tx, org, vigil.IncidentEvent{IncidentID: c.IncidentID, Type: vigil.EventCommented,
			Actor: c.Author, At: c.CreatedAt, Detail: vigil.EventDetail{CommentID: c.ID}}); err != nil {
			return err
		}
		return vigil.Audit(ctx, org, vigil.AuditComment, c.ID, nil, c)
	})
	return wrap("CreateComment", err)
}

// cmpErr returns err, or when it is nil, otherwise.
func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// GetComment returns one comment of an incident of org.
func (s *Store) GetComment(ctx context.Context, org, incident, id string) (*vigil.Comment, error) {
	c, err := scanComment(s.r.QueryRowContext(ctx, `SELECT `+commentCols+` FROM incident_comments
		WHERE org_id = ? AND incident_id = ? AND id = ?`, org, incident, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, vigil.NotFound("comment")
	}
	return c, wrap("GetComment", err)
}

// ListComments returns a page of an incident's comments, oldest first.
func (s *Store) ListComments(ctx context.Context, org, incident string, p vigil.Page) ([]*vigil.Comment, int, error) {
	var total int
	err := s.r.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM incident_comments WHERE incident_id = ?1 AND org_id = ?2)
		FROM incidents WHERE id = ?1 AND org_id = ?2`, incident, org).Scan(&total)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, vigil.NotFound("incident")
	}
	if err != nil {
		return nil, 0, wrap("ListComments", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+commentCols+` FROM incident_comments WHERE incident_id = ? AND org_id = ?
		ORDER BY created_at, id LIMIT ? OFFSET ?`, append([]any{incident, org}, pageArgs(p)...)...)
	if err != nil {
		return nil, 0, wrap("ListComments", err)
	}
	defer rows.Close()
	out := []*vigil.Comment{}
	for rows.Next() {
		c, err := scanComment(rows)
		if err != nil {
			return nil, 0, wrap("ListComments", err)
		}
		out = append(out, c)
	}
	return out, total, wrap("ListComments", rows.Err())
}

// UpdateComment replaces a comment's body.
func (s *Store) UpdateComment(ctx context.Context, org, incident, id, body string, now time.Time) (*vigil.Comment, error) {
	var out *vigil.Comment
	err := s.tx(ctx, func(tx *wtx) error {
		before, err := scanComment(tx.QueryRowContext(ctx, `SELECT `+commentCols+` FROM incident_comments
			WHERE org_id = ? AND incident_id = ? AND id = ?`, org, incident, id))
		if errors.Is(err, sql.ErrNoRows) {
			return vigil.NotFound("comment")
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE incident_comments SET body = ?, updated_at = ? WHERE org_id = ? AND incident_id = ? AND id = ?`,
			body, nanos(now), org, incident, id); err != nil {
			return err
		}
		c := *before
		c.Body, c.UpdatedAt = body, fromNanos(nanos(now))
		out = &c
		if err := insertEvent(ctx, tx, org, vigil.IncidentEvent{IncidentID: incident, Type: vigil.EventCommentEdited,
			Actor: vigil.ActorFrom(ctx), At: now, Detail: vigil.EventDetail{CommentID: id}}); err != nil {
			return err
		}
		return vigil.Audit(ctx, org, vigil.AuditComment, id, before, out)
	})
	return out, wrap("UpdateComment", err)
}

// DeleteComment removes a comment.
func (s *Store) DeleteComment(ctx context.Context, org, incident, id string) error {
	return wrap("DeleteComment", s.tx(ctx, func(tx *wtx) error {
		c, err := scanComment(tx.QueryRowContext(ctx, `DELETE FROM incident_comments WHERE org_id = ? AND incident_id = ? AND id = ?
			RETURNING `+commentCols, org, incident, id))
		if errors.Is(err, sql.ErrNoRows) {
			return vigil.NotFound("comment")
		}
		if err != nil {
			return err
		}
		if err := insertEvent(ctx, tx, org, vigil.IncidentEvent{IncidentID: incident, Type: vigil.EventCommentDeleted,
			Actor: vigil.ActorFrom(ctx), At: vigil.Now(), Detail: vigil.EventDetail{CommentID: id}}); err != nil {
			return err
		}
		return vigil.Audit(ctx, org, vigil.AuditComment, id, c, nil)
	}))
}
