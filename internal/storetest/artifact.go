package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

func artifactTests() []test {
	return []test{
		{"RoundTrip", testArtifactRoundTrip},
		{"RawByteExact", testArtifactRawByteExact},
		{"InsertIdempotent", testArtifactInsertIdempotent},
		{"NewestFirst", testArtifactOrder},
		{"Paging", testArtifactPaging},
		{"SourceFilter", testArtifactSourceFilter},
		{"TimeRange", testArtifactTimeRange},
		{"Query", testArtifactQuery},
		{"QueryRareAndCommonTerms", testArtifactQueryRareAndCommon},
		{"MalformedQuery", testArtifactMalformedQuery},
		{"GetArtifacts", testGetArtifacts},
		{"Preview", testArtifactPreview},
	}
}

// testArtifactPreview: a preview cuts raw to PreviewRawBytes on a rune
// boundary and leaves out larger metadata and stored events, saying so;
// small artifacts come back whole; without Preview everything does.
func testArtifactPreview(t *testing.T, s Store) {
	org := vigil.NewID()
	small := newArtifact("auth", "sshd: Failed password for root", at(3*time.Second))
	// A 3-byte rune straddles the cut.
	bigRaw := strings.Repeat("x", vigil.PreviewRawBytes-1) + "€" + strings.Repeat("y", vigil.MaxRawBytes-vigil.PreviewRawBytes-2)
	big := newArtifact("suricata", bigRaw, at(2*time.Second))
	big.Metadata = json.RawMessage(`{"k":"` + strings.Repeat("m", vigil.PreviewMetadataBytes) + `"}`)
	big.Event = json.RawMessage(`{"url.original":"` + strings.Repeat("u", vigil.PreviewEventBytes) + `"}`)
	edge := newArtifact("auth", strings.Repeat("e", vigil.PreviewRawBytes), at(time.Second))
	edge.Metadata = json.RawMessage(`{"k":"` + strings.Repeat("m", vigil.PreviewMetadataBytes-8) + `"}`)
	edge.Event = json.RawMessage(`{"k":"` + strings.Repeat("v", vigil.PreviewEventBytes-8) + `"}`)
	mustInsertArtifacts(t, s, org, small, big, edge)

	got, _ := mustSearch(t, s, org, vigil.ArtifactFilter{Preview: true, Page: vigil.Page{Limit: 10}})
	if len(got) != 3 {
		t.Fatalf("%d artifacts, want 3", len(got))
	}
	byID := map[string]*vigil.Artifact{}
	for _, a := range got {
		byID[a.ID] = a
	}
	p := byID[big.ID]
	if !p.RawTruncated || p.RawBytes != len(bigRaw) || p.Raw != bigRaw[:vigil.PreviewRawBytes-1] {
		t.Fatalf("big raw: truncated %v bytes %d raw of %d bytes ending %q; want the %d bytes before the split rune, of %d",
			p.RawTruncated, p.RawBytes, len(p.Raw), p.Raw[max(0, len(p.Raw)-4):], vigil.PreviewRawBytes-1, len(bigRaw))
	}
	if !p.MetadataTruncated || string(p.Metadata) != "{}" || !p.EventTruncated || p.Event != nil {
		t.Fatalf("big: metadata %.20s (truncated %v), event %.20s (truncated %v); want {} and null, both truncated",
			p.Metadata, p.MetadataTruncated, p.Event, p.EventTruncated)
	}
	for _, a := range []*vigil.Artifact{small, edge} {
		p := byID[a.ID]
		if p.RawTruncated || p.RawBytes != 0 || p.Raw != a.Raw || p.MetadataTruncated || p.EventTruncated {
			t.Fatalf("%s: truncated raw %v (%d bytes) metadata %v event %v; want it whole", a.Raw[:10], p.RawTruncated, p.RawBytes,
				p.MetadataTruncated, p.EventTruncated)
		}
		if !jsonEqual(p.Metadata, a.Metadata) || (a.Event != nil && !jsonEqual(p.Event, a.Event)) {
			t.Fatalf("%s: metadata or event changed", a.Raw[:10])
		}
	}

	whole, _ := mustSearch(t, s, org, vigil.ArtifactFilter{Page: vigil.Page{Limit: 10}})
	for _, a := range whole {
		if a.ID == big.ID && (a.Raw != bigRaw || a.RawTruncated || !jsonEqual(a.Metadata, big.Metadata) || !jsonEqual(a.Event, big.Event)) {
			t.Fatalf("without preview the big artifact is not whole")
		}
	}
}

func testGetArtifacts(t *testing.T, s Store) {
	org, other := vigil.NewID(), vigil.NewID()
	a := newArtifact("auth", "sshd: Failed password for root from 203.0.113.7", at(time.Minute))
	a.Metadata = json.RawMessage(`{"host":"web-1"}`)
	b := newArtifact("suricata", `{"event_type":"alert","src_ip":"198.51.100.9"}`, at(-time.Hour))
	foreign := newArtifact("auth", "org b's line", at(0))
	mustInsertArtifacts(t, s, org, a, b)
	mustInsertArtifacts(t, s, other, foreign)

	got, err := s.GetArtifacts(t.Context(), org, ids(b.ID, vigil.NewID(), a.ID, foreign.ID, b.ID, "not-a-uuid"))
	if err != nil {
		t.Fatalf("GetArtifacts: %v", err)
	}
	if !slices.Equal(ArtifactIDs(got), ids(b.ID, a.ID)) {
		t.Fatalf("GetArtifacts = %v, want %v (the org's, in the order asked, each once)", ArtifactIDs(got), ids(b.ID, a.ID))
	}
	g := got[1]
	if g.OrgID != org || g.Source != a.Source || g.Raw != a.Raw || !g.Timestamp.Equal(a.Timestamp) || !g.CreatedAt.Equal(a.CreatedAt) ||
		!jsonEqual(g.Metadata, a.Metadata) {
		t.Errorf("GetArtifacts returned %+v, want %+v", g, a)
	}
	if got, err := s.GetArtifacts(t.Context(), org, nil); err != nil || len(got) != 0 {
		t.Errorf("GetArtifacts(none) = %v, %v", ArtifactIDs(got), err)
	}
	many := mustArtifactIDs(t, s, org, 1201) // more than one chunk of any engine
	got, err = s.GetArtifacts(t.Context(), org, many)
	if err != nil || !slices.Equal(ArtifactIDs(got), many) {
		t.Errorf("GetArtifacts of %d ids: %d returned in order? %v; err %v", len(many), len(got), slices.Equal(ArtifactIDs(got), many), err)
	}
}

func testArtifactRoundTrip(t *testing.T, s Store) {
	org := vigil.NewID()
	a := &vigil.Artifact{
		ID: vigil.NewID(), Source: "suricata", Raw: `{"event_type":"alert","src_ip":"203.0.113.7"}`,
		Timestamp: at(time.Minute), CreatedAt: at(2 * time.Minute),
		Metadata: json.RawMessage(`{"sensor":"edge-1","tags":["dmz","ids"],"n":3,"nested":{"ok":true}}`),
	}
	mustInsertArtifacts(t, s, org, a)
	got, total := mustSearch(t, s, org, vigil.ArtifactFilter{})
	if total != 1 || len(got) != 1 {
		t.Fatalf("search returned %d artifacts, total %d; want 1, 1", len(got), total)
	}
	g := got[0]
	if g.ID != a.ID || g.OrgID != org || g.Source != a.Source || g.Raw != a.Raw {
		t.Errorf("got id=%s org=%s source=%s raw=%q; want %s %s %s %q", g.ID, g.OrgID, g.Source, g.Raw, a.ID, org, a.Source, a.Raw)
	}
	if !g.Timestamp.Equal(a.Timestamp) || !g.CreatedAt.Equal(a.CreatedAt) {
		t.Errorf("timestamp=%v created_at=%v; want %v %v", g.Timestamp, g.CreatedAt, a.Timestamp, a.CreatedAt)
	}
	if !jsonEqual(g.Metadata, a.Metadata) {
		t.Errorf("metadata = %s, want %s", g.Metadata, a.Metadata)
	}
	if !isNull(g.Event) || !isNull(g.Enrichment) {
		t.Errorf("event=%s enrichment=%s before parsing; want null", g.Event, g.Enrichment)
	}
}

func testArtifactRawByteExact(t *testing.T, s Store) {
	org := vigil.NewID()
	const tail = " needleofthebigline"
	filler := strings.Repeat("lorem ipsum dolor ", vigil.MaxRawBytes/18+1)
	big := filler[:vigil.MaxRawBytes-len(tail)] + tail
	raws := map[string]string{
		"unicode":   "héllo wörld — 日本語のログ 🚨 Ünïcödé",
		"newlines":  "line one\nline two\r\nline three\n\n",
		"quotes":    `he said "hi" and 'bye', \"escaped\" \\ back\slash; {"json": "in \"raw\""}`,
		"spaces":    "  \tleading and trailing\t  ",
		"sqlish":    `'; DROP TABLE artifacts; -- % _ ? $1`,
		"1MiB line": big,
	}
	byID := map[string]string{}
	var arts []*vigil.Artifact
	for name, raw := range raws {
		a := newArtifact("test", raw, base)
		arts = append(arts, a)
		byID[a.ID] = name
	}
	mustInsertArtifacts(t, s, org, arts...)
	got, total := mustSearch(t, s, org, vigil.ArtifactFilter{})
	if total != len(raws) {
		t.Fatalf("total = %d, want %d", total, len(raws))
	}
	for _, g := range got {
		name := byID[g.ID]
		want := raws[name]
		if g.Raw != want {
			if len(want) > 200 {
				t.Errorf("%s: raw of %d bytes came back as %d bytes, different", name, len(want), len(g.Raw))
			} else {
				t.Errorf("%s: raw = %q, want %q", name, g.Raw, want)
			}
		}
	}
	// The 1 MiB line is indexed as a whole: its last word is searchable.
	found, n := mustSearch(t, s, org, vigil.ArtifactFilter{Query: "needleofthebigline"})
	if n != 1 || len(found) != 1 || found[0].Raw != big {
		t.Errorf("search for the last word of the 1 MiB line: %d results, total %d", len(found), n)
	}
}

func testArtifactInsertIdempotent(t *testing.T, s Store) {
	org := vigil.NewID()
	batch := []*vigil.Artifact{
		newArtifact("auth", "sshd: Failed password for root", at(1*time.Minute)),
		newArtifact("auth", "sshd: Accepted password for alice", at(2*time.Minute)),
		newArtifact("dns", "query evil.example.com", at(3*time.Minute)),
	}
	mustInsertArtifacts(t, s, org, batch...)
	mustInsertArtifacts(t, s, org, batch...) // a redelivered batch
	got, total := mustSearch(t, s, org, vigil.ArtifactFilter{})
	if total != 3 || len(got) != 3 {
		t.Fatalf("after inserting the same batch twice: %d artifacts, total %d; want 3, 3", len(got), total)
	}
	if !sameSet(ArtifactIDs(got), ArtifactIDs(batch)) {
		t.Errorf("ids = %v, want %v", ArtifactIDs(got), ArtifactIDs(batch))
	}
	// A word search finds each artifact once, not once per insert.
	if _, n := mustSearch(t, s, org, vigil.ArtifactFilter{Query: "password"}); n != 2 {
		t.Errorf("search 'password' total = %d after re-insert, want 2", n)
	}

	// An artifact already stored is left as it is.
	again := *batch[0]
	again.Raw, again.Source = "something else entirely", "other"
	mustInsertArtifacts(t, s, org, &again)
	g := mustArtifact(t, s, org, batch[0].ID)
	if g.Raw != batch[0].Raw || g.Source != batch[0].Source {
		t.Errorf("re-insert with the same ID changed the artifact to source=%q raw=%q", g.Source, g.Raw)
	}
	if _, n := mustSearch(t, s, org, vigil.ArtifactFilter{Query: "entirely"}); n != 0 {
		t.Errorf("text of the ignored re-insert is searchable (%d matches)", n)
	}
}

func testArtifactOrder(t *testing.T, s Store) {
	org := vigil.NewID()
	a1 := newArtifact("test", "one", at(1*time.Minute))
	a3 := newArtifact("test", "three", at(3*time.Minute))
	a2 := newArtifact("test", "two", at(2*time.Minute))
	t1 := newArtifact("test", "tie a", at(5*time.Minute))
	t2 := newArtifact("test", "tie b", at(5*time.Minute))
	t3 := newArtifact("test", "tie c", at(5*time.Minute))
	// Created late, stamped early: order is by Timestamp, not by insertion.
	old := newArtifact("test", "old", at(0))
	old.CreatedAt = at(time.Hour)
	mustInsertArtifacts(t, s, org, a1, a3, t2, a2, t1, old, t3)
	want := append(desc(t1.ID, t2.ID, t3.ID), a3.ID, a2.ID, a1.ID, old.ID)
	got, total := mustSearch(t, s, org, vigil.ArtifactFilter{})
	if total != len(want) {
		t.Errorf("total = %d, want %d", total, len(want))
	}
	if !slices.Equal(ArtifactIDs(got), want) {
		t.Errorf("order = %v\nwant newest first, ties by id descending: %v", ArtifactIDs(got), want)
	}
}

func testArtifactPaging(t *testing.T, s Store) {
	org := vigil.NewID()
	var want []string // newest first
	for i := 5; i >= 1; i-- {
		a := newArtifact("test", "paged line", at(time.Duration(i)*time.Minute))
		mustInsertArtifacts(t, s, org, a)
		want = append(want, a.ID)
	}
	for _, tc := range []struct {
		limit, offset int
		want          []string
	}{
		{2, 0, want[0:2]},
		{2, 2, want[2:4]},
		{2, 4, want[4:5]},
		{2, 6, []string{}},
		{10, 0, want},
	} {
		for _, q := range []string{"", "paged"} {
			got, total := mustSearch(t, s, org, vigil.ArtifactFilter{Query: q, Page: vigil.Page{Limit: tc.limit, Offset: tc.offset}})
			if total != 5 {
				t.Errorf("query %q limit %d offset %d: total = %d, want 5 (all matches)", q, tc.limit, tc.offset, total)
			}
			if !slices.Equal(ArtifactIDs(got), tc.want) {
				t.Errorf("query %q limit %d offset %d: %v, want %v", q, tc.limit, tc.offset, ArtifactIDs(got), tc.want)
			}
		}
	}
}

func testArtifactSourceFilter(t *testing.T, s Store) {
	org := vigil.NewID()
	auth1 := newArtifact("auth", "sshd failure", at(1*time.Minute))
	auth2 := newArtifact("auth", "sudo failure", at(2*time.Minute))
	fw := newArtifact("firewall", "blocked failure", at(3*time.Minute))
	mustInsertArtifacts(t, s, org, auth1, auth2, fw)
	for _, tc := range []struct {
		source, query string
		want          []string
	}{
		{"auth", "", ids(auth2.ID, auth1.ID)},
		{"firewall", "", ids(fw.ID)},
		{"dns", "", []string{}},
		{"auth", "sudo", ids(auth2.ID)},
		{"firewall", "sudo", []string{}},
	} {
		got, total := mustSearch(t, s, org, vigil.ArtifactFilter{Source: tc.source, Query: tc.query})
		if total != len(tc.want) || !slices.Equal(ArtifactIDs(got), tc.want) {
			t.Errorf("source %q query %q: %v (total %d), want %v", tc.source, tc.query, ArtifactIDs(got), total, tc.want)
		}
	}
}

func testArtifactTimeRange(t *testing.T, s Store) {
	org := vigil.NewID()
	var a [4]*vigil.Artifact
	for i := range a {
		a[i] = newArtifact("test", "ranged line", at(time.Duration(i)*time.Hour))
		mustInsertArtifacts(t, s, org, a[i])
	}
	for _, tc := range []struct {
		name string
		r    vigil.TimeRange
		want []string
	}{
		{"start inclusive, end exclusive", vigil.TimeRange{Start: at(time.Hour), End: at(3 * time.Hour)}, ids(a[2].ID, a[1].ID)},
		{"start only", vigil.TimeRange{Start: at(2 * time.Hour)}, ids(a[3].ID, a[2].ID)},
		{"end only", vigil.TimeRange{End: at(time.Hour)}, ids(a[0].ID)},
		{"start just after", vigil.TimeRange{Start: at(time.Hour + time.Microsecond)}, ids(a[3].ID, a[2].ID)},
		{"end just after", vigil.TimeRange{End: at(time.Hour + time.Microsecond)}, ids(a[1].ID, a[0].ID)},
		{"empty", vigil.TimeRange{Start: at(time.Hour), End: at(time.Hour)}, []string{}},
	} {
		for _, q := range []string{"", "ranged"} {
			got, total := mustSearch(t, s, org, vigil.ArtifactFilter{Query: q, Range: tc.r})
			if total != len(tc.want) || !slices.Equal(ArtifactIDs(got), tc.want) {
				t.Errorf("%s (query %q): %v (total %d), want %v", tc.name, q, ArtifactIDs(got), total, tc.want)
			}
		}
	}
}

func testArtifactQuery(t *testing.T, s Store) {
	org := vigil.NewID()
	lines := []struct{ key, raw string }{
		{"root10", "sshd[411]: Failed password for root from 10.0.0.1 port 22 ssh2"},
		{"alice15", "sshd[412]: Accepted password for alice from 10.0.0.15 port 51000 ssh2"},
		{"near", "connection from 10.0.0.15 and 110.0.0.1 refused by firewall"},
		{"evil", "dns query evil.example.com A from 192.168.1.5"},
		{"evilorg", "dns query evil.example.org A from 192.168.1.6"},
		{"notevil", "dns query notevil.example.com A from 192.168.1.7"},
		{"logout", "session closed: user alice logged out"},
		{"bob", "passwd: password changed for bob"},
		{"fox", "the quick brown fox jumps over the lazy dog"},
		{"fox2", "brown quick fox"},
		{"upper", "AUTHENTICATION FAILURE FOR ROOT"},
	}
	idOf := map[string]string{}
	keyOf := map[string]string{}
	for i, l := range lines {
		a := newArtifact("test", l.raw, at(time.Duration(i)*time.Minute))
		mustInsertArtifacts(t, s, org, a)
		idOf[l.key], keyOf[a.ID] = a.ID, l.key
	}
	all := make([]string, len(lines))
	for i, l := range lines {
		all[i] = l.key
	}
	except := func(drop ...string) []string {
		var out []string
		for _, k := range all {
			if !slices.Contains(drop, k) {
				out = append(out, k)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name, query string
		want        []string
	}{
		{"single word", "password", ids("root10", "alice15", "bob")},
		{"two words are ANDed", "password alice", ids("alice15")},
		{"words in any order", "fox quick", ids("fox", "fox2")},
		{"quoted phrase is consecutive", `"quick brown"`, ids("fox")},
		{"prefix", "pass*", ids("root10", "alice15", "bob")},
		{"prefix of a longer word", "authentic*", ids("upper")},
		{"OR", "alice OR bob", ids("alice15", "logout", "bob")},
		{"AND binds tighter than OR", "password alice OR fox", ids("alice15", "fox", "fox2")},
		{"exclusion", "password -alice", ids("root10", "bob")},
		{"exclusion applies to every alternative", "password OR fox -alice -lazy", ids("root10", "bob", "fox2")},
		{"exclusion alone", "-password", except("root10", "alice15", "bob")},
		{"excluded phrase", `fox -"quick brown"`, ids("fox2")},
		{"IPv4 address", "10.0.0.1", ids("root10")},
		{"IPv4 address sharing a prefix", "10.0.0.15", ids("alice15", "near")},
		{"IPv4 address as a suffix of another", "110.0.0.1", ids("near")},
		{"domain", "evil.example.com", ids("evil")},
		{"case-insensitive query", "FAILED", ids("root10")},
		{"case-insensitive text", "failure", ids("upper")},
		{"mixed case both ways", "Root", ids("root10", "upper")},
		{"no match", "nonexistentword", []string{}},
		{"blank query matches all", "   ", all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, total := mustSearch(t, s, org, vigil.ArtifactFilter{Query: tc.query})
			var gotKeys []string
			for _, a := range got {
				gotKeys = append(gotKeys, keyOf[a.ID])
			}
			if total != len(tc.want) || !sameSet(gotKeys, tc.want) {
				t.Errorf("query %q: %v (total %d), want %v", tc.query, gotKeys, total, tc.want)
			}
		})
	}
}

// testArtifactQueryRareAndCommon: a term in a few of many artifacts and a
// term in nearly all of them (stores may list the two differently) give
// the same answers as a plain scan would: exact totals, newest first,
// pages that fit together, and nothing of another org that uses the same
// words.
func testArtifactQueryRareAndCommon(t *testing.T, s Store) {
	org, other := vigil.NewID(), vigil.NewID()
	const n = 600
	var arts []*vigil.Artifact
	var needles []*vigil.Artifact // newest first once sorted
	for i := 0; i < n; i++ {
		// Times out of insertion order: the list must sort, not follow rowids.
		ts := at(time.Duration((i*7919)%n) * time.Second)
		raw := fmt.Sprintf("noise line %d", i)
		if i%200 == 7 {
			raw = fmt.Sprintf("needle line %d", i)
		}
		a := newArtifact("test", raw, ts)
		arts = append(arts, a)
		if i%200 == 7 {
			needles = append(needles, a)
		}
	}
	mustInsertArtifacts(t, s, org, arts...)
	var theirs []*vigil.Artifact
	for i := 0; i < 5; i++ {
		theirs = append(theirs, newArtifact("test", fmt.Sprintf("needle of the other org %d", i), at(time.Duration(i)*time.Second)))
	}
	sort.Slice(needles, func(i, j int) bool { return needles[i].Timestamp.After(needles[j].Timestamp) })
	newest := func(arts []*vigil.Artifact, k int) []string {
		c := slices.Clone(arts)
		sort.Slice(c, func(i, j int) bool {
			if !c[i].Timestamp.Equal(c[j].Timestamp) {
				return c[i].Timestamp.After(c[j].Timestamp)
			}
			return c[i].ID > c[j].ID
		})
		var ids []string
		for _, a := range c[:min(k, len(c))] {
			ids = append(ids, a.ID)
		}
		return ids
	}
	idsOf := func(arts []*vigil.Artifact) []string {
		var ids []string
		for _, a := range arts {
			ids = append(ids, a.ID)
		}
		return ids
	}
	var noise []*vigil.Artifact
	for _, a := range arts {
		if strings.HasPrefix(a.Raw, "noise") {
			noise = append(noise, a)
		}
	}
	// First with the org alone in the store, then beside another org.
	check := func(phase string, theirs []*vigil.Artifact) {
		for _, tc := range []struct {
			name  string
			f     vigil.ArtifactFilter
			want  []string
			total int
		}{
			{"rare term", vigil.ArtifactFilter{Query: "needle"}, newest(needles, 3), 3},
			{"rare term, second page", vigil.ArtifactFilter{Query: "needle", Page: vigil.Page{Limit: 2, Offset: 2}}, newest(needles, 3)[2:], 3},
			{"common term, first page", vigil.ArtifactFilter{Query: "noise", Page: vigil.Page{Limit: 5}}, newest(noise, 5), n - 3},
			{"common term, a later page", vigil.ArtifactFilter{Query: "line", Page: vigil.Page{Limit: 4, Offset: 300}}, newest(arts, 304)[300:], n},
			{"exclusion of the common term", vigil.ArtifactFilter{Query: "-noise"}, newest(needles, 3), 3},
			{"rare term with a source filter", vigil.ArtifactFilter{Query: "needle", Source: "test"}, newest(needles, 3), 3},
			{"common term with a time filter", vigil.ArtifactFilter{Query: "noise", Page: vigil.Page{Limit: 3},
				Range: vigil.TimeRange{Start: at(0), End: at(10 * time.Second)}}, nil, -1},
			{"common term with a wide time filter", vigil.ArtifactFilter{Query: "noise", Page: vigil.Page{Limit: 3, Offset: 1},
				Range: vigil.TimeRange{Start: at(5 * time.Second)}}, nil, -3},
			{"rare term with a wide time filter", vigil.ArtifactFilter{Query: "needle", Source: "test",
				Range: vigil.TimeRange{Start: at(time.Second), End: at(590 * time.Second)}}, nil, -4},
			{"the other org's needles", vigil.ArtifactFilter{Query: "needle"}, nil, -2},
		} {
			if tc.total == -2 && len(theirs) == 0 {
				continue
			}
			t.Run(phase+"/"+tc.name, func(t *testing.T) {
				o := org
				want, total := tc.want, tc.total
				switch total {
				case -1: // the noise artifacts timed in [0s, 10s)
					var in []*vigil.Artifact
					for _, a := range noise {
						if a.Timestamp.Before(at(10 * time.Second)) {
							in = append(in, a)
						}
					}
					want, total = newest(in, 3), len(in)
				case -2:
					o, want, total = other, newest(theirs, 50), len(theirs)
				case -3: // noise from 5s on, the second to fourth newest
					var in []*vigil.Artifact
					for _, a := range noise {
						if !a.Timestamp.Before(at(5 * time.Second)) {
							in = append(in, a)
						}
					}
					want, total = newest(in, 4)[1:], len(in)
				case -4:
					var in []*vigil.Artifact
					for _, a := range needles {
						if !a.Timestamp.Before(at(time.Second)) && a.Timestamp.Before(at(590*time.Second)) {
							in = append(in, a)
						}
					}
					want, total = newest(in, 50), len(in)
				}
				got, gotTotal := mustSearch(t, s, o, tc.f)
				if gotTotal != total || !slices.Equal(idsOf(got), want) {
					t.Errorf("%+v: total %d, ids %v; want total %d, ids %v", tc.f, gotTotal, idsOf(got), total, want)
				}
			})
		}
	}
	check("alone", nil)
	mustInsertArtifacts(t, s, other, theirs...)
	check("beside another org", theirs)
}

func testArtifactMalformedQuery(t *testing.T, s Store) {
	org := vigil.NewID()
	mustInsertArtifacts(t, s, org, newArtifact("test", `an "open quote`, base))
	for _, q := range []string{`"unterminated`, `password "open phrase`, `-"open`, "OR password", "password OR"} {
		_, _, err := s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{Query: q})
		wantCode(t, err, vigil.EINVALID, "query "+q)
	}
}
