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
