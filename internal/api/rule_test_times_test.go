package api_test

import (
	"bufio"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const acceptedPasswordRule = `title: SSH password login
logsource:
    product: linux
    service: sshd
detection:
    keywords:
        - 'Accepted password'
    condition: keywords
`

// firstLineWith returns the first line of a file that contains s.
func firstLineWith(t testing.TB, path, s string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			return sc.Text()
		}
	}
	t.Fatalf("%s: no line with %q", path, s)
	return ""
}

// TestRuleTestLineTimes: a line tested without a timestamp has the time
// written in it, as ingest gives a line sent without one, not the
// server's clock: the year-less line of the Elastic integration's
// auth.log (its year resolved as ingest resolves it) and the RFC 3339 line
// rsyslog wrote in the real-sensor corpus. A line given a timestamp keeps
// it. The same year-less line ingested without a timestamp is stored at
// the time the rule test reports.
func TestRuleTestLineTimes(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-times", "signals:read", "signals:write")
	yearless := datasetLines(t, "auth/integrations-test-auth.log", "auth", "")
	var syslogLine string
	for _, l := range yearless {
		if raw := l["raw"].(string); strings.Contains(raw, "Accepted password") {
			syslogLine = raw
			break
		}
	}
	if syslogLine == "" {
		t.Fatal("no Accepted password line in integrations-test-auth.log")
	}
	rfcLine := firstLineWith(t, filepath.Join("..", "..", "testdata", "realsensors", "cases", "ssh_bruteforce", "rfc3339", "auth.log"),
		"Accepted password")

	d := must(t, call(t, e, "POST", "/v1/detection-rules/test", tok, map[string]any{"rule": acceptedPasswordRule, "lines": []any{
		map[string]any{"source": "auth", "raw": syslogLine},
		map[string]any{"source": "auth", "raw": rfcLine},
		map[string]any{"source": "auth", "raw": rfcLine, "timestamp": "2026-01-02T03:04:05Z"},
	}}), http.StatusOK).data()
	matches := d["matches"].([]any)
	if len(matches) != 3 {
		t.Fatalf("matches = %v, want the 3 lines", matches)
	}
	got := make([]time.Time, len(matches))
	for i, m := range matches {
		got[i] = parseTS(t, m.(map[string]any)["timestamp"])
	}
	// "Feb 23 00:13:35 localhost sshd[7483]: Accepted password for vagrant …"
	if stamp := syslogLine[:len(time.Stamp)]; got[0].Format(time.Stamp) != stamp {
		t.Errorf("year-less line's time = %s, want the line's %q", got[0], stamp)
	}
	if want, _ := time.Parse(time.RFC3339Nano, rfcLine[:strings.IndexByte(rfcLine, ' ')]); !got[1].Equal(want) {
		t.Errorf("RFC 3339 line's time = %s, want the line's %s", got[1], want)
	}
	if want := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC); !got[2].Equal(want) {
		t.Errorf("line with a timestamp = %s, want %s", got[2], want)
	}

	// Ingest stores the same line at the same time.
	postArtifacts(t, e, tok, map[string]any{"source": "auth", "raw": syslogLine})
	var stored time.Time
	eventually(t, "the ingested line is searchable", func() bool {
		arts := items(t, must(t, call(t, e, "GET", "/v1/artifacts?limit=10", tok, nil), http.StatusOK), "artifacts")
		if len(arts) == 0 {
			return false
		}
		stored = parseTS(t, arts[0]["timestamp"])
		return true
	})
	if !stored.Equal(got[0]) {
		t.Errorf("ingested at %s, rule test says %s", stored, got[0])
	}
}
