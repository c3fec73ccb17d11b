package vlogs

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/vlogs/vltest"
)

// insertAsBefore writes JSON lines to the first storage node as builds
// before the stream buckets did: the source itself the stream field.
func insertAsBefore(t *testing.T, s *Store, tn Tenant, lines []byte) {
	t.Helper()
	q := url.Values{"_stream_fields": {"source"}, "_time_field": {"_time"}, "_msg_field": {"_msg"}}
	resp, err := s.c.do(t.Context(), "insert", http.MethodPost, s.c.storage[0].url, "/insert/jsonline", q, &tn,
		"application/stream+json", bytes.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// TestIDLetters: a UUID's letters read back as the UUID, and sort as the
// UUIDs do byte by byte; anything but a canonical UUID is kept as it is.
func TestIDLetters(t *testing.T) {
	ids := []string{
		"01a224e0-d788-779e-a4e9-c7e4a69c1f5f", "01a224e0-d788-7798-9ac9-44a1d8b45dd7",
		"00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff",
		"9fffffff-0000-0000-0000-000000000000", "a0000000-0000-0000-0000-000000000000",
	}
	for range 200 {
		ids = append(ids, vigil.NewID())
	}
	letters := make([]string, len(ids))
	for i, id := range ids {
		if !isUUID(id) {
			t.Fatalf("%s: not a UUID", id)
		}
		l := string(appendIDLetters(nil, id))
		if strings.ContainsAny(l, "0123456789-") || len(l) != 32 {
			t.Fatalf("%s: letters %q", id, l)
		}
		back, err := uuidOf(l)
		if err != nil || back != id {
			t.Fatalf("%s: %q read back as %q, %v", id, l, back, err)
		}
		letters[i] = l
	}
	byID, byLetters := slices.Clone(ids), slices.Clone(letters)
	slices.Sort(byID)
	slices.Sort(byLetters)
	for i := range byID {
		if string(appendIDLetters(nil, byID[i])) != byLetters[i] {
			t.Fatalf("order differs at %d: %s, %s", i, byID[i], byLetters[i])
		}
	}
	for _, s := range []string{"", "line-1", "01A224E0-D788-779E-A4E9-C7E4A69C1F5F", "01a224e0d788779ea4e9c7e4a69c1f5f0000",
		"01a224e0-d788-779e-a4e9-c7e4a69c1f5", "01a224e0-d788-779e-a4e9-c7e4a69c1f5g", "01a224e0+d788-779e-a4e9-c7e4a69c1f5f"} {
		if isUUID(s) {
			t.Errorf("%q taken for a UUID", s)
		}
	}
	for _, l := range []string{"", "ABC", "BAJAaBbC-cCdD-HeEf-IJaA-bBcCdDeEfFaA", "0BAJAaBbCcCdDHeEfIJaAbBcCdDeEfFaA", "gBAJAaBbCcCdDHeEfIJaAbBcCdDeEfFaA"} {
		if _, err := uuidOf(l); err == nil {
			t.Errorf("%q read as an id", l)
		}
	}
}

// TestEntriesWrittenBefore: entries as builds before this one wrote them
// (the id as it is, created in RFC 3339, the source the stream field)
// and entries written now, in one org, stamped at the same nanosecond:
// a search within the source finds both, ties come in the order of the
// ids' bytes whatever the entry's form, ids and receipt times read back
// the same, and a read by id finds both.
func TestEntriesWrittenBefore(t *testing.T) {
	s := openOn(t, vltest.Shared(t))
	org := vigil.NewID()
	tn, err := s.Tenant(t.Context(), org)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	created := at.Add(1500 * time.Millisecond)
	ids := []string{ // byte order, descending; every other one written as before
		"01a224e0-d788-779e-a4e9-c7e4a69c1f5f",
		"01a224e0-d788-779b-9de2-76bab62360c5",
		"01a224e0-d788-7798-9ac9-44a1d8b45dd7",
		"01a224e0-d788-7790-a8ca-affa79bb5bfe",
		"01a224e0-d788-71ff-a8ca-affa79bb5bfe",
		"01a224e0-d788-7100-a8ca-affa79bb5bfe",
	}
	var before []byte
	var now []*vigil.Artifact
	for i, id := range ids {
		raw := "tie " + strconv.Itoa(i)
		if i%2 == 0 {
			before = fmt.Appendf(before, `{"_time":%q,"_msg":%q,"source":"sshd","w":%q,"id":%q,"created":%q}`+"\n",
				at.Format(time.RFC3339Nano), raw, tokensOf(raw), id, created.Format(time.RFC3339Nano))
			continue
		}
		now = append(now, &vigil.Artifact{ID: id, Source: "sshd", Raw: raw, Timestamp: at, CreatedAt: created})
	}
	insertAsBefore(t, s, tn, before)
	if err := s.InsertArtifacts(t.Context(), org, now); err != nil {
		t.Fatal(err)
	}
	// Another source of the org, in the same bucket as sshd or not, is
	// not shown within sshd.
	if err := s.InsertArtifacts(t.Context(), org, []*vigil.Artifact{{ID: vigil.NewID(), Source: "dns", Raw: "tie 9", Timestamp: at, CreatedAt: at}}); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{2, 50} {
		var got []string
		for off := 0; off < len(ids); off += limit {
			page, total, err := s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{Query: "tie", Source: "sshd", Page: vigil.Page{Limit: limit, Offset: off}})
			if err != nil {
				t.Fatal(err)
			}
			if total != len(ids) {
				t.Fatalf("total %d, want %d", total, len(ids))
			}
			for _, a := range page {
				if !a.CreatedAt.Equal(created) || !a.Timestamp.Equal(at) || a.Source != "sshd" {
					t.Errorf("%s: created %v, time %v, source %q; want %v, %v, sshd", a.ID, a.CreatedAt, a.Timestamp, a.Source, created, at)
				}
				got = append(got, a.ID)
			}
		}
		if strings.Join(got, " ") != strings.Join(ids, " ") {
			t.Fatalf("limit %d: order\n%v\nwant ids descending byte by byte\n%v", limit, got, ids)
		}
	}
	tf, _ := timeFilter(vigil.TimeRange{Start: at, End: at.Add(1)})
	arts, err := s.read(t.Context(), org, tn, tf+" "+idsFilter([]string{ids[0], ids[1], "line-1"}), false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range arts {
		got = append(got, a.ID)
	}
	slices.Sort(got)
	if want := []string{ids[1], ids[0]}; !slices.Equal(got, want) {
		t.Fatalf("read by id: %v, want %v", got, want)
	}
}

// TestStreamsBounded: an org that sends more sources than streamBuckets
// makes no more streams than that, and a search within any source shows
// that source's artifacts only, two sources of one bucket included.
func TestStreamsBounded(t *testing.T) {
	s := openOn(t, vltest.Shared(t))
	org := vigil.NewID()
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	const sources = streamBuckets + streamBuckets/2
	var arts []*vigil.Artifact
	bucketOf := map[string]string{}
	for i := range sources {
		src := "host-" + strconv.Itoa(i)
		bucketOf[src] = string(appendStream(nil, src))
		for j := range 2 {
			arts = append(arts, &vigil.Artifact{ID: vigil.NewID(), Source: src, Raw: fmt.Sprintf("event %d of %s", j, src),
				Timestamp: at.Add(time.Duration(i) * time.Millisecond), CreatedAt: at})
		}
	}
	if err := s.InsertArtifacts(t.Context(), org, arts); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	tn, err := s.Tenant(t.Context(), org)
	if err != nil {
		t.Fatal(err)
	}
	var streams int
	if err := s.c.query(t.Context(), tn, "* | stats count_uniq(_stream) n", func(row map[string]string) error {
		streams, err = strconv.Atoi(row["n"])
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if streams > streamBuckets {
		t.Errorf("%d sources made %d streams, want at most %d", sources, streams, streamBuckets)
	}
	// Two sources that share a bucket, and one alone.
	var pair []string
	seen := map[string]string{}
	for i := range sources {
		src := "host-" + strconv.Itoa(i)
		if o, ok := seen[bucketOf[src]]; ok && pair == nil {
			pair = []string{o, src}
		}
		seen[bucketOf[src]] = src
	}
	for _, src := range append(pair, "host-7") {
		page, total, err := s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{Source: src})
		if err != nil {
			t.Fatal(err)
		}
		if total != 2 || len(page) != 2 {
			t.Fatalf("source %s: %d artifacts (total %d), want 2", src, len(page), total)
		}
		for _, a := range page {
			if a.Source != src {
				t.Errorf("source %s: shows an artifact of %s", src, a.Source)
			}
		}
		if _, total, err = s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{Source: src, Query: "event 1"}); err != nil || total != 1 {
			t.Errorf("source %s, a query: total %d, %v; want 1", src, total, err)
		}
	}
}

// TestOneAddressKeyIsText: entries with one address key each, more
// distinct keys than VictoriaLogs puts in a block's dictionary, whose
// digits are the same when the dots are dropped ("1.2.3.45" and
// "12.3.4.5"). VictoriaLogs reads "1_2_3_45" as the number 12345, so a
// block of such keys alone, stored as numbers, matched both addresses or
// neither; each is found alone. (Made-up lines: the encoding of one key
// per entry is what is tested.)
func TestOneAddressKeyIsText(t *testing.T) {
	s := openOn(t, vltest.Shared(t))
	org := vigil.NewID()
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	var arts []*vigil.Artifact
	for k := range 10 {
		for _, addr := range []string{fmt.Sprintf("1.2.3.4%d", k), fmt.Sprintf("12.3.4.%d", k)} {
			arts = append(arts, &vigil.Artifact{ID: vigil.NewID(), Source: "edge", Raw: "refused " + addr,
				Timestamp: at.Add(time.Duration(len(arts)) * time.Millisecond), CreatedAt: at})
		}
	}
	if err := s.InsertArtifacts(t.Context(), org, arts); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{"1.2.3.45", "12.3.4.5", "1.2.3.40"} {
		page, total, err := s.SearchArtifacts(t.Context(), org, vigil.ArtifactFilter{Query: addr})
		if err != nil {
			t.Fatal(err)
		}
		if total != 1 || len(page) != 1 || page[0].Raw != "refused "+addr {
			var raws []string
			for _, a := range page {
				raws = append(raws, a.Raw)
			}
			t.Errorf("%s: total %d, %q; want the one line", addr, total, raws)
		}
	}
}
