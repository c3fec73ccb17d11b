package api

import (
	"bytes"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
	"github.com/vigil-soc/vigil/internal/sigma"
)

// Detection rules: an addition to the contract. An org's own detections,
// written as Sigma rules (docs/sigma.md); read and written with the
// signals they judge, deleted with signals:manage as classification
// rules are. A rule's body is the Sigma rule itself, YAML or its JSON
// form.

// detectionRuleView is a rule as the API shows it: with the Vigil
// sources it reads (none for a correlation).
type detectionRuleView struct {
	*vigil.DetectionRule
	Sources []string `json:"sources"`
}

func viewDetectionRule(r *vigil.DetectionRule) detectionRuleView {
	v := detectionRuleView{DetectionRule: r, Sources: []string{}}
	if parsed, err := sigma.Parse([]byte(r.Rule)); err == nil && parsed.Correlation == nil {
		if c, err := sigma.Compile(parsed); err == nil {
			v.Sources = c.Sources()
		}
	}
	return v
}

// sigmaMediaTypes are the media types a rule's body may have.
var sigmaMediaTypes = []string{"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml", "text/plain", "application/json"}

// readRule reads a Sigma rule from the body and checks that Vigil can
// run it: a rule it cannot is a 400 naming the rule's field and why.
func readRule(w http.ResponseWriter, r *http.Request) (*vigil.DetectionRule, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !(contains(sigmaMediaTypes, mt) || strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+yaml")) {
			return nil, vigil.Errorf(vigil.EUNSUPPORTED, "a detection rule's body is a Sigma rule: application/yaml or application/json")
		}
	}
	body, err := readBody(w, r)
	if err != nil {
		return nil, jsonError(err)
	}
	return checkRule(body, "")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkRule parses and compiles a rule's text; prefix is put before the
// fields its errors name.
func checkRule(text []byte, prefix string) (*vigil.DetectionRule, error) {
	field := func(f string) string {
		switch {
		case prefix == "":
			if f == "" {
				return "body"
			}
			return f
		case f == "":
			return prefix
		}
		return prefix + "." + f
	}
	switch {
	case len(bytes.TrimSpace(text)) == 0:
		return nil, vigil.InvalidField(field(""), "is required: a Sigma rule, YAML or JSON")
	case len(text) > sigma.MaxRuleBytes:
		return nil, vigil.InvalidField(field(""), "a rule is at most 256 KiB")
	case !utf8.Valid(text):
		return nil, vigil.InvalidField(field(""), "must be UTF-8 text")
	case bytes.IndexByte(text, 0) >= 0:
		return nil, vigil.InvalidField(field(""), "must not contain NUL characters")
	}
	rule, err := sigma.Parse(text)
	if err == nil {
		if rule.Correlation != nil {
			_, err = sigma.CompileCorrelation(rule)
		} else {
			_, err = sigma.Compile(rule)
		}
	}
	var se *sigma.Error
	if errors.As(err, &se) {
		return nil, vigil.InvalidField(field(se.Field), se.Reason)
	}
	if err != nil {
		return nil, err
	}
	kind := "detection"
	switch {
	case rule.Correlation != nil:
		kind = "correlation"
	case rule.Filter != nil:
		kind = "filter"
	}
	return &vigil.DetectionRule{Title: rule.Title, SigmaID: rule.ID, Name: rule.Name, Kind: kind, Level: rule.Level, Rule: string(text)}, nil
}

func (s *Server) listDetectionRules(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r.URL.Query())
	p := q.page()
	if err := q.err(); err != nil {
		s.fail(w, r, err)
		return
	}
	list, total, err := s.store.ListDetectionRules(r.Context(), principal(r.Context()).OrgID, p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	views := make([]detectionRuleView, len(list))
	for i, dr := range list {
		views[i] = viewDetectionRule(dr)
	}
	ok(w, http.StatusOK, "Detection rules retrieved successfully", listData("detection_rules", views, total, p))
}

func (s *Server) getDetectionRule(w http.ResponseWriter, r *http.Request) {
	dr, err := s.store.GetDetectionRule(r.Context(), principal(r.Context()).OrgID, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Detection rule retrieved successfully", viewDetectionRule(dr))
}

func (s *Server) createDetectionRule(w http.ResponseWriter, r *http.Request) {
	dr, err := readRule(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p := principal(r.Context())
	if err := s.checkBaseRules(r.Context(), p.OrgID, "", dr); err != nil {
		s.fail(w, r, err)
		return
	}
	now := s.now()
	dr.ID, dr.Enabled, dr.CreatedBy, dr.CreatedAt, dr.UpdatedAt = vigil.NewID(), true, p.Subject, now, now
	if err := s.store.CreateDetectionRule(r.Context(), p.OrgID, dr); err != nil {
		s.fail(w, r, err)
		return
	}
	s.detectionRulesChanged(p.OrgID)
	ok(w, http.StatusCreated, "Detection rule created successfully", viewDetectionRule(dr))
}

// updateDetectionRule replaces a rule's text; it stays enabled or not.
func (s *Server) updateDetectionRule(w http.ResponseWriter, r *http.Request) {
	dr, err := readRule(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	org, id := principal(r.Context()).OrgID, r.PathValue("id")
	if err := s.checkNotBase(r.Context(), org, id, dr); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.checkBaseRules(r.Context(), org, id, dr); err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeDetectionRule(w, r, vigil.DetectionRuleUpdate{Rule: dr}, "Detection rule updated successfully")
}

func (s *Server) enableDetectionRule(w http.ResponseWriter, r *http.Request) {
	on := true
	s.writeDetectionRule(w, r, vigil.DetectionRuleUpdate{Enabled: &on}, "Detection rule enabled")
}

func (s *Server) disableDetectionRule(w http.ResponseWriter, r *http.Request) {
	off := false
	s.writeDetectionRule(w, r, vigil.DetectionRuleUpdate{Enabled: &off}, "Detection rule disabled")
}

func (s *Server) writeDetectionRule(w http.ResponseWriter, r *http.Request, u vigil.DetectionRuleUpdate, msg string) {
	org := principal(r.Context()).OrgID
	dr, err := s.store.UpdateDetectionRule(r.Context(), org, r.PathValue("id"), u, s.now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.detectionRulesChanged(org)
	ok(w, http.StatusOK, msg, viewDetectionRule(dr))
}

func (s *Server) deleteDetectionRule(w http.ResponseWriter, r *http.Request) {
	org := principal(r.Context()).OrgID
	if err := s.checkNotBase(r.Context(), org, r.PathValue("id"), nil); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.store.DeleteDetectionRule(r.Context(), org, r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	s.detectionRulesChanged(org)
	ok(w, http.StatusOK, "Detection rule deleted successfully", nil)
}

// detectionRulesChanged tells this process's workers that org's rules
// changed; other processes see it within their cache's bound.
func (s *Server) detectionRulesChanged(org string) {
	if s.detectionRules != nil {
		s.detectionRules.Invalidate(org)
	}
}

// Bounds of a rule test: the lines given, and the stored artifacts one
// request reads (the next page is asked with offset).
const (
	maxTestLines     = 1000
	defaultTestLimit = 1000
)

type testLine struct {
	Source    *string `json:"source"`
	Raw       *string `json:"raw" nul:"kept"` // as an artifact's raw
	Timestamp *string `json:"timestamp"`
}

type ruleTestBody struct {
	Rule   *string    `json:"rule"`
	Lines  []testLine `json:"lines"`
	From   *string    `json:"from"`
	To     *string    `json:"to"`
	Source *string    `json:"source"`
	Limit  *int       `json:"limit"`
	Offset *int       `json:"offset"`
}

type ruleTestMatch struct {
	Index      *int      `json:"index,omitempty"`
	ArtifactID string    `json:"artifact_id,omitempty"`
	Source     string    `json:"source"`
	Timestamp  time.Time `json:"timestamp"`
	Raw        string    `json:"raw"`
}

// testDetectionRule runs a rule, not saved, over the lines given or over
// the org's stored artifacts in a time range (a page of them per call),
// and returns what it matched.
func (s *Server) testDetectionRule(w http.ResponseWriter, r *http.Request) {
	var b ruleTestBody
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	var issues []vigil.FieldIssue
	bad := func(f, i string) { issues = append(issues, vigil.FieldIssue{Field: f, Issue: i}) }
	if b.Rule == nil {
		s.fail(w, r, vigil.InvalidField("rule", "is required: the Sigma rule to test, YAML or JSON text"))
		return
	}
	if _, err := checkRule([]byte(*b.Rule), "rule"); err != nil {
		s.fail(w, r, err)
		return
	}
	parsed, _ := sigma.Parse([]byte(*b.Rule))
	if parsed.Correlation != nil {
		s.fail(w, r, vigil.InvalidField("rule", "a correlation rule is tested through its base rules"))
		return
	}
	rule, _ := sigma.Compile(parsed)
	byLines := b.Lines != nil
	byRange := b.From != nil || b.To != nil
	switch {
	case byLines && byRange:
		bad("lines", "give lines or a time range (from, to), not both")
	case !byLines && !byRange:
		bad("lines", "give lines, or a time range (from, to) of stored artifacts")
	case len(b.Lines) > maxTestLines:
		bad("lines", "at most 1000 lines")
	}
	now := s.now()
	var rng vigil.TimeRange
	if byRange {
		rng.Start, rng.End = now.Add(-24*time.Hour), now
		for _, t := range []struct {
			name string
			v    *string
			dst  *time.Time
		}{{"from", b.From, &rng.Start}, {"to", b.To, &rng.End}} {
			if t.v == nil {
				continue
			}
			ts, err := time.Parse(time.RFC3339Nano, *t.v)
			if err != nil || !vigil.ValidTimestamp(ts) {
				bad(t.name, "must be an RFC 3339 time, e.g. 2026-01-02T15:04:05Z")
				continue
			}
			*t.dst = ts.UTC()
		}
	}
	p := vigil.Page{Limit: defaultTestLimit}
	if b.Limit != nil {
		if *b.Limit < 1 || *b.Limit > vigil.MaxLimit {
			bad("limit", "must be between 1 and 1000")
		}
		p.Limit = *b.Limit
	}
	if b.Offset != nil {
		if *b.Offset < 0 {
			bad("offset", "must be 0 or more")
		}
		p.Offset = *b.Offset
	}
	for i, l := range b.Lines {
		f := "lines[" + strconv.Itoa(i) + "]"
		if l.Source == nil || *l.Source == "" {
			bad(f+".source", "is required")
		}
		if l.Raw == nil {
			bad(f+".raw", "is required")
		} else if len(*l.Raw) > vigil.MaxRawBytes {
			bad(f+".raw", "must be at most 1 MiB")
		}
		if l.Timestamp != nil {
			if ts, err := time.Parse(time.RFC3339Nano, *l.Timestamp); err != nil || !vigil.ValidTimestamp(ts) {
				bad(f+".timestamp", "must be an RFC 3339 time")
			}
		}
	}
	if len(issues) > 0 {
		s.fail(w, r, vigil.Invalid(issues...))
		return
	}
	matches := []ruleTestMatch{}
	match := func(source, raw string, ts time.Time) (parse.Result, bool) {
		res := parse.Parse(source, []byte(raw), ts)
		return res, rule.Match(&sigma.Event{Source: source, Fields: res.Event, Raw: raw})
	}
	preview := func(raw string) string {
		if len(raw) > vigil.PreviewRawBytes {
			return vigil.TrimPartialRune(raw[:vigil.PreviewRawBytes])
		}
		return raw
	}
	if byLines {
		for i, l := range b.Lines {
			// A line without a timestamp has the time written in it,
			// as ingest gives it (TimeOr), the server's time only when it
			// has none.
			ts := now
			if l.Timestamp != nil {
				ts, _ = time.Parse(time.RFC3339Nano, *l.Timestamp)
			}
			res, hit := match(*l.Source, *l.Raw, ts)
			if l.Timestamp == nil {
				ts = res.TimeOr(now)
			}
			if hit {
				idx := i
				matches = append(matches, ruleTestMatch{Index: &idx, Source: *l.Source, Timestamp: ts.UTC(), Raw: preview(*l.Raw)})
			}
		}
		ok(w, http.StatusOK, "Rule tested", map[string]any{"matches": matches, "scanned": len(b.Lines)})
		return
	}
	f := vigil.ArtifactFilter{Range: rng, Page: p}
	if b.Source != nil {
		f.Source = *b.Source
	}
	arts, total, err := s.store.SearchArtifacts(r.Context(), principal(r.Context()).OrgID, f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, a := range arts {
		if _, hit := match(a.Source, a.Raw, a.Timestamp); hit {
			matches = append(matches, ruleTestMatch{ArtifactID: a.ID, Source: a.Source, Timestamp: a.Timestamp, Raw: preview(a.Raw)})
		}
	}
	var next any
	if p.Offset+len(arts) < total {
		next = p.Offset + len(arts)
	}
	ok(w, http.StatusOK, "Rule tested", map[string]any{"matches": matches, "scanned": len(arts), "total": total,
		"limit": p.Limit, "offset": p.Offset, "next_offset": next})
}
