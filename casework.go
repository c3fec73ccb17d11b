package vigil

import (
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds of case work: what one comment, one assignee and an incident's
// tags may hold.
const (
	MaxCommentBytes  = 16 << 10
	MaxAssigneeBytes = 256
	MaxTags          = 32
	MaxTagBytes      = 64
)

// Comment is an analyst's note on an incident: Markdown, stored as
// written (the console renders it safely).
type Comment struct {
	ID         string    `json:"id"`
	IncidentID string    `json:"incident_id"`
	Author     string    `json:"author"`
	Body       string    `json:"body"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// CaseUpdate changes who works an incident and how it is tagged; a nil
// field leaves that part as it is.
type CaseUpdate struct {
	// Assignee is the sub who works the incident; "" assigns nobody.
	Assignee *string
	// Tags replaces the incident's tags (NormalizeTags gives the set).
	Tags []string
}

// ValidTag reports whether t may be a tag: 1..MaxTagBytes of letters,
// digits and - _ . : /.
func ValidTag(t string) bool {
	if t == "" || len(t) > MaxTagBytes {
		return false
	}
	for _, r := range t {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/", r)
		if !ok {
			return false
		}
	}
	return true
}

// NormalizeTags returns tags as a set: sorted, each once.
func NormalizeTags(tags []string) []string {
	out := slices.Clone(tags)
	slices.Sort(out)
	return slices.Compact(out)
}

// ValidAssignee reports whether a may name an assignee: printable text of
// 1..MaxAssigneeBytes, as the subs of tokens are.
func ValidAssignee(a string) bool {
	if a == "" || len(a) > MaxAssigneeBytes || !utf8.ValidString(a) {
		return false
	}
	return !strings.ContainsFunc(a, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// TagDiff returns the tags of after that before lacks, and those of
// before that after lacks; both sets are sorted.
func TagDiff(before, after []string) (added, removed []string) {
	for _, t := range after {
		if _, found := slices.BinarySearch(before, t); !found {
			added = append(added, t)
		}
	}
	for _, t := range before {
		if _, found := slices.BinarySearch(after, t); !found {
			removed = append(removed, t)
		}
	}
	return added, removed
}

// CaseFields is what the audit log records of an incident's case work
// (a nil assignee: nobody, as "").
func CaseFields(assignee *string, tags []string) map[string]any {
	if tags == nil {
		tags = []string{}
	}
	a := ""
	if assignee != nil {
		a = *assignee
	}
	return map[string]any{"assignee": a, "tags": tags}
}

// StatusFields is what the audit log records of an incident's status.
func StatusFields(status int) map[string]any {
	return map[string]any{"status": status, "classification": StatusClassification(status)}
}
