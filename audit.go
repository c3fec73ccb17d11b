package vigil

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Resource types of audit entries: what a write through the API changed.
const (
	AuditObservation        = "observation"
	AuditIncident           = "incident"
	AuditComment            = "comment"
	AuditClassificationRule = "classification_rule"
	AuditDetectionRule      = "detection_rule"
	AuditStarterRule        = "starter_rule"
	AuditSuppression        = "suppression"
	AuditRole               = "role"
	AuditAPIKey             = "api_key"
	AuditSettings           = "enrichment_settings"
	AuditWebhook            = "webhook"
)

// AuditResourceTypes lists every resource type an audit entry may name.
var AuditResourceTypes = []string{AuditObservation, AuditIncident, AuditComment, AuditClassificationRule,
	AuditDetectionRule, AuditStarterRule, AuditSuppression, AuditRole, AuditAPIKey, AuditSettings, AuditWebhook}

// StarterRuleFields is what the audit log records of an org's switch of
// a starter rule: enabled, or null while the org has not set it (the
// rule's default holds).
func StarterRuleFields(enabled *bool) map[string]any {
	if enabled == nil {
		return map[string]any{"enabled": nil}
	}
	return map[string]any{"enabled": *enabled}
}

// Bounds of an audit entry: a field's value larger than
// MaxAuditFieldBytes is recorded as {"omitted_bytes": n}, so that one
// write never makes an entry larger than the resource's own limits allow;
// the actor and path are cut to MaxAuditTextBytes.
const (
	MaxAuditFieldBytes = 64 << 10
	MaxAuditTextBytes  = 1024
)

// AuditEntry is one change made by a write through the API, recorded in
// the transaction that made it.
type AuditEntry struct {
	// ID orders the entries of an org: a later entry has a greater ID.
	ID    int64  `json:"id"`
	OrgID string `json:"org_id"`
	// Actor is the sub of the token, or "api-key:<id>" for an API key.
	Actor  string    `json:"actor"`
	At     time.Time `json:"at"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
	// ResourceType is one of AuditResourceTypes; ResourceID names the
	// resource in it (the settings: the org's id).
	ResourceType string `json:"resource_type"`
	ResourceID   string `json:"resource_id"`
	// Before and After hold the fields the write changed, each as the
	// resource's JSON shows it: Before is null for a creation, After null
	// for a deletion. Secrets are recorded as Redacted, never their value.
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// AuditFilter narrows a listing of an org's audit entries; zero values
// match everything. From and To bound At as the time ranges of other
// lists do: From inclusive, To exclusive.
type AuditFilter struct {
	Actor        string
	ResourceType string
	ResourceID   string
	From, To     time.Time
	Page
}

// AuditStore reads the audit log. Entries are written by the write
// transactions that make the changes, from the AuditTrail of their
// context; nothing updates or deletes them but retention.
type AuditStore interface {
	// ListAudit returns a page of org's matching entries, newest first
	// (by ID descending), and the count of all matches.
	ListAudit(ctx context.Context, org string, f AuditFilter) ([]*AuditEntry, int, error)
	// PruneAudit deletes, in every org, the entries recorded before t and
	// returns how many it deleted.
	PruneAudit(ctx context.Context, before time.Time) (int, error)
}

// AuditTrail is the audit of one API request: who made it and how, and
// the changes noted by the write transaction running for it, which the
// store records as that transaction commits. A nil *AuditTrail notes
// nothing: writes made by Vigil itself, outside a request, are not
// audited.
type AuditTrail struct {
	Actor, Method, Path string
	At                  time.Time
	pending             []AuditEntry
}

type auditKey struct{}

// WithAuditTrail returns ctx carrying t, so that the writes made for ctx
// note their changes in it.
func WithAuditTrail(ctx context.Context, t *AuditTrail) context.Context {
	return context.WithValue(ctx, auditKey{}, t)
}

// AuditTrailFrom returns the trail ctx carries, or nil.
func AuditTrailFrom(ctx context.Context) *AuditTrail {
	t, _ := ctx.Value(auditKey{}).(*AuditTrail)
	return t
}

// Begin forgets what an earlier transaction noted and did not record
// (rolled back, or run again after a deadlock): stores call it as a
// write transaction starts.
func (t *AuditTrail) Begin() {
	if t != nil {
		t.pending = t.pending[:0]
	}
}

// Take returns the entries noted since Begin and forgets them: stores
// insert them in the transaction just before it commits.
func (t *AuditTrail) Take() []AuditEntry {
	if t == nil || len(t.pending) == 0 {
		return nil
	}
	out := t.pending
	t.pending = nil
	return out
}

// Audit notes in ctx's trail that the transaction running for it changes
// resource (typ, id) of org from before to after, each a value as the API
// shows the resource (nil: it did not exist before, or no longer does).
// Only the fields that differ are kept (updated_at, the time of the
// entry itself, is left out); a change of none notes nothing. Without a
// trail in ctx it does nothing.
func Audit(ctx context.Context, org, typ, id string, before, after any) error {
	t := AuditTrailFrom(ctx)
	if t == nil {
		return nil
	}
	b, a, err := AuditDiff(before, after)
	if err != nil {
		return fmt.Errorf("audit %s %s: %w", typ, id, err)
	}
	if b == nil && a == nil {
		return nil
	}
	t.pending = append(t.pending, AuditEntry{OrgID: org, Actor: clip(t.Actor), At: t.At, Method: t.Method, Path: clip(t.Path),
		ResourceType: typ, ResourceID: id, Before: b, After: a})
	return nil
}

// AuditDiff returns the fields of before and after (JSON objects once
// marshalled; nil is none) whose values differ, as two JSON objects, with
// secrets redacted (RedactSecrets) and large values omitted. Both are nil
// when nothing differs; one is nil when its side is.
func AuditDiff(before, after any) (b, a json.RawMessage, err error) {
	bf, err := auditFields(before)
	if err != nil {
		return nil, nil, err
	}
	af, err := auditFields(after)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range bf {
		if w, ok := af[k]; ok && bytes.Equal(v, w) {
			delete(bf, k)
			delete(af, k)
		}
	}
	if before != nil && after != nil && len(bf) == 0 && len(af) == 0 {
		return nil, nil, nil
	}
	if before != nil {
		if b, err = auditObject(bf); err != nil {
			return nil, nil, err
		}
	}
	if after != nil {
		if a, err = auditObject(af); err != nil {
			return nil, nil, err
		}
	}
	return b, a, nil
}

// auditFields returns v's JSON object fields but updated_at.
func auditFields(v any) (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if v == nil {
		return m, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	delete(m, "updated_at")
	return m, nil
}

// auditObject marshals fields with secrets redacted and large values
// omitted.
func auditObject(fields map[string]json.RawMessage) (json.RawMessage, error) {
	out := make(map[string]any, len(fields))
	for k, raw := range fields {
		if len(raw) > MaxAuditFieldBytes {
			out[k] = map[string]int{"omitted_bytes": len(raw)}
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		out[k] = RedactSecrets(map[string]any{k: v}).(map[string]any)[k]
	}
	return json.Marshal(out)
}

// RedactSecrets returns v, a decoded JSON value, with the value of every
// object member whose name says it holds a credential (one containing
// secret, password or token; key, hash, credentials, authorization,
// encoded, or a name ending in _key or _hash) replaced by Redacted, at
// any depth. Flags and numbers are kept (a node's "key": true says it is
// a key node, not a credential). A URL (a member named url or ending in
// _url) is kept as RedactURL shows it: without user info or query values,
// where a webhook's receiver or a feed carries its credentials.
func RedactSecrets(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, w := range x {
			switch w.(type) {
			case bool, float64, nil:
				continue
			}
			n := strings.ToLower(k)
			switch u, isString := w.(string); {
			case secretField(k):
				x[k] = Redacted
			case isString && (n == "url" || strings.HasSuffix(n, "_url")):
				x[k] = RedactURL(u)
			default:
				x[k] = RedactSecrets(w)
			}
		}
	case []any:
		for i, w := range x {
			x[i] = RedactSecrets(w)
		}
	}
	return v
}

// secretField reports whether a member named name holds a credential.
func secretField(name string) bool {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "secret"), strings.Contains(n, "password"), strings.Contains(n, "token"):
		return true
	case strings.HasSuffix(n, "_key"), strings.HasSuffix(n, "_hash"):
		return true
	}
	switch n {
	case "key", "hash", "credentials", "authorization", "encoded":
		return true
	}
	return false
}

// clip bounds s to MaxAuditTextBytes of valid UTF-8.
func clip(s string) string {
	if len(s) <= MaxAuditTextBytes {
		return s
	}
	return strings.ToValidUTF8(s[:MaxAuditTextBytes], "")
}
