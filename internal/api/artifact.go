package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
	"github.com/vigil-soc/vigil/internal/search"
)

type itemError struct {
	Index  int    `json:"index"`
	Field  string `json:"field,omitempty"`
	Reason string `json:"reason"`
}

// itemWarning says that an accepted item was stored altered.
type itemWarning struct {
	Index int    `json:"index"`
	Field string `json:"field"`
	Issue string `json:"issue"`
}

// altered is the warning of a field whose text could not be kept as sent.
const altered = "invalid UTF-8 or an unpaired UTF-16 surrogate escape, replaced by U+FFFD: the stored text differs from the bytes sent"

// itemFields are the members of an artifact item.
var itemFields = map[string]*shape{"source": nil, "raw": nil, "timestamp": nil, "metadata": nil}

// parseArtifact validates one item of a batch against the limits of
// docs/api.md (Artifacts), a bad item rejected alone: an object with
// exactly the members source, raw, timestamp and metadata, each at most
// once and in that case. It returns the fields whose text was altered to
// be stored (invalid UTF-8).
func parseArtifact(item []byte, now time.Time) (*vigil.Artifact, []string, *vigil.FieldIssue) {
	w := walker{b: item}
	w.ws()
	if w.i >= len(w.b) || w.b[w.i] != '{' {
		return nil, nil, &vigil.FieldIssue{Field: "artifact", Issue: "must be an object"}
	}
	// One walk finds each member's value, a repeated or unknown name, and
	// a name repeated inside metadata.
	var vals [4][]byte // source, raw, timestamp, metadata
	w.i++
	w.depth++
	for first := true; ; first = false {
		w.ws()
		if w.i < len(w.b) && w.b[w.i] == '}' && first {
			break
		}
		if w.i >= len(w.b) || w.b[w.i] != '"' {
			return nil, nil, &vigil.FieldIssue{Field: "artifact", Issue: "must be an object"}
		}
		lit, _ := w.str()
		name, ok := memberName(lit)
		if !ok {
			return nil, nil, &vigil.FieldIssue{Field: "artifact", Issue: "must be an object"}
		}
		slot := slices.Index([]string{"source", "raw", "timestamp", "metadata"}, name)
		switch {
		case slot < 0:
			return nil, nil, &vigil.FieldIssue{Field: name, Issue: unknownField(name, itemFields)}
		case vals[slot] != nil:
			return nil, nil, &vigil.FieldIssue{Field: name, Issue: "duplicate key"}
		}
		w.ws()
		w.i++ // ':'
		w.ws()
		start := w.i
		w.path = append(w.path[:0], pathElem{name: name})
		if !w.value(nil, true) {
			if w.issue != nil {
				return nil, nil, w.issue
			}
			return nil, nil, &vigil.FieldIssue{Field: "artifact", Issue: "must be an object"}
		}
		vals[slot] = item[start:w.i]
		w.ws()
		if w.i < len(w.b) && w.b[w.i] == ',' {
			w.i++
			continue
		}
		break
	}
	var changed []string
	str := func(field string, v []byte) (*string, *vigil.FieldIssue) {
		if v == nil || string(v) == "null" {
			return nil, nil
		}
		if v[0] != '"' {
			return nil, &vigil.FieldIssue{Field: field, Issue: "must be a string"}
		}
		t, alt, ok := jsonText(v)
		if !ok {
			return nil, &vigil.FieldIssue{Field: field, Issue: "must be a string"}
		}
		if alt {
			changed = append(changed, field)
		}
		return &t, nil
	}
	source, issue := str("source", vals[0])
	if issue != nil {
		return nil, nil, issue
	}
	// The raw line is kept as its literal when that decodes to it as
	// sent (Artifact.RawJSON): the queue carries it so, and the worker
	// decodes it once.
	var raw *string
	var rawJSON []byte
	rawLen := 0
	if v := vals[1]; len(v) > 0 && v[0] == '"' {
		if n, ok := plainLiteral(v); ok {
			rawJSON, rawLen, raw = v, n, new(string)
		}
	}
	if rawJSON == nil {
		if raw, issue = str("raw", vals[1]); issue != nil {
			return nil, nil, issue
		}
		if raw != nil {
			rawLen = len(*raw)
		}
	}
	ts, issue := str("timestamp", vals[2])
	if issue != nil {
		return nil, nil, issue
	}
	if source == nil {
		return nil, nil, &vigil.FieldIssue{Field: "source", Issue: "is required"}
	}
	if issue := vigil.ValidateSource(*source); issue != "" {
		return nil, nil, &vigil.FieldIssue{Field: "source", Issue: issue}
	}
	if raw == nil {
		return nil, nil, &vigil.FieldIssue{Field: "raw", Issue: "is required"}
	}
	if rawLen == 0 || rawLen > vigil.MaxRawBytes {
		return nil, nil, &vigil.FieldIssue{Field: "raw", Issue: "must be 1 byte to 1 MiB"}
	}
	a := &vigil.Artifact{ID: vigil.NewID(), Source: *source, Raw: *raw, RawJSON: rawJSON, Timestamp: now, TimestampDefaulted: true,
		CreatedAt: now, Metadata: json.RawMessage("{}")}
	if ts != nil {
		t, err := time.Parse(time.RFC3339Nano, *ts)
		if err != nil {
			return nil, nil, &vigil.FieldIssue{Field: "timestamp", Issue: "must be an RFC 3339 timestamp"}
		}
		if !vigil.ValidTimestamp(t) {
			return nil, nil, &vigil.FieldIssue{Field: "timestamp", Issue: "must be between 1900 and 2200"}
		}
		a.Timestamp, a.TimestampDefaulted = t.UTC(), false
	}
	if m := vals[3]; m != nil && string(m) != "null" {
		if m[0] != '{' {
			return nil, nil, &vigil.FieldIssue{Field: "metadata", Issue: "must be an object"}
		}
		if len(m) > vigil.MaxMetadataSize {
			return nil, nil, &vigil.FieldIssue{Field: "metadata", Issue: "must be at most 64 KiB"}
		}
		// Stored as text, which neither store takes with invalid UTF-8
		// (PostgreSQL refuses it, the worker would fail the batch on every
		// try): replaced as in raw, and said so.
		if !utf8.Valid(m) {
			m = validUTF8(m)
			changed = append(changed, "metadata")
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, m); err != nil {
			return nil, nil, &vigil.FieldIssue{Field: "metadata", Issue: "must be an object"}
		}
		a.Metadata = compact.Bytes()
	}
	return a, changed, nil
}

func (s *Server) postArtifacts(w http.ResponseWriter, r *http.Request) {
	var b batchBody
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	switch {
	case b.Artifacts == nil:
		s.fail(w, r, vigil.InvalidField("artifacts", "is required"))
		return
	case len(*b.Artifacts) == 0:
		s.fail(w, r, vigil.InvalidField("artifacts", "must not be empty"))
		return
	case len(*b.Artifacts) > vigil.MaxBatchItems:
		s.fail(w, r, vigil.InvalidField("artifacts", fmt.Sprintf("must have at most %d items", vigil.MaxBatchItems)))
		return
	}
	now := s.now()
	org := principal(r.Context()).OrgID
	accepted := make([]*vigil.Artifact, 0, len(*b.Artifacts))
	ids := make([]string, 0, len(*b.Artifacts))
	errs := []itemError{}
	warns := []itemWarning{}
	for i, raw := range *b.Artifacts {
		a, changed, issue := parseArtifact(raw, now)
		if issue != nil {
			errs = append(errs, itemError{Index: i, Field: issue.Field, Reason: issue.Field + ": " + issue.Issue})
			continue
		}
		for _, f := range changed {
			warns = append(warns, itemWarning{Index: i, Field: f, Issue: altered})
		}
		a.OrgID = org
		accepted = append(accepted, a)
		ids = append(ids, a.ID)
	}
	s.rejected.Add(float64(len(errs)))
	if len(accepted) == 0 {
		// A 2xx would let a shipper count these lines as delivered.
		s.fail(w, r, allRejected(errs))
		return
	}
	if err := s.ingest.Ingest(r.Context(), org, accepted); err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusAccepted, "Artifacts accepted for processing", map[string]any{
		"accepted": len(accepted), "rejected": len(errs), "ids": ids, "errors": errs, "warnings": warns,
	})
}

// maxRejectedDetails bounds the field issues listed when a whole batch is
// rejected; the message gives the count.
const maxRejectedDetails = 100

// allRejected is the 400 of a batch none of whose items was valid: each
// item's problem named as artifacts[i].field.
func allRejected(errs []itemError) error {
	issues := make([]vigil.FieldIssue, 0, min(len(errs), maxRejectedDetails))
	for _, e := range errs[:min(len(errs), maxRejectedDetails)] {
		field := fmt.Sprintf("artifacts[%d]", e.Index)
		if e.Field != "artifact" {
			field += "." + e.Field
		}
		issues = append(issues, vigil.FieldIssue{Field: field, Issue: strings.TrimPrefix(e.Reason, e.Field+": ")})
	}
	return &vigil.Error{Code: vigil.EINVALID, Details: issues,
		Message: fmt.Sprintf("no artifact accepted: all %d items were rejected (see details)", len(errs))}
}

func (s *Server) searchArtifacts(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r.URL.Query())
	f := vigil.ArtifactFilter{Source: q.str("source"), Query: q.str("query"), Range: q.timeRange(), Page: q.page()}
	if f.Source != "" {
		if issue := vigil.ValidateSource(f.Source); issue != "" {
			q.bad("source", issue)
		}
	}
	if _, err := search.Parse(f.Query); err != nil {
		// Before a slot is taken: a query too costly is refused as such.
		q.issues = append(q.issues, vigil.ErrorDetails(err)...)
	}
	if err := q.err(); err != nil {
		s.fail(w, r, err)
		return
	}
	org := principal(r.Context()).OrgID
	if !s.searchSlot(w, r, org) {
		return
	}
	defer s.searches.release(org)
	f.Preview = true
	var arts []*vigil.Artifact
	var total int
	var estimated bool
	var err error
	if es, ok := s.store.(vigil.ArtifactEstimator); ok {
		arts, total, estimated, err = es.SearchArtifactsEstimated(r.Context(), org, f, ExactTotalUpTo)
	} else {
		arts, total, err = s.store.SearchArtifacts(r.Context(), org, f)
	}
	if err != nil {
		s.fail(w, r, timedOut(r.Context(), err, fmt.Sprintf("the search did not finish within %s and was stopped: "+
			"narrow it (rarer or fewer terms, a source, a time range) and retry", s.searchTimeout)))
		return
	}
	s.writeArtifacts(w, r, arts, total, estimated, f.Page)
}

// searchSlot takes one of org's search slots, or answers 429 and
// returns false when it has none free: a search or an artifact read
// holds up to a few MiB.
func (s *Server) searchSlot(w http.ResponseWriter, r *http.Request, org string) bool {
	if s.searches.acquire(org) {
		return true
	}
	s.fail(w, r, vigil.Errorf(vigil.ERATELIMITED,
		"your organization already has %d searches or artifact reads in progress; retry when one has finished", s.searches.max))
	return false
}

// ExactTotalUpTo is how many matches GET /v1/artifacts counts exactly
// before it may estimate its total (total_estimated), as Elasticsearch's
// track_total_hits does by default: counting millions of matches exactly
// costs a store of millions of artifacts more than the page itself
// (docs/benchmarks.md, "Cost as the store grows").
const ExactTotalUpTo = 10000

// writeArtifacts writes a page of artifact previews as the list envelope,
// encoding one artifact at a time (its event parsed just before, dropped
// just after), so that what a response holds in memory is the page of
// previews and one artifact's encoding, never the whole response.
func (s *Server) writeArtifacts(w http.ResponseWriter, r *http.Request, arts []*vigil.Artifact, total int, estimated bool, p vigil.Page) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	bw.WriteString(`{"success":true,"message":"Artifacts retrieved successfully","data":{"artifacts":[`)
	for i, a := range arts {
		previewEvent(a)
		buf.Reset()
		if err := enc.Encode(a); err != nil {
			// The status is sent: cut the response off rather than end it
			// as if it were whole.
			s.log.ErrorContext(r.Context(), "encode artifact", slog.String("request_id", requestID(r.Context())),
				slog.String("artifact_id", a.ID), slog.String("error", err.Error()))
			bw.Flush()
			panic(http.ErrAbortHandler)
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		a.Event, arts[i] = nil, nil
	}
	fmt.Fprintf(bw, `],"total":%d,"total_estimated":%t,"limit":%d,"offset":%d}}`+"\n", total, estimated, p.Limit, p.Offset)
	bw.Flush()
}

// previewEvent gives a preview its event, parsed from its raw (the store
// keeps no events but those of older versions) unless the raw was cut,
// and left out (EventTruncated) when larger than vigil.PreviewEventBytes.
func previewEvent(a *vigil.Artifact) {
	if len(a.Event) > 0 || a.EventTruncated {
		return
	}
	if a.RawTruncated {
		a.EventTruncated = true
		return
	}
	if ev := parse.EventJSON(a.Source, a.Raw, a.Timestamp); len(ev) > vigil.PreviewEventBytes {
		a.EventTruncated = true
	} else {
		a.Event = ev
	}
}

// getArtifact returns one artifact whole: raw, metadata and event,
// whatever their size (a list shows previews of them).
//
// It holds up to a few MiB (a 1 MiB line, its event, their encoding), so
// it takes one of the org's search slots, as a search does: an org cannot
// have more than MaxOrgSearches of either in flight.
func (s *Server) getArtifact(w http.ResponseWriter, r *http.Request) {
	org := principal(r.Context()).OrgID
	if !s.searchSlot(w, r, org) {
		return
	}
	defer s.searches.release(org)
	arts, err := s.store.GetArtifacts(r.Context(), org, []string{r.PathValue("id")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(arts) == 0 {
		s.fail(w, r, vigil.NotFound("artifact"))
		return
	}
	a := arts[0]
	if len(a.Event) == 0 {
		a.Event = parse.EventJSON(a.Source, a.Raw, a.Timestamp)
	}
	ok(w, http.StatusOK, "Artifact retrieved successfully", a)
}
