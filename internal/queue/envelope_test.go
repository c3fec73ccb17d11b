package queue

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
)

// datasetDir holds the real lines (../shared/datasets beside the checkout).
const datasetDir = "../../../shared/datasets"

// datasetArtifacts returns artifacts of real lines: the Winlogbeat
// documents of the Windows datasets (JSON full of escapes) and the lines
// of a Suricata, an auth and a firewall file.
func datasetArtifacts(t testing.TB) []*vigil.Artifact {
	t.Helper()
	var raws []string
	golden, _ := filepath.Glob(filepath.Join(datasetDir, "windows/winlogbeat/*/*/*.json"))
	for _, p := range golden {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var docs []json.RawMessage
		if err := json.Unmarshal(b, &docs); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, d := range docs {
			raws = append(raws, string(d))
		}
	}
	for _, p := range []string{"suricata/surevego-eve.json", "auth/loghub-Linux_2k.log", "firewall/*"} {
		files, _ := filepath.Glob(filepath.Join(datasetDir, p))
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(fh)
			sc.Buffer(nil, 1<<20)
			for n := 0; sc.Scan() && n < 500; n++ {
				raws = append(raws, sc.Text())
			}
			fh.Close()
		}
	}
	if len(golden) == 0 || len(raws) < 1000 {
		t.Fatalf("%d Winlogbeat files, %d lines under %s (../shared/datasets must be beside the checkout)", len(golden), len(raws), datasetDir)
	}
	arts := make([]*vigil.Artifact, len(raws))
	ts := time.Date(2026, 11, 28, 12, 0, 0, 123456789, time.UTC)
	for i, r := range raws {
		arts[i] = &vigil.Artifact{ID: vigil.NewID(), Source: "s", Raw: r, Timestamp: ts.Add(time.Duration(i)), CreatedAt: ts,
			TimestampDefaulted: i%3 == 0}
		if i%5 == 0 {
			arts[i].Metadata = json.RawMessage(`{"host":"h-` + strconv.Itoa(i) + `","n":[1,{"a":"}\"]"}]}`)
		}
	}
	return arts
}

// The messages chunk writes of real lines are read by the fast path
// (never by json.Unmarshal) into what json.Unmarshal reads.
func TestDecodeEnvelopeAsUnmarshal(t *testing.T) {
	arts := datasetArtifacts(t)
	// Lines as odd as a raw line gets: NUL, controls, HTML characters
	// (which json.Marshal escapes as \u003c), characters outside the BMP
	// (surrogate pairs when escaped), a lone surrogate's replacement.
	for _, r := range []string{"a\x00b\x01\t\n\"\\", "<script>&amp;</script>", "héllo 😀 \u2028 \ufffd", ""} {
		arts = append(arts, &vigil.Artifact{ID: vigil.NewID(), Source: "odd", Raw: r, Timestamp: time.Unix(0, -5)})
	}
	q := &Queue{maxChunk: 256 << 10}
	msgs := q.chunk("org-1", "batch-1", arts)
	if len(msgs) < 2 {
		t.Fatalf("%d messages", len(msgs))
	}
	n := 0
	for _, m := range msgs {
		var want envelope
		if err := json.Unmarshal(m, &want); err != nil {
			t.Fatal(err)
		}
		s := envScanner{b: m, arena: make([]byte, 0, len(m))}
		got, ok := s.envelope()
		if !ok {
			t.Fatalf("the fast path gave up on a message chunk wrote: %.200s", m)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fast path read\n%+v\njson.Unmarshal\n%+v", got, want)
		}
		n += len(got.Artifacts)
	}
	if n != len(arts) {
		t.Fatalf("%d artifacts read of %d", n, len(arts))
	}
}

// Whatever the bytes, decodeEnvelope gives what json.Unmarshal gives: the
// same envelope, or an error where it errs.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"org":"o","batch":"b","artifacts":[{"id":"i","source":"s","raw":"r\u00e9\ud83d\ude00\"","ts":-9223372036854775808,"created":9223372036854775807,"meta":{"a":[1,"]"]},"tsd":true}]}`,
		`{"org":"o","artifacts":[]}`, `{"ORG":"o"}`, `{"org":"o","artifacts":null}`, `{"org":"o","artifacts":[{"ts":1e3}]}`,
		`{"org":"o","artifacts":[{"ts":9223372036854775808}]}`, `{"org":"\ud800"}`, "{\"org\":\"\xff\"}", ` { "org" : "o" } `,
		`{"org":"o","artifacts":[{"meta":{"a":}}]}`, `{"org":"o"}x`, `{"org":"o","artifacts":[{"ts":01}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want envelope
		wantErr := json.Unmarshal(b, &want)
		got, err := decodeEnvelope(b)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: error %v, json.Unmarshal's %v", b, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: read\n%+v\njson.Unmarshal\n%+v", b, got, want)
		}
	})
}

// BenchmarkDecodeEnvelope reads the messages of the real lines with
// decodeEnvelope, and with json.Unmarshal as the queue did before it.
func BenchmarkDecodeEnvelope(b *testing.B) {
	arts := datasetArtifacts(b)
	msgs := (&Queue{maxChunk: 1 << 20}).chunk("org-1", "batch-1", arts)
	size := 0
	for _, m := range msgs {
		size += len(m)
	}
	for _, dec := range []struct {
		name string
		read func([]byte) error
	}{
		{"fast", func(m []byte) error { _, err := decodeEnvelope(m); return err }},
		{"json.Unmarshal", func(m []byte) error { var env envelope; return json.Unmarshal(m, &env) }},
	} {
		b.Run(dec.name, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				for _, m := range msgs {
					if err := dec.read(m); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// TestChunkAsMarshal: the messages chunk writes without reflection read
// (json.Unmarshal) as the envelopes json.Marshal wrote before, raw lines
// given as text or as the literal a client sent (RawJSON) alike, invalid
// UTF-8 replaced by U+FFFD as Marshal replaces it.
func TestChunkAsMarshal(t *testing.T) {
	arts := datasetArtifacts(t)
	for _, r := range []string{"a\x00b\x01\t\n\"\\", "<script>&amp;</script>", "héllo 😀 \u2028 \ufffd", "", "caf\xe9 \xff"} {
		arts = append(arts, &vigil.Artifact{ID: vigil.NewID(), Source: "odd\xe9", Raw: r, Timestamp: time.Unix(0, -5),
			Metadata: json.RawMessage(` { "a" : [ 1 , "\u00e9" ] } `)})
	}
	var literal []*vigil.Artifact // the same lines as the API hands them over
	for _, a := range arts {
		c := *a
		if utf8.ValidString(a.Raw) {
			c.RawJSON, _ = json.Marshal(a.Raw)
			c.Raw = ""
		}
		literal = append(literal, &c)
	}
	want := envelope{Org: "org-\xe9", Batch: "batch-1"}
	for _, a := range arts {
		want.Artifacts = append(want.Artifacts, artifact{ID: a.ID, Source: a.Source, Raw: a.Raw, Timestamp: a.Timestamp.UnixNano(),
			Created: a.CreatedAt.UnixNano(), Metadata: a.Metadata, Defaulted: a.TimestampDefaulted})
	}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	want = envelope{} // not into the artifacts' metadata
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for _, in := range [][]*vigil.Artifact{arts, literal} {
		msgs := (&Queue{maxChunk: 256 << 10}).chunk(want.Org, want.Batch, in)
		if len(msgs) < 2 {
			t.Fatalf("%d messages", len(msgs))
		}
		var got envelope
		for _, m := range msgs {
			var env envelope
			if err := json.Unmarshal(m, &env); err != nil {
				se, _ := err.(*json.SyntaxError)
				t.Fatalf("%v: %q", err, m[max(0, int(se.Offset)-200):min(int(se.Offset)+20, len(m))])
			}
			got.Org, got.Batch = env.Org, env.Batch
			got.Artifacts = append(got.Artifacts, env.Artifacts...)
		}
		if !reflect.DeepEqual(got, want) {
			for i := range min(len(got.Artifacts), len(want.Artifacts)) {
				if !reflect.DeepEqual(got.Artifacts[i], want.Artifacts[i]) {
					t.Fatalf("artifact %d read as\n%+v\nMarshal's\n%+v", i, got.Artifacts[i], want.Artifacts[i])
				}
			}
			t.Fatalf("read %d artifacts of %s/%s, Marshal's %d of %s/%s", len(got.Artifacts), got.Org, got.Batch,
				len(want.Artifacts), want.Org, want.Batch)
		}
	}
}

// BenchmarkChunk writes the messages of the real lines: raw lines as
// text, as the API's literals (RawJSON), and with json.Marshal as chunk
// did before.
func BenchmarkChunk(b *testing.B) {
	arts := datasetArtifacts(b)
	literal := make([]*vigil.Artifact, len(arts))
	size := 0
	for i, a := range arts {
		c := *a
		c.RawJSON, _ = json.Marshal(a.Raw)
		c.Raw = ""
		literal[i] = &c
		size += len(a.Raw)
	}
	q := &Queue{maxChunk: 1 << 20}
	marshal := func(arts []*vigil.Artifact) {
		env := envelope{Org: "org-1", Batch: "batch-1"}
		for _, a := range arts {
			env.Artifacts = append(env.Artifacts, artifact{ID: a.ID, Source: a.Source, Raw: a.Raw, Timestamp: a.Timestamp.UnixNano(),
				Created: a.CreatedAt.UnixNano(), Metadata: a.Metadata, Defaulted: a.TimestampDefaulted})
		}
		if _, err := json.Marshal(env); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		run  func()
	}{
		{"text", func() { q.chunk("org-1", "batch-1", arts) }},
		{"literal", func() { q.chunk("org-1", "batch-1", literal) }},
		{"json.Marshal", func() { marshal(arts) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				c.run()
			}
		})
	}
}
