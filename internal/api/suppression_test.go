package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Suppressions through the API: an org's exceptions to detection, judged
// by what detection does with the signals (the pipeline runs the real
// detectors here, as vigil serve does).

func leaf(field, op string, value any) map[string]any {
	return map[string]any{"field": field, "op": op, "value": value}
}

func createSuppression(t testing.TB, e *env, tok string, body map[string]any) map[string]any {
	t.Helper()
	return must(t, call(t, e, "POST", "/v1/suppressions", tok, body), http.StatusCreated).data()
}

// sshFailures returns n sshd failed-password lines from src against
// host, one second apart from start, as artifacts with their timestamps.
func sshFailures(start time.Time, src, host string, n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		ts := start.Add(time.Duration(i) * time.Second)
		out[i] = map[string]any{"source": "auth", "timestamp": ts.Format(time.RFC3339Nano),
			"raw": fmt.Sprintf("%s %s sshd[%d]: Failed password for user%d from %s port %d ssh2",
				ts.Format(time.Stamp), host, 4000+i, i%3, src, 40000+i)}
	}
	return out
}

// incidentsOf returns the titles of the org's incidents.
func incidentsOf(t testing.TB, e *env, tok string) []string {
	t.Helper()
	d := must(t, call(t, e, "GET", "/v1/incidents?limit=1000", tok, nil), http.StatusOK).data()
	var out []string
	for _, x := range d["incidents"].([]any) {
		out = append(out, x.(map[string]any)["title"].(string))
	}
	return out
}

func listTotal(t testing.TB, e *env, tok, path string) int {
	t.Helper()
	return int(must(t, call(t, e, "GET", path, tok, nil), http.StatusOK).data()["total"].(float64))
}

// metric returns the value of one sample of /metrics, 0 when absent.
func metric(t testing.TB, e *env, name, labels string) float64 {
	t.Helper()
	r := e.as(t).do("GET", "/metrics", "", nil)
	for _, line := range strings.Split(string(r.Raw), "\n") {
		if rest, ok := strings.CutPrefix(line, name+labels+" "); ok {
			var v float64
			fmt.Sscan(rest, &v)
			return v
		}
	}
	return 0
}

// TestSuppressedBruteForce: a brute force from a host the org suppressed
// makes no observation and no incident, its lines stay searchable, and the
// suppression shows what it swallowed (as does the metric); another
// attacker still fires; once the suppression is deleted, the same host
// fires at once.
func TestSuppressedBruteForce(t *testing.T) {
	e := newDetectingEnv(t)
	tok := e.token("org-a", "signals:manage", "incidents:read", "observations:read")
	sup := createSuppression(t, e, tok, map[string]any{"name": "vulnerability scanner", "reason": "our own weekly scan",
		"conditions": map[string]any{"all": []any{leaf("signal.detector", "eq", "ssh_bruteforce"), leaf("signal.source_ip", "cidr", "203.0.113.0/28")}}})
	id := sup["id"].(string)

	now := time.Now().UTC().Truncate(time.Second)
	postArtifacts(t, e, tok, sshFailures(now, "203.0.113.7", "web-01", 8)...)
	if got := incidentsOf(t, e, tok); len(got) != 0 {
		t.Fatalf("suppressed brute force opened incidents %v", got)
	}
	if n := listTotal(t, e, tok, "/v1/observations"); n != 0 {
		t.Fatalf("suppressed brute force made %d observations", n)
	}
	if n := listTotal(t, e, tok, "/v1/artifacts?query=203.0.113.7"); n != 8 {
		t.Errorf("search finds %d of the suppressed lines, want all 8", n)
	}
	g := must(t, call(t, e, "GET", "/v1/suppressions/"+id, tok, nil), http.StatusOK).data()
	if g["suppressed_count"] != float64(8) || g["last_suppressed_at"] == nil || g["active"] != true {
		t.Errorf("suppression after the brute force: count %v, last %v, active %v; want 8, a time, true",
			g["suppressed_count"], g["last_suppressed_at"], g["active"])
	}
	if v := metric(t, e, "vigil_signals_suppressed_total", `{detector="ssh_bruteforce",reason="suppression"}`); v != 8 {
		t.Errorf("vigil_signals_suppressed_total = %v, want 8", v)
	}

	// Another attacker is not covered.
	postArtifacts(t, e, tok, sshFailures(now, "198.51.100.23", "web-01", 8)...)
	if got := incidentsOf(t, e, tok); len(got) != 1 || !strings.Contains(got[0], "198.51.100.23") {
		t.Fatalf("incidents %v, want the other attacker's brute force", got)
	}

	// Deleted, the suppression no longer applies: at once in this process.
	must(t, call(t, e, "DELETE", "/v1/suppressions/"+id, tok, nil), http.StatusOK)
	postArtifacts(t, e, tok, sshFailures(now.Add(time.Minute), "203.0.113.7", "web-01", 6)...)
	if got := incidentsOf(t, e, tok); len(got) != 2 {
		t.Errorf("incidents %v after the deletion, want the first host's brute force too", got)
	}
}

// TestSuppressionExpiry: an expired suppression swallows nothing and
// reads as inactive; moving its expiry into the future makes it apply
// again at once.
func TestSuppressionExpiry(t *testing.T) {
	e := newDetectingEnv(t)
	tok := e.token("org-a", "signals:manage", "incidents:read")
	now := time.Now().UTC().Truncate(time.Second)
	sup := createSuppression(t, e, tok, map[string]any{"name": "maintenance window",
		"conditions": leaf("signal.source_ip", "eq", "203.0.113.7"), "expires_at": now.Add(-time.Minute).Format(time.RFC3339)})
	if sup["active"] != false {
		t.Errorf("expired suppression active = %v", sup["active"])
	}
	id := sup["id"].(string)
	postArtifacts(t, e, tok, sshFailures(now, "203.0.113.7", "web-01", 6)...)
	if got := incidentsOf(t, e, tok); len(got) != 1 {
		t.Fatalf("incidents %v, want the brute force: the suppression had expired", got)
	}
	u := must(t, call(t, e, "PUT", "/v1/suppressions/"+id, tok, map[string]any{"expires_at": now.Add(time.Hour).Format(time.RFC3339)}), http.StatusOK).data()
	if u["active"] != true {
		t.Errorf("suppression with a future expiry active = %v", u["active"])
	}
	// The same attacker again, after its incident was closed: swallowed.
	inc := must(t, call(t, e, "GET", "/v1/incidents", tok, nil), http.StatusOK).data()["incidents"].([]any)[0].(map[string]any)["id"].(string)
	must(t, call(t, e, "PUT", "/v1/incidents/"+inc+"/status", e.token("org-a", "incidents:write"), map[string]any{"status": 4}), http.StatusOK)
	postArtifacts(t, e, tok, sshFailures(now.Add(10*time.Minute), "203.0.113.7", "web-01", 6)...)
	if got := incidentsOf(t, e, tok); len(got) != 1 {
		t.Errorf("incidents %v, want none new while the suppression applies", got)
	}
	if g := must(t, call(t, e, "GET", "/v1/suppressions/"+id, tok, nil), http.StatusOK).data(); g["suppressed_count"] != float64(6) {
		t.Errorf("suppressed_count = %v, want 6", g["suppressed_count"])
	}
}

// TestSuppressionsTenancy: another org's suppression is missing (404) to
// every method, never listed, and never applies to this org's signals.
func TestSuppressionsTenancy(t *testing.T) {
	e := newDetectingEnv(t)
	a := e.token("org-a", "signals:manage", "incidents:read")
	b := e.token("org-b", "signals:manage", "incidents:read")
	sup := createSuppression(t, e, a, map[string]any{"name": "a's", "conditions": leaf("signal.source_ip", "eq", "203.0.113.7")})
	id := sup["id"].(string)
	if sup["org_id"] != "org-a" {
		t.Errorf("org_id = %v", sup["org_id"])
	}
	for _, p := range prefixes {
		wantError(t, call(t, e, "GET", p+"/suppressions/"+id, b, nil), http.StatusNotFound, "")
		wantError(t, call(t, e, "PUT", p+"/suppressions/"+id, b, map[string]any{"enabled": false}), http.StatusNotFound, "")
		wantError(t, call(t, e, "DELETE", p+"/suppressions/"+id, b, nil), http.StatusNotFound, "")
		if n := listTotal(t, e, b, p+"/suppressions"); n != 0 {
			t.Errorf("org B lists %d suppressions", n)
		}
	}
	if g := must(t, call(t, e, "GET", "/v1/suppressions/"+id, a, nil), http.StatusOK).data(); g["enabled"] != true || g["name"] != "a's" {
		t.Errorf("org A's suppression changed: %v", g)
	}
	// Org B's brute force from the address org A suppressed fires.
	postArtifacts(t, e, b, sshFailures(time.Now().UTC(), "203.0.113.7", "web-01", 6)...)
	if got := incidentsOf(t, e, b); len(got) != 1 {
		t.Errorf("org B's incidents %v, want its brute force", got)
	}
}

// TestSuppressionsPermissions: read with signals:read, write with
// signals:manage (signals:write is not enough).
func TestSuppressionsPermissions(t *testing.T) {
	e := newEnv(t)
	manage := e.token("org-a", "signals:manage")
	body := map[string]any{"name": "x", "conditions": leaf("signal.user", "eq", "backup")}
	id := createSuppression(t, e, manage, body)["id"].(string)
	for _, c := range []struct {
		perm          string
		read, written bool
	}{
		{"signals:read", true, false},
		{"observer:read", true, false},
		{"signals:write", false, false},
		{"incidents:write", false, false},
		{"signals:manage", true, true},
		{"admin", true, true},
	} {
		tok := e.token("org-a", c.perm)
		readWant, writeWant := http.StatusForbidden, http.StatusForbidden
		if c.read {
			readWant = http.StatusOK
		}
		must(t, call(t, e, "GET", "/v1/suppressions", tok, nil), readWant)
		must(t, call(t, e, "GET", "/v1/suppressions/"+id, tok, nil), readWant)
		if c.written {
			writeWant = http.StatusCreated
		}
		made := must(t, call(t, e, "POST", "/v1/suppressions", tok, body), writeWant)
		if c.written {
			writeWant = http.StatusOK
			mid := made.data()["id"].(string)
			must(t, call(t, e, "PUT", "/v1/suppressions/"+mid, tok, map[string]any{"reason": "r"}), writeWant)
			must(t, call(t, e, "DELETE", "/v1/suppressions/"+mid, tok, nil), writeWant)
			continue
		}
		must(t, call(t, e, "PUT", "/v1/suppressions/"+id, tok, map[string]any{"reason": "r"}), writeWant)
		must(t, call(t, e, "DELETE", "/v1/suppressions/"+id, tok, nil), writeWant)
	}
}

// TestSuppressionsBadConditions: a bad conditions tree is a 400 naming
// its bad part, on create and update; nothing is stored.
func TestSuppressionsBadConditions(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "signals:manage")
	id := createSuppression(t, e, tok, map[string]any{"name": "x", "conditions": leaf("signal.user", "eq", "backup")})["id"].(string)
	for _, c := range []struct {
		name  string
		cond  any
		field string
	}{
		{"incident field", map[string]any{"all": []any{leaf("incident.severity", "eq", "high")}}, "conditions.all[0].field"},
		{"unknown field", map[string]any{"any": []any{leaf("signal.user", "eq", "a"), leaf("signal.colour", "eq", "red")}}, "conditions.any[1].field"},
		{"unknown op", leaf("signal.user", "like", "a"), "conditions.op"},
		{"bad cidr", leaf("signal.source_ip", "cidr", "10.0.0.0/33"), "conditions.value"},
		{"bad regex", map[string]any{"not": leaf("signal.signature", "regex", "(")}, "conditions.not.value"},
		{"empty: every signal", map[string]any{}, "conditions"},
		{"not an object", []any{}, "conditions"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, call(t, e, "POST", "/v1/suppressions", tok, map[string]any{"name": "x", "conditions": c.cond}), http.StatusBadRequest, c.field)
			wantError(t, call(t, e, "PUT", "/v1/suppressions/"+id, tok, map[string]any{"conditions": c.cond}), http.StatusBadRequest, c.field)
		})
	}
	if n := listTotal(t, e, tok, "/v1/suppressions"); n != 1 {
		t.Errorf("%d suppressions stored, want 1", n)
	}
}

// TestEngineEventsPromotedPerOrg: Suricata's checksum events open nothing
// by default (and stay searchable); an org that promotes them gets an
// incident, named after them only while nothing worse is in it.
func TestEngineEventsPromotedPerOrg(t *testing.T) {
	e := newDetectingEnv(t)
	now := time.Now().UTC().Truncate(time.Second)
	eve := func(at time.Time, sid int, sig string, sev int) map[string]any {
		return map[string]any{"source": "suricata", "raw": fmt.Sprintf(`{"timestamp":"%s","event_type":"alert","src_ip":"198.51.100.77","src_port":51000,"dest_ip":"10.0.0.80","dest_port":80,"proto":"TCP","alert":{"gid":1,"signature_id":%d,"signature":"%s","category":"Generic Protocol Command Decode","severity":%d}}`,
			at.Format("2006-01-02T15:04:05.000000-0700"), sid, sig, sev)}
	}
	var noise []map[string]any
	for i := range 20 {
		noise = append(noise, eve(now.Add(time.Duration(i)*time.Second), 2200074, "SURICATA TCPv4 invalid checksum", 3))
	}
	for _, org := range []string{"org-default", "org-promoted"} {
		tok := e.token(org, "signals:manage", "incidents:read")
		if org == "org-promoted" {
			s := must(t, call(t, e, "PUT", "/v1/enrichment-settings", tok, map[string]any{"suricata_engine_events": true}), http.StatusOK).data()
			if s["suricata_engine_events"] != true {
				t.Fatalf("settings %v", s)
			}
		}
		postArtifacts(t, e, tok, noise...)
		got := incidentsOf(t, e, tok)
		if n := listTotal(t, e, tok, "/v1/artifacts?query=checksum"); n != 20 {
			t.Errorf("%s: search finds %d checksum events, want 20", org, n)
		}
		if org == "org-default" {
			if len(got) != 0 {
				t.Errorf("engine events opened %v by default", got)
			}
			if v := metric(t, e, "vigil_signals_suppressed_total", `{detector="suricata_alert",reason="engine_event"}`); v != 20 {
				t.Errorf("engine events left out: metric %v, want 20", v)
			}
			continue
		}
		if len(got) != 1 || !strings.Contains(got[0], "SURICATA TCPv4 invalid checksum") {
			t.Fatalf("promoted: incidents %v, want one of the checksum events", got)
		}
		// A web attack from the same source joins: the title follows it.
		postArtifacts(t, e, tok, eve(now.Add(time.Minute), 2002677, "ET SCAN Nikto Web App Scan in Progress", 1))
		if got := incidentsOf(t, e, tok); len(got) != 1 || !strings.HasPrefix(got[0], "Suricata: ET SCAN Nikto") {
			t.Errorf("after the attack joined: incidents %v, want one named after it", got)
		}
	}
}
