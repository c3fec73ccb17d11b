package vlogs

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/postgres/pgtest"
	"github.com/vigil-soc/vigil/internal/vlogs/vltest"
)

// TestAddressTermsFindEntriesWithoutKeys: entries written before address
// keys (no field a) are still found by an address term when they are
// stamped before the store's keysFrom (migration 0024), and the entries
// written since by their keys.
func TestAddressTermsFindEntriesWithoutKeys(t *testing.T) {
	s := openOn(t, vltest.Shared(t))
	org := vigil.NewID()
	tn, err := s.Tenant(t.Context(), org)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	// As entries were written before this change: no address keys.
	var lines []byte
	for i, raw := range []string{"Failed password for root from 10.0.0.7 port 22 ssh2", "10 0 0 7 is not an address here", "from 10.0.0.70"} {
		lines = fmt.Appendf(lines, `{"_time":%q,"_msg":%q,"source":"sshd","w":%q,"id":"old-%d","created":%q}`+"\n",
			old.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano), raw, tokensOf(raw), i, old.Format(time.RFC3339Nano))
	}
	insertAsBefore(t, s, tn, lines)
	if err := s.InsertArtifacts(t.Context(), org, []*vigil.Artifact{
		{ID: vigil.NewID(), Source: "sshd", Raw: "Accepted password for alice from 10.0.0.7 port 50000", Timestamp: old.Add(24 * time.Hour), CreatedAt: old},
		{ID: vigil.NewID(), Source: "sshd", Raw: "version 10.0.0.77", Timestamp: old.Add(24 * time.Hour), CreatedAt: old},
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	keysFrom := old.Add(time.Hour)
	s.keysFrom.Store(&keysFrom)
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"10.0.0.7", 3}, // the old line's phrase, the phrase of the words, the new line's key
		{"10.0.0.70", 1},
		{"-10.0.0.7", 2},
		{"alice 10.0.0.7", 1},
	} {
		_, n, err := s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{Query: tc.query})
		if err != nil || n != tc.want {
			t.Errorf("%q: %d, %v; want %d", tc.query, n, err, tc.want)
		}
	}
}

// tokensOf is the search text of raw.
func tokensOf(raw string) string { return string(appendTokens(nil, raw)) }

// TestNarrowQueries: what the store sends VictoriaLogs for the classes
// that were slow at 10 M (docs/benchmarks.md): an address is one word of
// the address field, never the phrase of its parts over the search text,
// and a source is the filter of its stream bucket (and of its own stream,
// for entries written before), which VictoriaLogs answers from its stream
// index before reading any entry.
func TestNarrowQueries(t *testing.T) {
	var sent []string
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		sent = append(sent, r.Form.Get("query"))
		if strings.Contains(r.Form.Get("query"), "stats count() n") {
			fmt.Fprintln(w, `{"n":"3"}`)
		}
	}))
	defer front.Close()
	pg, err := postgres.Open(t.Context(), pgtest.FreshDB(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := ParseURLs(front.URL, front.URL)
	if err != nil {
		t.Fatal(err)
	}
	s := New(pg, cl)
	defer s.Close()
	for _, tc := range []struct {
		f          vigil.ArtifactFilter
		want, nope string
	}{
		{vigil.ArtifactFilter{Query: "10.0.0.100"}, `a:"10_0_0_100"`, `w:`},
		{vigil.ArtifactFilter{Query: "udp", Source: "firewall"}, sourceFilter("firewall") + ` ((w:"udp"))`, `w:"firewall"`},
		{vigil.ArtifactFilter{Query: "sshd 10.0.0.100", Source: "auth"}, sourceFilter("auth") + ` ((w:"sshd" a:"10_0_0_100"))`, `w:"10`},
	} {
		sent = nil
		if _, _, err := s.SearchArtifacts(t.Context(), vigil.NewID(), tc.f); err != nil {
			t.Fatal(err)
		}
		if len(sent) == 0 {
			t.Fatalf("%+v: no query sent", tc.f)
		}
		for _, q := range sent {
			if !strings.Contains(q, tc.want) || strings.Contains(q, tc.nope) {
				t.Errorf("%+v: sent %s; want %s and no %s", tc.f, q, tc.want, tc.nope)
			}
		}
	}
}
