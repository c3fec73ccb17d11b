package vigil

import (
	"context"
	"time"
)

// Types of incident events: the history of an incident and what the
// live stream and webhooks carry.
const (
	EventCreated       = "incident.created"
	EventGrew          = "incident.grew"
	EventMerged        = "incident.merged"
	EventStatusChanged = "incident.status_changed"
	EventClassified    = "incident.classified"
	EventAssigned      = "incident.assigned"
	EventTagged        = "incident.tagged"
	EventCommented     = "incident.commented"
	// An analyst edited or deleted a comment, or edited or deleted one of
	// the incident's observations.
	EventCommentEdited      = "incident.comment_edited"
	EventCommentDeleted     = "incident.comment_deleted"
	EventObservationUpdated = "incident.observation_updated"
	EventObservationDeleted = "incident.observation_deleted"
	// An entity's observations moved out of a roll-up into an incident
	// of its own (its risk crossed the org's threshold).
	EventObservationMoved = "incident.observation_moved"
)

// ActorSystem is the actor of the changes Vigil makes itself: a detector
// firing or growing, a rule classifying.
const ActorSystem = "system"

// IncidentEvent is one change of an incident, recorded in the transaction
// that made it.
type IncidentEvent struct {
	// ID orders the events of one incident.
	ID int64 `json:"id"`
	// Seq is the event's position in its org's stream: the order in
	// which events became visible, by which a reader resumes.
	Seq        int64  `json:"-"`
	IncidentID string `json:"incident_id"`
	Type       string `json:"type"`
	// Actor is the sub of the token that made the change, or "system".
	Actor string `json:"actor"`
	// Via names the detector or rule behind a change by the system.
	Via string    `json:"via,omitempty"`
	At  time.Time `json:"at"`
	// ArtifactCount is the incident's artifact count after the change.
	ArtifactCount int         `json:"artifact_count"`
	Detail        EventDetail `json:"detail"`
}

// EventDetail is what changed; each type fills its own fields.
type EventDetail struct {
	// created, grew: the observation that opened or grew the incident;
	// observation_updated, observation_deleted: the one edited or deleted.
	ObservationID string `json:"observation_id,omitempty"`
	// merged: on the incident that was merged away, where it went; on
	// the incident that took it, where it came from.
	MergedInto string `json:"merged_into,omitempty"`
	MergedFrom string `json:"merged_from,omitempty"`
	// observation_moved: on the roll-up, where the observation went; on
	// the incident that took it, where it came from.
	MovedTo   string `json:"moved_to,omitempty"`
	MovedFrom string `json:"moved_from,omitempty"`
	// status_changed.
	FromStatus     int     `json:"from_status,omitempty"`
	ToStatus       int     `json:"to_status,omitempty"`
	Classification *string `json:"classification,omitempty"`
	// classified: the rule that decided (none: back to the computed
	// severity) and the severity before and after.
	Rule         *RuleRef `json:"rule,omitempty"`
	SeverityFrom string   `json:"severity_from,omitempty"`
	SeverityTo   string   `json:"severity_to,omitempty"`
	// assigned: the sub before and after ("" is nobody).
	AssigneeFrom *string `json:"assignee_from,omitempty"`
	AssigneeTo   *string `json:"assignee_to,omitempty"`
	// tagged: the tags added and removed.
	TagsAdded   []string `json:"tags_added,omitempty"`
	TagsRemoved []string `json:"tags_removed,omitempty"`
	// commented, comment_edited, comment_deleted.
	CommentID string `json:"comment_id,omitempty"`
}

type actorKey struct{}

// WithActor returns ctx carrying the actor (a token's sub) on whose behalf
// the store writes, so that the history of what it changes names them.
func WithActor(ctx context.Context, sub string) context.Context {
	return context.WithValue(ctx, actorKey{}, sub)
}

// ActorFrom returns the actor ctx carries, or ActorSystem.
func ActorFrom(ctx context.Context) string {
	if s, ok := ctx.Value(actorKey{}).(string); ok && s != "" {
		return s
	}
	return ActorSystem
}
