package vlogs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/search"
)

// datasetRaws returns every line of the shared datasets (../shared from
// the repository), or skips t when they are not there.
func datasetRaws(t testing.TB) []string {
	t.Helper()
	var lines []string
	for _, dir := range []string{"auth", "dns", "firewall", "suricata", "windows"} {
		files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "datasets", dir, "*"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for l := range strings.SplitSeq(string(b), "\n") {
				if l != "" {
					lines = append(lines, l)
				}
			}
		}
	}
	if len(lines) < 1000 {
		t.Skip("datasets not found")
	}
	return lines
}

// TestEntryIsWhatVictoriaLogsReads: the JSON written by hand decodes to
// the fields the reads expect, on every dataset line and on lines that
// need escaping (quotes, backslashes, control characters, invalid UTF-8,
// letters outside ASCII): the raw line as encoding/json would carry it,
// the search text as search.Tokens splits it, the address keys as
// search.AddressKeys finds them, one VictoriaLogs word each.
func TestEntryIsWhatVictoriaLogsReads(t *testing.T) {
	raws := append(datasetRaws(t),
		`quote " backslash \ tab	end`, "bell\x07 nul\x00 del\x7f", "bad \xff\xfe utf8 \xe2\x82", "Ünïcödé ÉCOLE straße İstanbul",
		"from 10.0.0.1 to 10.0.0.1 and 192.168.001.010:22", "-", "", "\u2028 line sep", strings.Repeat("x", vigil.PreviewRawBytes+10))
	at := time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC)
	for i, raw := range raws {
		a := &vigil.Artifact{ID: vigil.NewID(), Source: "src\"" + filepath.Base(raw[:min(len(raw), 3)]), Raw: raw, Timestamp: at, CreatedAt: at.Add(time.Second),
			Metadata: json.RawMessage(`{"k":"v\n"}`), Event: json.RawMessage(`{"e":1}`)}
		line, inPG := entry(nil, a)
		if inPG {
			t.Fatalf("line %d: left for PostgreSQL", i)
		}
		var m map[string]string
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("line %d %.80q: %v in %.200s", i, raw, err, line)
		}
		want := map[string]string{
			"_time": at.Format(time.RFC3339Nano), receivedField: "1000", "source": a.Source,
			streamField: string(appendStream(nil, a.Source)), idField: strings.ReplaceAll(a.ID, "-", ""),
			"_msg": viaJSON(raw), searchField: strings.Join(search.Tokens(raw), " "),
			"meta": `{"k":"v\n"}`, "event": `{"e":1}`,
		}
		want[idField] = strings.Map(func(r rune) rune {
			if '0' <= r && r <= '9' {
				return 'A' + r - '0'
			}
			return r
		}, want[idField])
		if keys := search.AddressKeys(raw); len(keys) > 0 {
			want[addressField] = strings.ReplaceAll(strings.Join(keys, " "), ".", "_")
			if len(keys) == 1 {
				want[addressField] += " "
			}
		}
		if raw == "" {
			want["_msg"], want["empty"] = "-", "1"
		}
		if len(raw) > vigil.PreviewRawBytes {
			want["p"], want["n"] = raw[:vigil.PreviewRawBytes], strconv.Itoa(len(raw))
		}
		for k, v := range want {
			if m[k] != v {
				t.Fatalf("line %d %.80q: field %s = %.80q, want %.80q", i, raw, k, m[k], v)
			}
		}
		if len(m) != len(want) {
			t.Fatalf("line %d: fields %v, want %v", i, m, want)
		}
		// What reads make of it.
		back, _, err := artifactOf("o", m, false)
		if err != nil || back.Raw != want["_msg"] && raw != "" || !back.Timestamp.Equal(at) || back.ID != a.ID || !back.CreatedAt.Equal(a.CreatedAt) {
			t.Fatalf("line %d: read back %+v, %v", i, back, err)
		}
	}
}

// viaJSON is s as encoding/json carries it (each invalid byte U+FFFD).
func viaJSON(s string) string {
	b, _ := json.Marshal(s)
	var out string
	json.Unmarshal(b, &out)
	return out
}

// TestEntryTooLargeLeavesRawToPostgreSQL: a raw line that would make the
// entry larger than VictoriaLogs takes is left out (its preview kept).
func TestEntryTooLargeLeavesRawToPostgreSQL(t *testing.T) {
	raw := strings.Repeat("y ", vigil.MaxRawBytes/2)
	line, inPG := entry(nil, &vigil.Artifact{ID: "x", Raw: raw, Timestamp: time.Now(), CreatedAt: time.Now()})
	var m map[string]string
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	if !inPG || m["rawpg"] != "1" || len(m["_msg"]) != vigil.PreviewRawBytes || len(line) > maxEntryBytes {
		t.Fatalf("inPG %v, rawpg %q, _msg %d bytes, entry %d bytes", inPG, m["rawpg"], len(m["_msg"]), len(line))
	}
}

// BenchmarkEntry: encoding the entries of the dataset lines, per line.
func BenchmarkEntry(b *testing.B) {
	raws := datasetRaws(b)
	now := time.Now()
	arts := make([]*vigil.Artifact, len(raws))
	for i, r := range raws {
		arts[i] = &vigil.Artifact{ID: vigil.NewID(), Source: "auth", Raw: r, Timestamp: now, CreatedAt: now,
			Metadata: json.RawMessage(`{}`), Event: json.RawMessage(`{"action":"login","user":"root"}`)}
	}
	b.ReportAllocs()
	var buf []byte
	for i := 0; b.Loop(); i++ {
		buf, _ = entry(buf[:0], arts[i%len(arts)])
	}
}

// TestReceiptTimeToTheMillisecond: the receipt time is stored as the
// milliseconds from the artifact's time (field r), which VictoriaLogs keeps
// in about 2 bytes per entry where nanoseconds took 6 (docs/benchmarks.md),
// and read back within half a millisecond; entries written before, with
// nanoseconds (c) or RFC 3339 (created), read back exactly.
func TestReceiptTimeToTheMillisecond(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, tt := range []struct {
		name   string
		offset time.Duration
		field  string // the value of r, "" for none
		back   time.Duration
	}{
		{"same", 0, "", 0},
		{"syslog line received 1.2345678 s after its second", 1234567800, "1235", 1235 * time.Millisecond},
		{"two seconds", 2 * time.Second, "2000", 2 * time.Second},
		{"under half a millisecond", 300 * time.Microsecond, "", 0},
		{"clock ahead of the receiver", -1500 * time.Millisecond, "-1500", -1500 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := &vigil.Artifact{ID: vigil.NewID(), Source: "auth", Raw: "sshd: Accepted", Timestamp: at, CreatedAt: at.Add(tt.offset)}
			line, _ := entry(nil, a)
			var m map[string]string
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatal(err)
			}
			if m[receivedField] != tt.field || m[createdField] != "" || m["created"] != "" {
				t.Fatalf("r=%q c=%q created=%q; want r=%q and neither of the others", m[receivedField], m[createdField], m["created"], tt.field)
			}
			back, _, err := artifactOf("o", m, false)
			if err != nil || !back.CreatedAt.Equal(at.Add(tt.back)) {
				t.Fatalf("read back created %v, %v; want %v", back.CreatedAt, err, at.Add(tt.back))
			}
		})
	}
	t.Run("written before", func(t *testing.T) {
		for _, row := range []map[string]string{
			{createdField: "1234567800"},
			{"created": at.Add(1234567800).Format(time.RFC3339Nano)},
		} {
			row["_time"], row[idField], row["_msg"] = at.Format(time.RFC3339Nano), "ABCDEFGHIJabcdefABCDEFGHIJabcdef", "x"
			back, _, err := artifactOf("o", row, false)
			if err != nil || !back.CreatedAt.Equal(at.Add(1234567800)) {
				t.Errorf("%v: read back created %v, %v; want %v", row, back.CreatedAt, err, at.Add(1234567800))
			}
		}
	})
}
