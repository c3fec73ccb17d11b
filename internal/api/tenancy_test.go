package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestTenancy: org B never sees, changes or learns about org A's records.
func TestTenancy(t *testing.T) {
	e := newEnv(t)
	a, b := e.token("org-a", "admin"), e.token("org-b", "admin")

	aObs := createObs(t, e, a, map[string]any{"type": "malware", "description": "tenancymarker beacon", "severity": "high"})
	aInc := aObs["incident_id"].(string)
	aComment := must(t, call(t, e, "POST", "/v1/incidents/"+aInc+"/comments", a, map[string]any{"body": "org a note"}), http.StatusCreated).data()["id"].(string)
	aRule := createRule(t, e, a, map[string]any{"name": "a-rule", "priority": 1, "severity": "high"})
	aRole := createRole(t, e, a, "a-role", "incidents:read")
	postArtifacts(t, e, a, map[string]any{"source": "custom", "raw": "tenancymarker secret of org a 198.51.100.77"})
	must(t, call(t, e, "PUT", "/v1/enrichment-settings", a, map[string]any{"rate_limit": 7, "whois_enabled": true}), http.StatusOK)

	bObs := createObs(t, e, b, map[string]any{"type": "auth", "description": "org b login"})
	bInc := bObs["incident_id"].(string)
	bRule := createRule(t, e, b, map[string]any{"name": "b-rule", "priority": 1, "severity": "low"})
	bRole := createRole(t, e, b, "b-role", "signals:read")
	bArts := postArtifacts(t, e, b, map[string]any{"source": "custom", "raw": "org b own line"})

	for _, p := range prefixes {
		foreign := []struct {
			name, method, path string
			body               any
		}{
			{"get observation", "GET", "/observations/" + aObs["id"].(string), nil},
			{"put observation", "PUT", "/observations/" + aObs["id"].(string), map[string]any{"severity": "low"}},
			{"delete observation", "DELETE", "/observations/" + aObs["id"].(string), nil},
			{"get incident", "GET", "/incidents/" + aInc, nil},
			{"put incident status", "PUT", "/incidents/" + aInc + "/status", map[string]any{"status": 4}},
			{"get incident history", "GET", "/incidents/" + aInc + "/history", nil},
			{"assign incident", "PUT", "/incidents/" + aInc, map[string]any{"assignee": "mallory"}},
			{"list comments", "GET", "/incidents/" + aInc + "/comments", nil},
			{"comment", "POST", "/incidents/" + aInc + "/comments", map[string]any{"body": "hi"}},
			{"edit comment", "PUT", "/incidents/" + aInc + "/comments/" + aComment, map[string]any{"body": "defaced"}},
			{"delete comment", "DELETE", "/incidents/" + aInc + "/comments/" + aComment, nil},
			{"get rule", "GET", "/classification-rules/" + aRule["id"].(string), nil},
			{"put rule", "PUT", "/classification-rules/" + aRule["id"].(string), map[string]any{"priority": 9}},
			{"delete rule", "DELETE", "/classification-rules/" + aRule["id"].(string), nil},
			{"get role", "GET", "/roles/" + aRole["id"].(string), nil},
			{"put role", "PUT", "/roles/" + aRole["id"].(string), map[string]any{"permissions": []string{"admin"}}},
			{"delete role", "DELETE", "/roles/" + aRole["id"].(string), nil},
		}
		for _, tc := range foreign {
			t.Run(strings.TrimPrefix(p, "/")+"/B cannot "+tc.name, func(t *testing.T) {
				r := call(t, e, tc.method, p+tc.path, b, tc.body)
				wantError(t, r, http.StatusNotFound, "")
			})
		}
	}

	t.Run("A's records are unchanged", func(t *testing.T) {
		o := must(t, call(t, e, "GET", "/v1/observations/"+aObs["id"].(string), a, nil), http.StatusOK).data()
		if o["severity"] != "high" || o["org_id"] != "org-a" {
			t.Errorf("observation = %v", o)
		}
		i := must(t, call(t, e, "GET", "/v1/incidents/"+aInc, a, nil), http.StatusOK).data()
		if i["status"] != float64(1) || len(i["history"].([]any)) != 0 {
			t.Errorf("incident = %v", i)
		}
		r := must(t, call(t, e, "GET", "/v1/classification-rules/"+aRule["id"].(string), a, nil), http.StatusOK).data()
		if r["priority"] != float64(1) {
			t.Errorf("rule = %v", r)
		}
		ro := must(t, call(t, e, "GET", "/v1/roles/"+aRole["id"].(string), a, nil), http.StatusOK).data()
		if !eqStrings(strs(ro["permissions"]), []string{"incidents:read"}) {
			t.Errorf("role = %v", ro)
		}
	})

	lists := []struct {
		name, path, key string
		want            []string
	}{
		{"observations", "/v1/observations", "observations", []string{bObs["id"].(string)}},
		{"incidents", "/v1/incidents", "incidents", []string{bInc}},
		{"incidents by severity of A", "/v1/incidents?severity=high", "incidents", []string{}},
		{"artifacts", "/v1/artifacts", "artifacts", strs(bArts["ids"])},
		{"artifacts by A's text", "/v1/artifacts?query=tenancymarker", "artifacts", []string{}},
		{"artifacts by A's address", "/v1/artifacts?query=" + url.QueryEscape("198.51.100.77"), "artifacts", []string{}},
		{"rules", "/v1/classification-rules", "rules", []string{bRule["id"].(string)}},
		{"roles", "/v1/roles", "roles", []string{bRole["id"].(string)}},
	}
	for _, tc := range lists {
		t.Run("B's list of "+tc.name, func(t *testing.T) {
			r := must(t, call(t, e, "GET", tc.path, b, nil), http.StatusOK)
			if got := idsOf(items(t, r, tc.key)); !eqStrings(got, tc.want) {
				t.Errorf("ids = %v, want %v", got, tc.want)
			}
			if got := total(t, r); got != len(tc.want) {
				t.Errorf("total = %d, want %d", got, len(tc.want))
			}
		})
	}
	t.Run("A still finds its artifact", func(t *testing.T) {
		r := must(t, call(t, e, "GET", "/v1/artifacts?query=tenancymarker", a, nil), http.StatusOK)
		if total(t, r) != 1 || items(t, r, "artifacts")[0]["org_id"] != "org-a" {
			t.Errorf("A's search: %s", r.Raw)
		}
	})

	t.Run("settings are per org", func(t *testing.T) {
		sb := must(t, call(t, e, "GET", "/v1/enrichment-settings", b, nil), http.StatusOK).data()
		if sb["rate_limit"] != float64(60) || sb["whois_enabled"] != false {
			t.Errorf("B's settings = %v, want defaults", sb)
		}
		must(t, call(t, e, "PUT", "/v1/enrichment-settings", b, map[string]any{"rate_limit": 500}), http.StatusOK)
		sa := must(t, call(t, e, "GET", "/v1/enrichment-settings", a, nil), http.StatusOK).data()
		if sa["rate_limit"] != float64(7) || sa["whois_enabled"] != true {
			t.Errorf("A's settings = %v after B's PUT", sa)
		}
	})

	t.Run("a role name of A is free in B", func(t *testing.T) {
		createRole(t, e, b, "a-role", "signals:read")
	})
}

// TestOrgIDFromTokenOnly: an org_id in a body is refused as an unknown
// field (the server's choice), and every record carries the token's org.
func TestOrgIDFromTokenOnly(t *testing.T) {
	e := newEnv(t)
	a := e.token("org-a", "admin")
	b := e.token("org-b", "admin")
	cases := []struct {
		name, method, path string
		body               map[string]any
	}{
		{"observation", "POST", "/v1/observations", map[string]any{"type": "auth", "description": "x", "org_id": "org-b"}},
		{"rule", "POST", "/v1/classification-rules", map[string]any{"name": "r", "priority": 1, "severity": "low", "org_id": "org-b"}},
		{"role", "POST", "/v1/roles", map[string]any{"name": "r", "permissions": []string{}, "org_id": "org-b"}},
		{"settings", "PUT", "/v1/enrichment-settings", map[string]any{"rate_limit": 1, "org_id": "org-b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, call(t, e, tc.method, tc.path, a, tc.body), http.StatusBadRequest, "org_id")
		})
	}
	t.Run("observation update", func(t *testing.T) {
		o := createObs(t, e, a, map[string]any{"type": "auth", "description": "mine"})
		wantError(t, call(t, e, "PUT", "/v1/observations/"+o["id"].(string), a, map[string]any{"org_id": "org-b"}), http.StatusBadRequest, "org_id")
		got := must(t, call(t, e, "GET", "/v1/observations/"+o["id"].(string), a, nil), http.StatusOK).data()
		if got["org_id"] != "org-a" {
			t.Errorf("org_id = %v", got["org_id"])
		}
	})
	t.Run("artifact item", func(t *testing.T) {
		d := postArtifacts(t, e, a,
			map[string]any{"source": "custom", "raw": "orgfield one", "org_id": "org-b"},
			map[string]any{"source": "custom", "raw": "orgfield two"})
		if d["accepted"] != float64(1) || d["rejected"] != float64(1) {
			t.Fatalf("accepted/rejected = %v/%v", d["accepted"], d["rejected"])
		}
		er := d["errors"].([]any)[0].(map[string]any)
		if er["index"] != float64(0) || er["field"] != "org_id" {
			t.Errorf("error = %v", er)
		}
		r := must(t, call(t, e, "GET", "/v1/artifacts?query=orgfield", a, nil), http.StatusOK)
		if list := items(t, r, "artifacts"); len(list) != 1 || list[0]["org_id"] != "org-a" || list[0]["raw"] != "orgfield two" {
			t.Errorf("A's artifacts = %s", r.Raw)
		}
		if total(t, must(t, call(t, e, "GET", "/v1/artifacts?query=orgfield", b, nil), http.StatusOK)) != 0 {
			t.Errorf("org-b sees an artifact sent with its org_id")
		}
	})
	t.Run("nothing landed in org-b", func(t *testing.T) {
		for _, path := range []string{"/v1/observations", "/v1/classification-rules", "/v1/roles", "/v1/incidents"} {
			if n := total(t, must(t, call(t, e, "GET", path, b, nil), http.StatusOK)); n != 0 {
				t.Errorf("%s of org-b: total %d", path, n)
			}
		}
		if got := must(t, call(t, e, "GET", "/v1/enrichment-settings", b, nil), http.StatusOK).data()["rate_limit"]; got != float64(60) {
			t.Errorf("org-b rate_limit = %v", got)
		}
	})
	t.Run("created records carry the token's org", func(t *testing.T) {
		o := createObs(t, e, a, map[string]any{"type": "auth", "description": "x"})
		r := createRule(t, e, a, map[string]any{"name": "r", "priority": 1, "severity": "low"})
		ro := createRole(t, e, a, "r")
		for _, m := range []map[string]any{o, r, ro} {
			if m["org_id"] != "org-a" {
				t.Errorf("org_id = %v in %v", m["org_id"], m)
			}
		}
		inc := must(t, call(t, e, "GET", "/v1/incidents/"+o["incident_id"].(string), a, nil), http.StatusOK).data()
		if inc["org_id"] != "org-a" {
			t.Errorf("incident org_id = %v", inc["org_id"])
		}
	})
}
