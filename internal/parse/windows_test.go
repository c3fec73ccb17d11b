package parse

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// winlogbeatDir holds real Winlogbeat documents: what Winlogbeat sends
// (collection) and, for three of them, what Elasticsearch's Winlogbeat
// ingest pipeline made of them (ingest).
const winlogbeatDir = "../../../shared/datasets/windows/winlogbeat"

func readWinlogbeat(t testing.TB, pattern string) map[string][]json.RawMessage {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(winlogbeatDir, pattern))
	if len(files) == 0 {
		t.Fatalf("no Winlogbeat documents %s under %s (../shared/datasets beside the checkout)", pattern, winlogbeatDir)
	}
	out := map[string][]json.RawMessage{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var docs []json.RawMessage
		if err := json.Unmarshal(b, &docs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[f] = docs
	}
	return out
}

// TestWindowsWinlogbeatDocuments parses every real Winlogbeat document:
// each is understood, keeps its identity, and its time is the event's.
func TestWindowsWinlogbeatDocuments(t *testing.T) {
	n := 0
	for f, docs := range readWinlogbeat(t, "*/collection/*.json") {
		for i, doc := range docs {
			var want struct {
				TS     string `json:"@timestamp"`
				Winlog struct {
					EventID  string `json:"event_id"`
					Channel  string `json:"channel"`
					Computer string `json:"computer_name"`
				} `json:"winlog"`
			}
			if err := json.Unmarshal(doc, &want); err != nil {
				t.Fatal(err)
			}
			res := Parse("windows", doc, time.Now())
			name := fmt.Sprintf("%s[%d]", filepath.Base(f), i)
			if !res.Parsed || res.Parser != "windows" {
				t.Errorf("%s: not parsed (%s)", name, res.Parser)
				continue
			}
			ev := res.Event
			if ev["event.code"] != want.Winlog.EventID || ev["winlog.channel"] != want.Winlog.Channel ||
				ev["winlog.computer_name"] != want.Winlog.Computer {
				t.Errorf("%s: identity %v %v %v", name, ev["event.code"], ev["winlog.channel"], ev["winlog.computer_name"])
			}
			if !res.Time.Equal(mustTime(t, want.TS)) {
				t.Errorf("%s: time %v, document %s", name, res.Time, want.TS)
			}
			if ev["host.name"] == nil {
				t.Errorf("%s: no host.name", name)
			}
			n++
		}
	}
	if n < 39 { // the 16 files hold 39
		t.Errorf("parsed only %d documents", n)
	}
}

// TestWindowsAsElasticMapsIt compares the ECS fields of the three events
// that Elasticsearch's own Winlogbeat pipeline mapped (ingest) with this
// parser's of the same events as Winlogbeat sent them (collection).
func TestWindowsAsElasticMapsIt(t *testing.T) {
	pairs := map[string]string{
		"security/ingest/security-windows2012_4771.golden.json":                 "security/collection/security-windows2012_4771.evtx.golden.json",
		"security/ingest/security-windows2019_4688_Process_Created.golden.json": "security/collection/security-windows2019_4688_Process_Created.evtx.golden.json",
		"sysmon/ingest/sysmon-12-processcreate.golden.json":                     "sysmon/collection/sysmon-12-processcreate.evtx.golden.json",
	}
	fields := []string{"source.ip", "source.port", "user.name", "user.domain", "service.name", "event.outcome",
		"process.executable", "process.name", "process.command_line", "process.pid", "process.entity_id",
		"process.parent.executable", "process.parent.name", "process.parent.pid", "process.parent.command_line",
		"process.hash.sha1"}
	compared := 0
	for ingest, collection := range pairs {
		var ref []map[string]any
		b, err := os.ReadFile(filepath.Join(winlogbeatDir, ingest))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &ref); err != nil {
			t.Fatal(err)
		}
		want := flat(ref[0], "")
		recordID := fmt.Sprint(want["winlog.record_id"])
		var doc json.RawMessage
		for _, d := range readWinlogbeat(t, collection)[filepath.Join(winlogbeatDir, collection)] {
			var id struct {
				Winlog struct {
					RecordID json.Number `json:"record_id"`
				} `json:"winlog"`
			}
			json.Unmarshal(d, &id)
			if id.Winlog.RecordID.String() == recordID {
				doc = d
			}
		}
		if doc == nil {
			t.Fatalf("%s: record %s not in %s", ingest, recordID, collection)
		}
		got := Parse("windows", doc, time.Now()).Event
		for _, f := range fields {
			w, ok := want[f]
			if !ok {
				continue
			}
			compared++
			if fmt.Sprint(got[f]) != fmt.Sprint(w) {
				t.Errorf("%s: %s = %v, Elastic's pipeline made %v", filepath.Base(ingest), f, got[f], w)
			}
		}
	}
	if compared < 20 {
		t.Errorf("compared only %d fields", compared)
	}
}

// flat flattens a decoded document to dotted names.
func flat(m map[string]any, prefix string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			for k2, v2 := range flat(sub, prefix+k+".") {
				out[k2] = v2
			}
			continue
		}
		out[prefix+k] = v
	}
	return out
}

// TestWindowsBadInput: documents a shipper may mangle are parsed for what
// they hold, never a panic; oversized parts are bounded and flagged.
func TestWindowsBadInput(t *testing.T) {
	many := map[string]string{}
	for i := 0; i < 10000; i++ {
		many[fmt.Sprintf("Field%d", i)] = "x"
	}
	manyData, _ := json.Marshal(map[string]any{"winlog": map[string]any{"channel": "Security", "event_id": "4688", "event_data": many}})
	longCmd, _ := json.Marshal(map[string]any{"winlog": map[string]any{"channel": "Microsoft-Windows-Sysmon/Operational", "event_id": "1",
		"event_data": map[string]string{"CommandLine": strings.Repeat("a", 1<<20), "Image": `C:\x.exe`}}})
	tests := []struct {
		name   string
		doc    string
		parsed bool
		check  func(Event) string
	}{
		{"event_id as a number (Winlogbeat 7)", `{"winlog":{"channel":"Security","event_id":4625,"event_data":{"TargetUserName":"bob","IpAddress":"10.0.0.5"}}}`, true,
			func(ev Event) string {
				return expect(ev, "event.code", "4625", "source.ip", "10.0.0.5", "event.outcome", "failure")
			}},
		{"no event id", `{"winlog":{"channel":"Security"}}`, false, nil},
		{"winlog not an object", `{"winlog":"Security"}`, false, nil},
		{"event_data not an object", `{"winlog":{"channel":"Security","event_id":"4624","event_data":"x"}}`, true,
			func(ev Event) string { return expect(ev, "event.outcome", "success") }},
		{"a data value of the wrong type", `{"winlog":{"channel":"Security","event_id":"4625","event_data":{"IpAddress":{"a":1},"IpPort":"x","TargetUserName":7}}}`, true,
			func(ev Event) string { return expect(ev, "user.name", "7") }},
		{"bad JSON", `{"winlog":{"channel":"Security","event_id":"4625"`, false, nil},
		{"10,000 data fields", string(manyData), true,
			func(ev Event) string {
				if ev["windows.truncated"] != true || len(ev) > 2*windowsMaxData {
					return fmt.Sprintf("%d fields, truncated %v", len(ev), ev["windows.truncated"])
				}
				return ""
			}},
		{"a 1 MiB command line", string(longCmd), true,
			func(ev Event) string {
				if n := len(ev["process.command_line"].(string)); n > maxMessage {
					return fmt.Sprintf("command line of %d bytes", n)
				}
				return expect(ev, "process.name", "x.exe")
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := Parse("windows", []byte(tc.doc), time.Now())
			if res.Parsed != tc.parsed {
				t.Fatalf("parsed %v, want %v", res.Parsed, tc.parsed)
			}
			if tc.check != nil {
				if msg := tc.check(res.Event); msg != "" {
					t.Error(msg)
				}
			}
		})
	}
}

func expect(ev Event, kv ...string) string {
	for i := 0; i < len(kv); i += 2 {
		if got := fmt.Sprint(ev[kv[i]]); got != kv[i+1] {
			return fmt.Sprintf("%s = %q, want %q", kv[i], got, kv[i+1])
		}
	}
	return ""
}

// TestWindowsAccountsAndHosts: one account is one User node and one
// computer one Host node, whichever form an event names them in.
func TestWindowsAccountsAndHosts(t *testing.T) {
	tests := []struct{ name, domain, want string }{
		{"Administrator", "CORP", `corp\administrator`},
		{"administrator", "corp.example.com", `corp\administrator`},
		{"svc", "", "svc"},
		{"-", "CORP", ""},
	}
	for _, tc := range tests {
		if got := WindowsAccount(tc.name, tc.domain); got != tc.want {
			t.Errorf("WindowsAccount(%q, %q) = %q, want %q", tc.name, tc.domain, got, tc.want)
		}
	}
	docs := []string{
		`{"winlog":{"channel":"Security","event_id":"4625","computer_name":"DC01.corp.example.com","event_data":{"TargetUserName":"Administrator","TargetDomainName":"CORP"}}}`,
		`{"winlog":{"channel":"Security","event_id":"4768","computer_name":"dc01","event_data":{"TargetUserName":"administrator","TargetDomainName":"CORP.EXAMPLE.COM","Status":"0x6"}}}`,
		`{"winlog":{"channel":"Microsoft-Windows-Sysmon/Operational","event_id":"1","computer_name":"DC01","event_data":{"User":"CORP\\Administrator","Image":"C:\\x.exe"}}}`,
	}
	for _, d := range docs {
		nodes := Nodes(Parse("windows", []byte(d), time.Now()).Event)
		var got []string
		for _, n := range nodes {
			got = append(got, n.Type+"="+n.Value)
		}
		if !containsAll(got, `User=corp\administrator`, "Host=dc01") {
			t.Errorf("%s: nodes %v", d, got)
		}
	}
}

func containsAll(list []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, x := range list {
			found = found || x == w
		}
		if !found {
			return false
		}
	}
	return true
}
