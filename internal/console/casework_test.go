package console

import (
	"strings"
	"testing"

	"github.com/vigil-soc/vigil"
)

// TestRenderMarkdown: comments render as Markdown, and nothing in one can
// run script in another analyst's console.
func TestRenderMarkdown(t *testing.T) {
	for _, tc := range []struct {
		src          string
		want, refuse []string
	}{
		{"**bold** and `code`", []string{"<strong>bold</strong>", "<code>code</code>"}, nil},
		{"- one\n- two", []string{"<li>one</li>", "<li>two</li>"}, nil},
		{"see https://example.org/x", []string{`<a href="https://example.org/x">`}, nil},
		{"<script>alert(1)</script>", nil, []string{"<script"}},
		{"<img src=x onerror=alert(1)>", nil, []string{"<img", "onerror"}},
		{"[click](javascript:alert(1))", nil, []string{"javascript:"}},
		{"[click](JaVaScRiPt:alert(1))", nil, []string{"alert(1)\""}},
		{"[x](vbscript:msgbox)", nil, []string{"vbscript:"}},
		{`<a href="https://evil.example" onclick="x()">a</a>`, nil, []string{"onclick", "<a href=\"https://evil"}},
		{"| a | b |\n|---|---|\n| 1 | 2 |", []string{"<table>", "<td>1</td>"}, nil},
	} {
		got := string(renderMarkdown(tc.src))
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("renderMarkdown(%q) = %q, want it to hold %q", tc.src, got, w)
			}
		}
		for _, r := range tc.refuse {
			if strings.Contains(strings.ToLower(got), strings.ToLower(r)) {
				t.Errorf("renderMarkdown(%q) = %q: holds %q", tc.src, got, r)
			}
		}
	}
}

func TestDescribeEvent(t *testing.T) {
	bob, none := "bob", ""
	for _, tc := range []struct {
		e    vigil.IncidentEvent
		want string
	}{
		{vigil.IncidentEvent{Type: vigil.EventCreated, Via: "ssh_bruteforce"}, "opened it (ssh_bruteforce)"},
		{vigil.IncidentEvent{Type: vigil.EventGrew, ArtifactCount: 12}, "grew it to 12 artifacts"},
		{vigil.IncidentEvent{Type: vigil.EventMerged, Detail: vigil.EventDetail{MergedFrom: "x"}}, "merged into it the incident"},
		{vigil.IncidentEvent{Type: vigil.EventStatusChanged, Detail: vigil.EventDetail{FromStatus: 1, ToStatus: 3}}, "moved it from New to Resolved"},
		{vigil.IncidentEvent{Type: vigil.EventAssigned, Detail: vigil.EventDetail{AssigneeTo: &bob}}, "assigned it to bob"},
		{vigil.IncidentEvent{Type: vigil.EventAssigned, Detail: vigil.EventDetail{AssigneeTo: &none}}, "unassigned it"},
		{vigil.IncidentEvent{Type: vigil.EventTagged, Detail: vigil.EventDetail{TagsAdded: []string{"vip"}, TagsRemoved: []string{"c2"}}}, "tagged it +vip −c2"},
		{vigil.IncidentEvent{Type: vigil.EventClassified, Detail: vigil.EventDetail{Rule: &vigil.RuleRef{Name: "Big"}, SeverityFrom: "low", SeverityTo: "high"}}, "set its severity from low to high by rule Big"},
		{vigil.IncidentEvent{Type: vigil.EventCommentEdited}, "edited a comment"},
		{vigil.IncidentEvent{Type: vigil.EventCommentDeleted}, "deleted a comment"},
		{vigil.IncidentEvent{Type: vigil.EventObservationUpdated}, "edited one of its observations"},
		{vigil.IncidentEvent{Type: vigil.EventObservationDeleted, ArtifactCount: 3}, "deleted one of its observations, leaving 3 artifacts"},
	} {
		if got := describeEvent(tc.e); got != tc.want {
			t.Errorf("describeEvent(%s) = %q, want %q", tc.e.Type, got, tc.want)
		}
	}
}
