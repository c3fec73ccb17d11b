package api

import (
	"net/http"
	"slices"
	"strings"

	"github.com/vigil-soc/vigil"
)

// The audit log: an addition to the contract. Every write through the API
// that changes something is recorded by the store in the transaction that
// makes the change (vigil.AuditTrail); GET /v1/audit reads the org's
// entries, newest first, with admin. Nothing in the API updates or
// deletes them: retention (vigil serve --audit-retention-days) does.

// withAudit returns r carrying the audit trail of p's write: what the
// store's transactions change for it is recorded as done by p.
func (s *Server) withAudit(r *http.Request, p Principal) *http.Request {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return r
	}
	return r.WithContext(vigil.WithAuditTrail(r.Context(), &vigil.AuditTrail{Actor: actorName(p.Subject),
		Method: r.Method, Path: r.URL.Path, At: s.now()}))
}

func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r.URL.Query())
	f := vigil.AuditFilter{Actor: q.str("actor"), ResourceType: q.str("resource_type"), ResourceID: q.str("resource_id")}
	if len(f.Actor) > vigil.MaxAuditTextBytes {
		q.bad("actor", "must be at most 1024 bytes")
	}
	if f.ResourceType != "" && !slices.Contains(vigil.AuditResourceTypes, f.ResourceType) {
		q.bad("resource_type", "must be one of "+strings.Join(vigil.AuditResourceTypes, ", "))
	}
	if len(f.ResourceID) > 128 {
		q.bad("resource_id", "must be at most 128 bytes")
	}
	f.From, f.To = q.time("from"), q.time("to")
	if !f.From.IsZero() && !f.To.IsZero() && f.From.After(f.To) {
		q.bad("from", "must not be after to")
	}
	f.Page = q.page()
	if err := q.err(); err != nil {
		s.fail(w, r, err)
		return
	}
	entries, total, err := s.store.ListAudit(r.Context(), principal(r.Context()).OrgID, f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Audit entries retrieved successfully", listData("entries", entries, total, f.Page))
}
