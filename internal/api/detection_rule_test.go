package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Detection rules through the API: a Sigma rule an org posts runs on the
// org's artifacts in the pipeline (the real one here, as in vigil serve),
// and its matches become observations and incidents like a built-in
// detector's.

// postRule posts a Sigma rule's YAML text and returns the created rule.
func postRule(t testing.TB, e *env, tok, text string) map[string]any {
	t.Helper()
	req, err := http.NewRequest("POST", e.srv.URL+"/v1/detection-rules", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/yaml")
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("POST rule: %d %s", res.StatusCode, b)
	}
	r := resp{Status: res.StatusCode, Raw: b}
	if err := json.Unmarshal(b, &r.Body); err != nil {
		t.Fatal(err)
	}
	return r.data()
}

// datasetLines returns the lines of a file of ../shared/datasets as
// artifacts of source, each with the timestamp given (the file's lines
// name no year), or with none when ts is "" (the line's own time is the
// event's).
func datasetLines(t testing.TB, rel, source, ts string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "datasets", rel))
	if err != nil {
		t.Skipf("no datasets: %v", err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if sc.Text() != "" {
			a := map[string]any{"source": source, "raw": sc.Text()}
			if ts != "" {
				a["timestamp"] = ts
			}
			out = append(out, a)
		}
	}
	return out
}

// sigmaObservations returns the org's observations a Sigma rule made.
func sigmaObservations(t testing.TB, e *env, tok string) []map[string]any {
	t.Helper()
	d := must(t, call(t, e, "GET", "/v1/observations?limit=1000", tok, nil), http.StatusOK).data()
	var out []map[string]any
	for _, x := range d["observations"].([]any) {
		o := x.(map[string]any)
		if strings.HasPrefix(o["description"].(string), "Sigma rule ") {
			out = append(out, o)
		}
	}
	return out
}

const noIdentRule = `title: SSH connection without identification
id: 0b3f3c8e-7c1e-4e33-9d8a-5c4d3e2f1a10
status: experimental
level: high
tags:
    - attack.reconnaissance
logsource:
    product: linux
    service: sshd
detection:
    keywords:
        - 'Did not receive identification string'
    condition: keywords
`

// TestDetectionRuleObservations: the rule matches the one line of the
// Elastic integration's auth.log that says so (real lines), making one
// observation of the rule's level and tag, naming the rule and keyed by
// the address; another org's identical lines make none; a disabled rule
// and a filter naming the rule leave new lines alone.
func TestDetectionRuleObservations(t *testing.T) {
	e := newDetectingEnv(t)
	tok := e.token("org-a", "signals:manage", "incidents:read", "observations:read")
	other := e.token("org-b", "signals:manage", "incidents:read", "observations:read")
	rule := postRule(t, e, tok, noIdentRule)
	lines := datasetLines(t, "auth/integrations-test-auth.log", "auth", "2026-02-19T15:30:04Z")

	postArtifacts(t, e, tok, lines...)
	obs := sigmaObservations(t, e, tok)
	if len(obs) != 1 {
		t.Fatalf("%d Sigma observations, want 1: %v", len(obs), obs)
	}
	o := obs[0]
	desc := o["description"].(string)
	if o["type"] != "recon" || o["severity"] != "high" || len(o["artifact_ids"].([]any)) != 1 ||
		!strings.Contains(desc, "SSH connection without identification") || !strings.Contains(desc, "0b3f3c8e-7c1e-4e33-9d8a-5c4d3e2f1a10") ||
		!strings.Contains(desc, rule["id"].(string)) || !strings.Contains(desc, "from 89.160.20.156") || o["incident_id"] == nil {
		t.Errorf("observation = %v", o)
	}
	art := must(t, call(t, e, "GET", "/v1/artifacts/"+o["artifact_ids"].([]any)[0].(string), tok, nil), http.StatusOK).data()
	if !strings.Contains(art["raw"].(string), "Did not receive identification string from 89.160.20.156") {
		t.Errorf("observation's artifact = %v", art["raw"])
	}
	inc := must(t, call(t, e, "GET", "/v1/incidents/"+o["incident_id"].(string), tok, nil), http.StatusOK).data()
	if inc["title"] != "SSH connection without identification" {
		t.Errorf("incident title %v", inc["title"])
	}

	// Another org: no rule, no Sigma observation.
	postArtifacts(t, e, other, lines...)
	if n := len(sigmaObservations(t, e, other)); n != 0 {
		t.Errorf("org-b has %d Sigma observations from org-a's rule", n)
	}

	// Disabled, the rule matches nothing new (lines a day later).
	must(t, call(t, e, "POST", "/v1/detection-rules/"+rule["id"].(string)+"/disable", tok, nil), http.StatusOK)
	later := datasetLines(t, "auth/integrations-test-auth.log", "auth", "2026-02-20T15:30:04Z")
	postArtifacts(t, e, tok, later...)
	if n := len(sigmaObservations(t, e, tok)); n != 1 {
		t.Errorf("%d Sigma observations after disabling, want still 1", n)
	}

	// Enabled again with a filter naming it for that address: nothing.
	must(t, call(t, e, "POST", "/v1/detection-rules/"+rule["id"].(string)+"/enable", tok, nil), http.StatusOK)
	postRule(t, e, tok, `title: Our scanner
logsource:
    product: linux
    service: sshd
filter:
    rules:
        - 0b3f3c8e-7c1e-4e33-9d8a-5c4d3e2f1a10
    selection:
        src_ip: 89.160.20.156
    condition: selection
`)
	evenLater := datasetLines(t, "auth/integrations-test-auth.log", "auth", "2026-02-22T15:30:04Z")
	postArtifacts(t, e, tok, evenLater...)
	if n := len(sigmaObservations(t, e, tok)); n != 1 {
		t.Errorf("%d Sigma observations with the filter, want still 1", n)
	}
}

// The correlation equivalent of the built-in SSH brute force (docs/sigma.md):
// a base rule of one failed attempt (disabled: it does not report on its
// own), counted per source address, five in five minutes.
const sshAttemptRule = `title: SSH authentication attempt failed
name: ssh_failed_attempt
logsource:
    product: linux
    service: sshd
detection:
    attempt:
        event.outcome: failure
        vigil.attempt.role: attempt
    condition: attempt
`

const sshBruteForceCorrelation = `title: SSH brute force (Sigma correlation)
id: 4e1e7a3c-2f0b-4d5e-8a61-9c3b2d1f0e77
level: medium
tags:
    - attack.credential-access
    - attack.t1110
correlation:
    type: event_count
    rules:
        - ssh_failed_attempt
    group-by:
        - source.ip
    timespan: 5m
    condition:
        gte: 5
`

// TestSigmaBruteForceCorrelation: over loghub's Linux log (real sshd
// lines, year-less: their times are parsed), the correlation reports the
// addresses the built-in brute force does, each burst one observation.
func TestSigmaBruteForceCorrelation(t *testing.T) {
	e := newDetectingEnv(t)
	tok := e.token("org-a", "signals:manage", "incidents:read", "observations:read")
	base := postRule(t, e, tok, sshAttemptRule)
	must(t, call(t, e, "POST", "/v1/detection-rules/"+base["id"].(string)+"/disable", tok, nil), http.StatusOK)
	postRule(t, e, tok, sshBruteForceCorrelation)

	lines := datasetLines(t, "auth/loghub-Linux_2k.log", "auth", "") // the lines' own times
	for i := 0; i < len(lines); i += 500 {
		postArtifacts(t, e, tok, lines[i:min(i+500, len(lines))]...)
	}
	d := must(t, call(t, e, "GET", "/v1/observations?limit=1000", tok, nil), http.StatusOK).data()
	builtin, sigmaKeys := map[string]int{}, map[string]int{}
	for _, x := range d["observations"].([]any) {
		o := x.(map[string]any)
		desc := o["description"].(string)
		switch {
		case strings.HasPrefix(desc, "SSH brute force: "):
			builtin[firstAddress(desc)]++
		case strings.HasPrefix(desc, "Sigma correlation SSH brute force"):
			sigmaKeys[firstAddress(desc[strings.Index(desc, " for "):])]++
			if o["type"] != "auth" || o["severity"] != "medium" {
				t.Errorf("correlation observation %v", o)
			}
		case strings.HasPrefix(desc, "Sigma rule SSH authentication attempt failed"):
			t.Errorf("the disabled base rule reported: %s", desc)
		}
	}
	t.Logf("observations per address: built-in %v, Sigma correlation %v", builtin, sigmaKeys)
	if len(builtin) == 0 || !mapsEqual(builtin, sigmaKeys) {
		t.Errorf("observations per address: built-in %v, Sigma correlation %v", builtin, sigmaKeys)
	}
}

// firstAddress returns the first IPv4 address in s.
func firstAddress(s string) string {
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return !(r == '.' || r >= '0' && r <= '9') }) {
		if strings.Count(f, ".") == 3 {
			return strings.Trim(f, ".")
		}
	}
	return ""
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestTemporalOrderedAccepted: a temporal_ordered correlation (failed
// attempts, then a success, from one address) is accepted and runs; one
// whose condition asks for fewer than all its rules, or names a rule
// twice, is a 400 naming the field.
func TestTemporalOrderedAccepted(t *testing.T) {
	e := newDetectingEnv(t)
	tok := e.token("org-a", "signals:manage")
	postRule(t, e, tok, sshAttemptRule)
	postRule(t, e, tok, "title: SSH login accepted\nname: ssh_accepted\nlogsource:\n    product: linux\n    service: sshd\n"+
		"detection:\n    ok:\n        event.outcome: success\n    condition: ok\n")
	ordered := func(rules []any, cond map[string]any) map[string]any {
		c := map[string]any{"type": "temporal_ordered", "rules": rules, "group-by": []any{"source.ip"}, "timespan": "1h"}
		if cond != nil {
			c["condition"] = cond
		}
		return map[string]any{"title": "SSH failures then a success", "level": "high", "correlation": c}
	}
	r := must(t, call(t, e, "POST", "/v1/detection-rules", tok, ordered([]any{"ssh_failed_attempt", "ssh_accepted"}, nil)), http.StatusCreated).data()
	got := must(t, call(t, e, "GET", "/v1/detection-rules/"+r["id"].(string), tok, nil), http.StatusOK).data()
	if got["kind"] != "correlation" || got["enabled"] != true {
		t.Errorf("stored rule %v", got)
	}
	wantError(t, call(t, e, "POST", "/v1/detection-rules", tok, ordered([]any{"ssh_failed_attempt", "ssh_accepted"}, map[string]any{"gte": 1})),
		http.StatusBadRequest, "correlation.condition.gte")
	wantError(t, call(t, e, "POST", "/v1/detection-rules", tok, ordered([]any{"ssh_accepted", "ssh_failed_attempt", "ssh_accepted"}, nil)),
		http.StatusBadRequest, "correlation.rules[2]")
}
