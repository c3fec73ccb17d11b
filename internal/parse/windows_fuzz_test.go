package parse

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzParseWindows feeds the Windows parser what a shipper or a hostile
// client may send as a Winlogbeat document: it must parse or refuse it,
// never panic, and what it keeps stays bounded — at most windowsMaxData
// data items, no value longer than maxMessage, no NUL, only the value
// types the store writes. The seeds are the real Winlogbeat documents of
// ../shared/datasets, one line each, and the bad documents of
// TestWindowsBadInput's kinds.
func FuzzParseWindows(f *testing.F) {
	for _, docs := range readWinlogbeat(f, "*/*/*.json") {
		for _, d := range docs {
			var line bytes.Buffer
			if err := json.Compact(&line, d); err != nil {
				f.Fatal(err)
			}
			f.Add(line.Bytes())
		}
	}
	for _, s := range []string{
		`{"winlog":{"channel":"Security","event_id":4625,"event_data":{"TargetUserName":"bob","IpAddress":"10.0.0.5"}}}`,
		`{"winlog":{"channel":"Security","event_id":"4625","event_data":{"IpAddress":{"a":1},"IpPort":"x","TargetUserName":7}}}`,
		`{"winlog":{"channel":"Security","event_id":"4624","event_data":"x"}}`,
		`{"winlog":{"channel":"Security","event_id":"4625"`,
		`{"winlog":{"channel":"Security","event_id":"4625","event_data":{"TargetUserName":"a\u0000b"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		res := Parse("windows", raw, time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
		if res.Event == nil {
			t.Fatal("nil event")
		}
		checkEventValues(t, res.Event)
		checkNoNUL(t, "windows", raw, res.Event)
		data := 0
		for k, v := range res.Event {
			if strings.HasPrefix(k, "winlog.event_data.") || strings.HasPrefix(k, "winlog.user_data.") {
				data++
			}
			if s, ok := v.(string); ok && len(s) > maxMessage {
				t.Errorf("field %s holds %d bytes", k, len(s))
			}
		}
		if data > windowsMaxData {
			t.Errorf("%d data items kept, at most %d", data, windowsMaxData)
		}
		if res.Parsed && res.Event["event.code"] == "" {
			t.Error("parsed without an event code")
		}
	})
}
