package console

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
)

// artifactView is an artifact as the timeline and the search show it:
// the raw line with the searched terms marked, and its parsed fields,
// those naming an entity linked to a search for it.
type artifactView struct {
	*vigil.Artifact
	Raw    template.HTML
	Fields []fieldView
	// Enriched is what enrichment found about the line's values (GeoIP,
	// ASN, threat intel), by value.
	Enriched []enrichedValue
}

type enrichedValue struct {
	Value string
	Info  *nodeInfo
}

type fieldView struct {
	Name, Value string
	// Search and Incidents link an entity (address, domain, user, host)
	// to the artifacts and the incidents that name it.
	Search, Incidents string
}

// entityFields are the event fields whose values are entities worth a
// click.
func entityField(name string) bool {
	return strings.HasSuffix(name, ".ip") || strings.HasSuffix(name, ".domain") || name == "user.name" ||
		name == "dns.question.name" || name == "host.name" || name == "tls.client.server_name" || strings.HasSuffix(name, "hash.sha256")
}

func newArtifactView(a *vigil.Artifact, terms []string) artifactView {
	v := artifactView{Artifact: a, Raw: highlight(a.Raw, terms)}
	info := map[string]*nodeInfo{}
	mergeInfo(info, a.Enrichment)
	for val, in := range info {
		if in.String() != "" || len(in.Intel) > 0 {
			v.Enriched = append(v.Enriched, enrichedValue{Value: val, Info: in})
		}
	}
	sort.Slice(v.Enriched, func(i, j int) bool { return v.Enriched[i].Value < v.Enriched[j].Value })
	var ev map[string]any
	if len(a.Event) > 0 && json.Unmarshal(a.Event, &ev) == nil {
		for k, val := range ev {
			f := fieldView{Name: k}
			switch x := val.(type) {
			case string:
				f.Value = x
			default:
				b, _ := json.Marshal(x)
				f.Value = string(b)
			}
			if entityField(k) && f.Value != "" {
				f.Search = "/search?" + url.Values{"query": {quoteTerm(f.Value)}}.Encode()
				f.Incidents = "/nodes/incidents?" + url.Values{"value": {f.Value}}.Encode()
			}
			v.Fields = append(v.Fields, f)
		}
		sort.Slice(v.Fields, func(i, j int) bool { return v.Fields[i].Name < v.Fields[j].Name })
	}
	return v
}

// quoteTerm makes value one term of the search syntax: a value of
// several words is a phrase.
func quoteTerm(value string) string {
	if strings.ContainsFunc(value, unicode.IsSpace) || strings.ContainsAny(value, `"*-`) {
		return `"` + strings.ReplaceAll(value, `"`, " ") + `"`
	}
	return value
}

// searchTerms returns the words of a search query to mark in lines: its
// terms and phrases, without operators, exclusions or the prefix star.
func searchTerms(query string) []string {
	var out []string
	for _, f := range splitQuery(query) {
		if f == "OR" || strings.HasPrefix(f, "-") {
			continue
		}
		f = strings.Trim(f, `"*`)
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// splitQuery splits a query at spaces outside double quotes.
func splitQuery(q string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range q {
		switch {
		case r == '"':
			quoted = !quoted
			cur.WriteRune(r)
		case unicode.IsSpace(r) && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// highlight escapes raw and marks every case-insensitive occurrence of a
// term that stands as a whole token (not inside a longer word or
// number, as the search matches: 10.0.0.1 is not in 10.0.0.15).
func highlight(raw string, terms []string) template.HTML {
	if !utf8.ValidString(raw) {
		raw = strings.ToValidUTF8(raw, "\uFFFD")
	}
	lower := strings.ToLower(raw)
	marks := make([]bool, len(raw)+1) // marks[i]: byte i is inside a match
	for _, t := range terms {
		lt := strings.ToLower(t)
		if lt == "" || len(lt) != len(t) {
			continue
		}
		for from := 0; ; {
			i := strings.Index(lower[from:], lt)
			if i < 0 {
				break
			}
			i += from
			end := i + len(lt)
			if boundary(raw, i, end) {
				for k := i; k < end; k++ {
					marks[k] = true
				}
			}
			from = i + 1
		}
	}
	var b strings.Builder
	in := false
	for i := 0; i < len(raw); {
		_, size := utf8.DecodeRuneInString(raw[i:])
		if marks[i] && !in {
			b.WriteString("<mark>")
			in = true
		} else if !marks[i] && in {
			b.WriteString("</mark>")
			in = false
		}
		b.WriteString(template.HTMLEscapeString(raw[i : i+size]))
		i += size
	}
	if in {
		b.WriteString("</mark>")
	}
	return template.HTML(b.String())
}

// boundary: raw[i:end] is not part of a longer run of letters or digits.
func boundary(raw string, i, end int) bool {
	if i > 0 {
		r, _ := utf8.DecodeLastRuneInString(raw[:i])
		if isWord(r) {
			return false
		}
	}
	if end < len(raw) {
		r, _ := utf8.DecodeRuneInString(raw[end:])
		if isWord(r) {
			return false
		}
	}
	return true
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// infoLine is enrichment said in one line: "DE · AS3320 Deutsche
// Telekom · intel: feodo".
func (n *nodeInfo) String() string {
	if n == nil {
		return ""
	}
	var parts []string
	if n.Geo != nil && n.Geo.Country != "" {
		s := n.Geo.Country
		if n.Geo.City != "" {
			s += " " + n.Geo.City
		}
		parts = append(parts, s)
	}
	if n.ASN != nil && n.ASN.Number != 0 {
		parts = append(parts, strings.TrimSpace(fmt.Sprintf("AS%d %s", n.ASN.Number, n.ASN.Organization)))
	}
	return strings.Join(parts, " · ")
}
