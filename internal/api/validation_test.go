package api_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/vigil-soc/vigil"
)

// absentID is a well-formed UUID that names no record.
const absentID = "0190a1b2-0000-7000-8000-000000000001"

// badCase is one request that must be refused with 400 naming field.
type badCase struct {
	name, method, path string
	body               any
	field              string
}

func runBad(t *testing.T, e *env, tok string, cases []badCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(strings.TrimPrefix(tc.name, "/"), func(t *testing.T) {
			wantError(t, call(t, e, tc.method, tc.path, tok, tc.body), http.StatusBadRequest, tc.field)
		})
	}
}

func TestListQueryValidation(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "admin")
	var cases []badCase
	lists := []string{"/observations", "/incidents", "/artifacts", "/classification-rules", "/roles"}
	for _, p := range prefixes {
		for _, l := range lists {
			for _, q := range []struct{ query, field string }{
				{"limit=0", "limit"}, {"limit=1001", "limit"}, {"limit=abc", "limit"}, {"limit=-5", "limit"}, {"limit=1.5", "limit"},
				{"offset=-1", "offset"}, {"offset=x", "offset"}, {"limit=10&offset=-3", "offset"},
				{"limit=99999999999999999999", "limit"}, {"offset=1e3", "offset"},
			} {
				cases = append(cases, badCase{p + l + "?" + q.query, "GET", p + l + "?" + q.query, nil, q.field})
			}
		}
		for _, l := range lists[:3] {
			for _, q := range []struct{ query, field string }{
				{"start=yesterday", "start"},
				{"start=2024-01-01", "start"},
				{"start=" + url.QueryEscape("2024-01-01 10:00:00"), "start"},
				{"end=2024-13-01T00:00:00Z", "end"},
				{"start=2024-02-01T00:00:00Z&end=2024-01-01T00:00:00Z", "start"},
			} {
				cases = append(cases, badCase{p + l + "?" + q.query, "GET", p + l + "?" + q.query, nil, q.field})
			}
		}
		for _, l := range lists[:2] {
			for _, v := range []string{"urgent", "HIGH", "info"} {
				cases = append(cases, badCase{p + l + "?severity=" + v, "GET", p + l + "?severity=" + v, nil, "severity"})
			}
		}
		for _, v := range []string{"0", "6", "x", "1.5", "-1"} {
			cases = append(cases, badCase{p + "/incidents?status=" + v, "GET", p + "/incidents?status=" + v, nil, "status"})
		}
		for _, q := range []struct{ query, field string }{
			{"source=Bad%20Source", "source"},
			{"source=" + strings.Repeat("a", 65), "source"},
			{"query=" + url.QueryEscape(`"unterminated`), "query"},
			{"query=" + url.QueryEscape("alpha OR"), "query"},
			{"query=" + url.QueryEscape("!!!"), "query"},
		} {
			cases = append(cases, badCase{p + "/artifacts?" + q.query, "GET", p + "/artifacts?" + q.query, nil, q.field})
		}
	}
	runBad(t, e, tok, cases)

	t.Run("valid bounds", func(t *testing.T) {
		for _, q := range []string{"limit=1", "limit=1000", "offset=0", "start=2024-01-01T00:00:00Z&end=2024-01-01T00:00:00Z",
			"start=" + url.QueryEscape("2024-01-01T00:00:00+02:00")} {
			for _, l := range lists[:3] {
				must(t, call(t, e, "GET", "/v1"+l+"?"+q, tok, nil), http.StatusOK)
			}
		}
	})
}

func TestObservationBodyValidation(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "admin")
	other := postArtifacts(t, e, e.token("org-b", "signals:write"), map[string]any{"source": "custom", "raw": "org b"})
	otherArt := strs(other["ids"])[0]
	own := postArtifacts(t, e, tok, map[string]any{"source": "custom", "raw": "org a"})
	ownArt := strs(own["ids"])[0]
	obs := createObs(t, e, tok, map[string]any{"type": "auth", "description": "original", "severity": "low", "artifact_ids": []string{ownArt}})
	obsPath := "/v1/observations/" + obs["id"].(string)

	ok := func(extra map[string]any) map[string]any {
		m := map[string]any{"type": "auth", "description": "d"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	without := func(k string) map[string]any { m := ok(nil); delete(m, k); return m }
	P := "/v1/observations"
	runBad(t, e, tok, []badCase{
		{"type missing", "POST", P, without("type"), "type"},
		{"type with space and capitals", "POST", P, ok(map[string]any{"type": "Bad Type"}), "type"},
		{"type empty", "POST", P, ok(map[string]any{"type": ""}), "type"},
		{"type leading digit", "POST", P, ok(map[string]any{"type": "1net"}), "type"},
		{"type 65 chars", "POST", P, ok(map[string]any{"type": "a" + strings.Repeat("b", 64)}), "type"},
		{"type not a string", "POST", P, ok(map[string]any{"type": 5}), "type"},
		{"description missing", "POST", P, without("description"), "description"},
		{"description empty", "POST", P, ok(map[string]any{"description": ""}), "description"},
		{"description 10001 chars", "POST", P, ok(map[string]any{"description": strings.Repeat("x", 10001)}), "description"},
		{"description 10001 runes", "POST", P, ok(map[string]any{"description": strings.Repeat("é", 10001)}), "description"},
		{"severity urgent", "POST", P, ok(map[string]any{"severity": "urgent"}), "severity"},
		{"severity upper case", "POST", P, ok(map[string]any{"severity": "HIGH"}), "severity"},
		{"node_ids malformed", "POST", P, ok(map[string]any{"node_ids": []string{"not-a-uuid"}}), "node_ids[0]"},
		{"node_ids non-existent", "POST", P, ok(map[string]any{"node_ids": []string{absentID}}), "node_ids"},
		{"node_ids not an array", "POST", P, ok(map[string]any{"node_ids": "abc"}), "node_ids"},
		{"artifact_ids of another org", "POST", P, ok(map[string]any{"artifact_ids": []string{otherArt}}), "artifact_ids"},
		{"artifact_ids own then another org's", "POST", P, ok(map[string]any{"artifact_ids": []string{ownArt, otherArt}}), "artifact_ids"},
		{"artifact_ids non-existent", "POST", P, ok(map[string]any{"artifact_ids": []string{absentID}}), "artifact_ids"},
		{"artifact_ids malformed", "POST", P, ok(map[string]any{"artifact_ids": []string{ownArt, "zzz"}}), "artifact_ids[1]"},
		{"unknown field", "POST", P, ok(map[string]any{"colour": "red"}), "colour"},
		{"unknown empty-named field", "POST", P, ok(map[string]any{"": "x"}), "body"},
		{"malformed JSON", "POST", P, `{"type": "auth", "description":`, "body"},
		{"invalid JSON token", "POST", P, `{type: auth}`, "body"},
		{"body an array", "POST", P, `[{"type":"auth","description":"d"}]`, "body"},
		{"body a string", "POST", P, `"auth"`, "body"},
		{"body a number", "POST", P, `42`, "body"},
		{"empty body", "POST", P, ``, "body"},
		{"two JSON values", "POST", P, `{"type":"auth","description":"d"} {}`, "body"},

		{"put type", "PUT", obsPath, map[string]any{"type": "Bad Type"}, "type"},
		{"put description empty", "PUT", obsPath, map[string]any{"description": ""}, "description"},
		{"put severity", "PUT", obsPath, map[string]any{"severity": "urgent"}, "severity"},
		{"put node_ids non-existent", "PUT", obsPath, map[string]any{"node_ids": []string{absentID}}, "node_ids"},
		{"put artifact_ids of another org", "PUT", obsPath, map[string]any{"artifact_ids": []string{otherArt}}, "artifact_ids"},
		{"put unknown field", "PUT", obsPath, map[string]any{"id": absentID}, "id"},
		{"put malformed", "PUT", obsPath, `{"severity":`, "body"},
		{"put body an array", "PUT", obsPath, `[]`, "body"},
	})

	t.Run("refused writes changed nothing", func(t *testing.T) {
		got := must(t, call(t, e, "GET", obsPath, tok, nil), http.StatusOK).data()
		if got["type"] != "auth" || got["description"] != "original" || got["severity"] != "low" ||
			!eqStrings(strs(got["artifact_ids"]), []string{ownArt}) {
			t.Errorf("observation = %v", got)
		}
		r := must(t, call(t, e, "GET", P, tok, nil), http.StatusOK)
		if total(t, r) != 1 {
			t.Errorf("total = %d after refused POSTs", total(t, r))
		}
	})
	t.Run("bounds accepted", func(t *testing.T) {
		for name, body := range map[string]map[string]any{
			"type 64 chars":           ok(map[string]any{"type": "a" + strings.Repeat("b", 63)}),
			"type with ._-":           ok(map[string]any{"type": "net.scan_v2-x"}),
			"description 10000":       ok(map[string]any{"description": strings.Repeat("x", 10000)}),
			"description 10000 runes": ok(map[string]any{"description": strings.Repeat("é", 10000)}),
			"duplicate artifact ids":  ok(map[string]any{"artifact_ids": []string{ownArt, ownArt}}),
		} {
			r := call(t, e, "POST", P, tok, body)
			if r.Status != http.StatusCreated {
				t.Errorf("%s: status %d; %s", name, r.Status, r.Raw)
			}
		}
	})
}

func TestIncidentStatusValidation(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "admin")
	id := newIncident(t, e, tok, "medium")
	P := "/v1/incidents/" + id + "/status"
	runBad(t, e, tok, []badCase{
		{"status 0", "PUT", P, map[string]any{"status": 0}, "status"},
		{"status 6", "PUT", P, map[string]any{"status": 6}, "status"},
		{"status -1", "PUT", P, map[string]any{"status": -1}, "status"},
		{"status string", "PUT", P, map[string]any{"status": "3"}, "status"},
		{"status name", "PUT", P, map[string]any{"status": "Resolved"}, "status"},
		{"status float", "PUT", P, map[string]any{"status": 3.5}, "status"},
		{"status 3.0", "PUT", P, `{"status": 3.0}`, "status"},
		{"status exponent", "PUT", P, `{"status": 3e0}`, "status"},
		{"status bool", "PUT", P, map[string]any{"status": true}, "status"},
		{"status null", "PUT", P, `{"status": null}`, "status"},
		{"status missing", "PUT", P, map[string]any{}, "status"},
		{"unknown field", "PUT", P, map[string]any{"status": 3, "comment": "done"}, "comment"},
		{"malformed", "PUT", P, `{"status": 3`, "body"},
		{"body an array", "PUT", P, `[3]`, "body"},
		{"body a number", "PUT", P, `3`, "body"},
		{"get id not a uuid", "GET", "/v1/incidents/not-a-uuid", nil, "id"},
		{"get id truncated uuid", "GET", "/v1/incidents/" + id[:35], nil, "id"},
		{"put id not a uuid", "PUT", "/v1/incidents/not-a-uuid/status", map[string]any{"status": 3}, "id"},
		{"api prefix id not a uuid", "GET", "/api/v1/incidents/12345", nil, "id"},
	})
	t.Run("refused changes left the incident New", func(t *testing.T) {
		d := must(t, call(t, e, "GET", "/v1/incidents/"+id, tok, nil), http.StatusOK).data()
		if d["status"] != float64(1) || len(d["history"].([]any)) != 0 {
			t.Errorf("incident = %v", d)
		}
	})
	t.Run("well-formed unknown id is 404", func(t *testing.T) {
		wantError(t, call(t, e, "GET", "/v1/incidents/"+absentID, tok, nil), http.StatusNotFound, "")
		wantError(t, call(t, e, "PUT", "/v1/incidents/"+absentID+"/status", tok, map[string]any{"status": 3}), http.StatusNotFound, "")
	})
	t.Run("other resources answer a malformed id with 404", func(t *testing.T) {
		for _, path := range []string{"/v1/observations/nope", "/v1/classification-rules/nope", "/v1/roles/nope"} {
			wantError(t, call(t, e, "GET", path, tok, nil), http.StatusNotFound, "")
		}
	})
}

func TestArtifactBatchValidation(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "signals:read", "signals:write")
	P := "/v1/artifacts"
	item := `{"source":"s","raw":"x"}`
	runBad(t, e, tok, []badCase{
		{"artifacts missing", "POST", P, map[string]any{}, "artifacts"},
		{"artifacts null", "POST", P, `{"artifacts": null}`, "artifacts"},
		{"artifacts empty", "POST", P, map[string]any{"artifacts": []any{}}, "artifacts"},
		{"artifacts not an array", "POST", P, map[string]any{"artifacts": "x"}, "artifacts"},
		{"artifacts an object", "POST", P, map[string]any{"artifacts": map[string]any{"source": "s", "raw": "x"}}, "artifacts"},
		{"10001 items", "POST", P, `{"artifacts":[` + strings.Repeat(item+",", 10000) + item + `]}`, "artifacts"},
		{"unknown top-level field", "POST", P, map[string]any{"artifacts": []any{map[string]any{"source": "s", "raw": "x"}}, "org": "b"}, "org"},
		{"body an array", "POST", P, `[` + item + `]`, "body"},
		{"malformed", "POST", P, `{"artifacts":[`, "body"},
	})
	t.Run("refused batches stored nothing", func(t *testing.T) {
		if n := total(t, must(t, call(t, e, "GET", P, tok, nil), http.StatusOK)); n != 0 {
			t.Errorf("total = %d", n)
		}
	})
	t.Run("10000 items accepted", func(t *testing.T) {
		r := must(t, call(t, e, "POST", P, tok, `{"artifacts":[`+strings.Repeat(item+",", 9999)+item+`]}`), http.StatusAccepted)
		if r.data()["accepted"] != float64(10000) || len(strs(r.data()["ids"])) != 10000 {
			t.Errorf("accepted = %v", r.data()["accepted"])
		}
	})
}

func TestArtifactItemRejection(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "signals:write")
	good := map[string]any{"source": "custom", "raw": "good line"}
	cases := []struct {
		name  string
		item  any
		field string
	}{
		{"source upper case", map[string]any{"source": "Suricata", "raw": "x"}, "source"},
		{"source 65 chars", map[string]any{"source": strings.Repeat("s", 65), "raw": "x"}, "source"},
		{"source missing", map[string]any{"raw": "x"}, "source"},
		{"source empty", map[string]any{"source": "", "raw": "x"}, "source"},
		{"source with space", map[string]any{"source": "my source", "raw": "x"}, "source"},
		{"source not a string", map[string]any{"source": 7, "raw": "x"}, "source"},
		{"raw empty", map[string]any{"source": "s", "raw": ""}, "raw"},
		{"raw missing", map[string]any{"source": "s"}, "raw"},
		{"raw over 1 MiB", map[string]any{"source": "s", "raw": strings.Repeat("r", 1<<20+1)}, "raw"},
		{"raw not a string", map[string]any{"source": "s", "raw": map[string]any{"a": 1}}, "raw"},
		{"timestamp not RFC 3339", map[string]any{"source": "s", "raw": "x", "timestamp": "yesterday"}, "timestamp"},
		{"timestamp date only", map[string]any{"source": "s", "raw": "x", "timestamp": "2024-01-01"}, "timestamp"},
		{"timestamp without zone", map[string]any{"source": "s", "raw": "x", "timestamp": "2024-01-01T10:00:00"}, "timestamp"},
		{"timestamp a number", map[string]any{"source": "s", "raw": "x", "timestamp": 1700000000}, "timestamp"},
		{"metadata a string", map[string]any{"source": "s", "raw": "x", "metadata": "k=v"}, "metadata"},
		{"metadata an array", map[string]any{"source": "s", "raw": "x", "metadata": []any{1}}, "metadata"},
		{"metadata a number", map[string]any{"source": "s", "raw": "x", "metadata": 5}, "metadata"},
		{"metadata over 64 KiB", map[string]any{"source": "s", "raw": "x", "metadata": map[string]any{"k": strings.Repeat("v", 64<<10)}}, "metadata"},
		{"timestamp before 1900", map[string]any{"source": "s", "raw": "x", "timestamp": "1899-12-31T23:59:59Z"}, "timestamp"},
		{"timestamp from 2200", map[string]any{"source": "s", "raw": "x", "timestamp": "2200-01-01T00:00:00Z"}, "timestamp"},
		{"unknown item field", map[string]any{"source": "s", "raw": "x", "host": "h"}, "host"},
		{"item a string", "just text", "artifact"},
		{"item a number", 42, "artifact"},
		{"item null", nil, "artifact"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := must(t, call(t, e, "POST", "/v1/artifacts", tok, map[string]any{"artifacts": []any{good, tc.item, good}}), http.StatusAccepted)
			d := r.data()
			if d["accepted"] != float64(2) || d["rejected"] != float64(1) || len(strs(d["ids"])) != 2 {
				t.Fatalf("accepted/rejected = %v/%v; %s", d["accepted"], d["rejected"], r.Raw)
			}
			errs, _ := d["errors"].([]any)
			if len(errs) != 1 {
				t.Fatalf("errors = %v", errs)
			}
			er := errs[0].(map[string]any)
			if er["index"] != float64(1) || er["field"] != tc.field {
				t.Errorf("error = %v, want index 1 field %s", er, tc.field)
			}
			if reason, _ := er["reason"].(string); reason == "" {
				t.Errorf("error without reason: %v", er)
			}
		})
	}
	t.Run("bounds accepted", func(t *testing.T) {
		d := postArtifacts(t, e, tok,
			map[string]any{"source": strings.Repeat("s", 64), "raw": "x"},
			map[string]any{"source": "a.b_c-9", "raw": strings.Repeat("r", 1<<20)},
			map[string]any{"source": "s", "raw": "x", "metadata": nil},
			map[string]any{"source": "s", "raw": "x", "metadata": map[string]any{}},
			map[string]any{"source": "s", "raw": "x", "timestamp": "2024-01-01T10:00:00.123456+05:30"},
		)
		if d["accepted"] != float64(5) || d["rejected"] != float64(0) {
			t.Errorf("accepted/rejected = %v/%v; errors %v", d["accepted"], d["rejected"], d["errors"])
		}
	})
}

// A batch of which nothing was accepted is a 400 naming each item's
// problem: a 2xx would let a shipper count its lines as delivered.
func TestArtifactBatchAllRejected(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "signals:write", "signals:read")
	cases := []struct {
		name   string
		items  []any
		fields []string
	}{
		{"one bad item", []any{map[string]any{"source": "Bad Source", "raw": "x"}}, []string{"artifacts[0].source"}},
		{"every item bad", []any{
			map[string]any{"raw": "x"},
			map[string]any{"source": "s", "raw": ""},
			"text",
			map[string]any{"source": "s", "raw": "x", "timestamp": "yesterday"},
		}, []string{"artifacts[0].source", "artifacts[1].raw", "artifacts[2]", "artifacts[3].timestamp"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := must(t, call(t, e, "POST", "/v1/artifacts", tok, map[string]any{"artifacts": tc.items}), http.StatusBadRequest)
			if r.errCode() != "invalid_argument" {
				t.Errorf("code = %q, want invalid_argument; %s", r.errCode(), r.Raw)
			}
			var got []string
			for _, d := range r.details() {
				got = append(got, d["field"].(string))
				if issue, _ := d["issue"].(string); issue == "" {
					t.Errorf("detail without issue: %v", d)
				}
			}
			if !slices.Equal(got, tc.fields) {
				t.Errorf("detail fields = %v, want %v", got, tc.fields)
			}
		})
	}
	// Nothing of a refused batch was stored.
	r := must(t, call(t, e, "GET", "/v1/artifacts", tok, nil), http.StatusOK)
	if total := r.data()["total"]; total != float64(0) {
		t.Errorf("after refused batches, %v artifacts stored, want 0", total)
	}
}

func TestRuleValidation(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "signals:manage")
	rule := createRule(t, e, tok, map[string]any{"name": "keep", "priority": 4, "severity": "low"})
	RP := "/v1/classification-rules/" + rule["id"].(string)
	ok := func(extra map[string]any) map[string]any {
		m := map[string]any{"name": "n", "priority": 1, "severity": "high"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	without := func(k string) map[string]any { m := ok(nil); delete(m, k); return m }
	leaf := func(field, op string, value any) map[string]any {
		return map[string]any{"field": field, "op": op, "value": value}
	}
	sev := leaf("incident.severity", "eq", "high")
	P := "/v1/classification-rules"
	runBad(t, e, tok, []badCase{
		{"name missing", "POST", P, without("name"), "name"},
		{"name empty", "POST", P, ok(map[string]any{"name": ""}), "name"},
		{"name blank", "POST", P, ok(map[string]any{"name": "   "}), "name"},
		{"name 201 chars", "POST", P, ok(map[string]any{"name": strings.Repeat("n", 201)}), "name"},
		{"priority -1", "POST", P, ok(map[string]any{"priority": -1}), "priority"},
		{"priority missing", "POST", P, without("priority"), "priority"},
		{"priority 1.5", "POST", P, ok(map[string]any{"priority": 1.5}), "priority"},
		{"priority string", "POST", P, ok(map[string]any{"priority": "1"}), "priority"},
		{"severity bad", "POST", P, ok(map[string]any{"severity": "urgent"}), "severity"},
		{"severity missing", "POST", P, without("severity"), "severity"},
		{"enabled not a boolean", "POST", P, ok(map[string]any{"enabled": "yes"}), "enabled"},
		{"bad op", "POST", P, ok(map[string]any{"conditions": map[string]any{"all": []any{leaf("incident.severity", "bogus", "high")}}}), "conditions.all[0].op"},
		{"bad field", "POST", P, ok(map[string]any{"conditions": map[string]any{"all": []any{sev, leaf("nope", "eq", "x")}}}), "conditions.all[1].field"},
		{"bad event field", "POST", P, ok(map[string]any{"conditions": map[string]any{"any": []any{leaf("event.Source IP", "eq", "x")}}}), "conditions.any[0].field"},
		{"bad cidr value", "POST", P, ok(map[string]any{"conditions": map[string]any{"any": []any{sev, sev, leaf("node.value", "cidr", "not-a-cidr")}}}), "conditions.any[2].value"},
		{"bad regex value", "POST", P, ok(map[string]any{"conditions": map[string]any{"not": leaf("observation.description", "regex", "(")}}), "conditions.not.value"},
		{"in without array", "POST", P, ok(map[string]any{"conditions": leaf("observation.type", "in", "malware")}), "conditions.value"},
		{"value missing", "POST", P, ok(map[string]any{"conditions": map[string]any{"field": "incident.severity", "op": "eq"}}), "conditions.value"},
		{"op missing", "POST", P, ok(map[string]any{"conditions": map[string]any{"field": "incident.severity", "value": "high"}}), "conditions.op"},
		{"string op on number field", "POST", P, ok(map[string]any{"conditions": map[string]any{"all": []any{leaf("incident.artifact_count", "contains", "1")}}}), "conditions.all[0].op"},
		{"empty all", "POST", P, ok(map[string]any{"conditions": map[string]any{"all": []any{}}}), "conditions.all"},
		{"unknown key", "POST", P, ok(map[string]any{"conditions": map[string]any{"foo": 1}}), "conditions.foo"},
		{"conditions a string", "POST", P, ok(map[string]any{"conditions": "severity is high"}), "conditions"},
		{"nested path", "POST", P, ok(map[string]any{"conditions": map[string]any{"all": []any{sev, map[string]any{"any": []any{sev, map[string]any{"not": leaf("incident.severity", "eq", "urgent")}}}}}}), "conditions.all[1].any[1].not.value"},
		{"unknown field", "POST", P, ok(map[string]any{"action": "close"}), "action"},
		{"malformed", "POST", P, `{"name":"n",`, "body"},
		{"put priority -1", "PUT", RP, map[string]any{"priority": -1}, "priority"},
		{"put name empty", "PUT", RP, map[string]any{"name": ""}, "name"},
		{"put bad op", "PUT", RP, map[string]any{"conditions": map[string]any{"all": []any{leaf("incident.severity", "approx", "high")}}}, "conditions.all[0].op"},
		{"put severity", "PUT", RP, map[string]any{"severity": "severe"}, "severity"},
	})
	t.Run("refused writes changed nothing", func(t *testing.T) {
		r := must(t, call(t, e, "GET", P, tok, nil), http.StatusOK)
		list := items(t, r, "rules")
		if len(list) != 1 || list[0]["name"] != "keep" || list[0]["priority"] != float64(4) || list[0]["severity"] != "low" {
			t.Errorf("rules = %s", r.Raw)
		}
	})
	t.Run("bounds accepted", func(t *testing.T) {
		createRule(t, e, tok, ok(map[string]any{"name": strings.Repeat("n", 200), "priority": 0}))
		createRule(t, e, tok, ok(map[string]any{"conditions": map[string]any{}}))
		createRule(t, e, tok, ok(map[string]any{"conditions": map[string]any{"all": []any{sev, leaf("node.value", "cidr", []any{"10.0.0.0/8", "192.0.2.1"}), leaf("incident.artifact_count", "gte", 3)}}}))
	})
}

func TestRoleValidation(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "admin")
	role := createRole(t, e, tok, "responders", "incidents:write")
	other := createRole(t, e, tok, "auditors", "observer:read")
	RP := "/v1/roles/" + other["id"].(string)
	P := "/v1/roles"
	runBad(t, e, tok, []badCase{
		{"name missing", "POST", P, map[string]any{"permissions": []string{}}, "name"},
		{"name empty", "POST", P, map[string]any{"name": "", "permissions": []string{}}, "name"},
		{"name blank", "POST", P, map[string]any{"name": "   ", "permissions": []string{}}, "name"},
		{"name 101 chars", "POST", P, map[string]any{"name": strings.Repeat("r", 101), "permissions": []string{}}, "name"},
		{"permissions missing", "POST", P, map[string]any{"name": "x"}, "permissions"},
		{"permissions unknown", "POST", P, map[string]any{"name": "x", "permissions": []string{"foo:bar"}}, "permissions[0]"},
		{"permissions second unknown", "POST", P, map[string]any{"name": "x", "permissions": []string{"incidents:read", "foo:bar"}}, "permissions[1]"},
		{"permissions case", "POST", P, map[string]any{"name": "x", "permissions": []string{"Admin"}}, "permissions[0]"},
		{"permissions a string", "POST", P, map[string]any{"name": "x", "permissions": "admin"}, "permissions"},
		{"unknown field", "POST", P, map[string]any{"name": "x", "permissions": []string{}, "description": "d"}, "description"},
		{"put unknown permission", "PUT", RP, map[string]any{"permissions": []string{"root"}}, "permissions[0]"},
		{"put name empty", "PUT", RP, map[string]any{"name": ""}, "name"},
	})
	conflicts := []struct {
		name, method, path string
		body               map[string]any
	}{
		{"duplicate name", "POST", P, map[string]any{"name": "responders", "permissions": []string{"admin"}}},
		{"duplicate after trimming", "POST", P, map[string]any{"name": "  responders ", "permissions": []string{}}},
		{"rename onto an existing name", "PUT", RP, map[string]any{"name": "responders"}},
	}
	for _, tc := range conflicts {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, call(t, e, tc.method, tc.path, tok, tc.body), http.StatusConflict, "")
		})
	}
	t.Run("refused writes changed nothing", func(t *testing.T) {
		r := must(t, call(t, e, "GET", P, tok, nil), http.StatusOK)
		got := map[string][]string{}
		for _, it := range items(t, r, "roles") {
			got[it["name"].(string)] = strs(it["permissions"])
		}
		if len(got) != 2 || !eqStrings(got["responders"], []string{"incidents:write"}) || !eqStrings(got["auditors"], []string{"observer:read"}) {
			t.Errorf("roles = %v", got)
		}
		_ = role
	})
	t.Run("bounds accepted", func(t *testing.T) {
		createRole(t, e, tok, strings.Repeat("r", 100))
		createRole(t, e, tok, "all", catalog...)
		must(t, call(t, e, "PUT", RP, tok, map[string]any{"name": "auditors"}), http.StatusOK) // renaming to itself
	})
}

func TestSettingsValidation(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "signals:manage")
	P := "/v1/enrichment-settings"
	runBad(t, e, tok, []badCase{
		{"rate_limit -1", "PUT", P, map[string]any{"rate_limit": -1}, "rate_limit"},
		{"rate_limit 100001", "PUT", P, map[string]any{"rate_limit": 100001}, "rate_limit"},
		{"rate_limit string", "PUT", P, map[string]any{"rate_limit": "10"}, "rate_limit"},
		{"rate_limit float", "PUT", P, map[string]any{"rate_limit": 1.5}, "rate_limit"},
		{"cache_ttl_hours 8761", "PUT", P, map[string]any{"cache_ttl_hours": 8761}, "cache_ttl_hours"},
		{"cache_ttl_hours -1", "PUT", P, map[string]any{"cache_ttl_hours": -1}, "cache_ttl_hours"},
		{"internal_networks nope", "PUT", P, map[string]any{"internal_networks": []string{"nope"}}, "internal_networks[0]"},
		{"internal_networks second bad", "PUT", P, map[string]any{"internal_networks": []string{"10.0.0.0/8", "300.1.1.1/8"}}, "internal_networks[1]"},
		{"internal_networks bare address", "PUT", P, map[string]any{"internal_networks": []string{"10.0.0.1"}}, "internal_networks[0]"},
		{"internal_networks a string", "PUT", P, map[string]any{"internal_networks": "10.0.0.0/8"}, "internal_networks"},
		{"geoip_enabled string", "PUT", P, map[string]any{"geoip_enabled": "yes"}, "geoip_enabled"},
		{"unknown field", "PUT", P, map[string]any{"rate_limit": 5, "shodan_enabled": true}, "shodan_enabled"},
		{"malformed", "PUT", P, `{"rate_limit": }`, "body"},
		{"body an array", "PUT", P, `[]`, "body"},
		{"valid field with invalid one", "PUT", P, map[string]any{"whois_enabled": true, "rate_limit": -1}, "rate_limit"},
	})
	t.Run("refused writes changed nothing", func(t *testing.T) {
		got := must(t, call(t, e, "GET", P, tok, nil), http.StatusOK).data()
		nets := strs(got["internal_networks"])
		sort.Strings(nets)
		if got["rate_limit"] != float64(60) || got["cache_ttl_hours"] != float64(24) || got["whois_enabled"] != false ||
			got["geoip_enabled"] != true || !eqStrings(nets, defaultNetworks) {
			t.Errorf("settings = %v", got)
		}
	})
}

func TestTransportErrors(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "admin")
	obs := createObs(t, e, tok, map[string]any{"type": "auth", "description": "d"})
	inc := obs["incident_id"].(string)
	huge := func(prefix, suffix string) string {
		return prefix + strings.Repeat("a", 10<<20+1) + suffix
	}

	t.Run("body over 10 MiB", func(t *testing.T) {
		cases := []struct{ name, method, path, body string }{
			{"observation", "POST", "/v1/observations", huge(`{"type":"auth","description":"`, `"}`)},
			{"artifacts", "POST", "/v1/artifacts", huge(`{"artifacts":[{"source":"s","raw":"`, `"}]}`)},
			{"settings", "PUT", "/api/v1/enrichment-settings", huge(`{"internal_networks":["`, `"]}`)},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				wantError(t, call(t, e, tc.method, tc.path, tok, tc.body), http.StatusRequestEntityTooLarge, "")
			})
		}
		if n := total(t, must(t, call(t, e, "GET", "/v1/artifacts", tok, nil), http.StatusOK)); n != 0 {
			t.Errorf("a refused batch stored %d artifacts", n)
		}
	})

	t.Run("content type", func(t *testing.T) {
		body := []byte(`{"type":"auth","description":"ct"}`)
		cases := []struct {
			name, ct string
			want     int
		}{
			{"text/xml", "text/xml", http.StatusUnsupportedMediaType},
			{"application/xml", "application/xml", http.StatusUnsupportedMediaType},
			{"form", "application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
			{"garbage", "not a media type", http.StatusUnsupportedMediaType},
			{"json", "application/json", http.StatusCreated},
			{"json with charset", "application/json; charset=utf-8", http.StatusCreated},
			{"+json", "application/vnd.vigil+json", http.StatusCreated},
			{"text/plain", "text/plain", http.StatusCreated},
			{"none", "", http.StatusCreated},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				hdr := map[string]string{"Authorization": "Bearer " + tok}
				if tc.ct != "" {
					hdr["Content-Type"] = tc.ct
				}
				r := rawCall(t, e, "POST", "/v1/observations", hdr, body)
				if tc.want >= 400 {
					wantError(t, r, tc.want, "")
				} else {
					must(t, r, tc.want)
				}
			})
		}
		t.Run("text/xml on settings", func(t *testing.T) {
			r := rawCall(t, e, "PUT", "/v1/enrichment-settings", map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "text/xml"}, []byte(`{"rate_limit":1}`))
			wantError(t, r, http.StatusUnsupportedMediaType, "")
		})
	})

	t.Run("unknown route", func(t *testing.T) {
		for _, path := range []string{"/v1/nope", "/v2/observations", "/v1/observations/" + obs["id"].(string) + "/extra", "/api/v2/incidents", "/"} {
			for _, tk := range []string{tok, ""} {
				wantError(t, call(t, e, "GET", path, tk, nil), http.StatusNotFound, "")
			}
		}
	})

	t.Run("wrong method", func(t *testing.T) {
		cases := []struct {
			method, path string
			allow        []string
		}{
			{"PATCH", "/v1/incidents", []string{"GET", "HEAD"}},
			{"POST", "/v1/incidents", []string{"GET", "HEAD"}},
			{"DELETE", "/v1/incidents/" + inc, []string{"GET", "HEAD", "PUT"}},
			{"GET", "/v1/incidents/" + inc + "/status", []string{"PUT"}},
			{"PATCH", "/v1/observations/" + obs["id"].(string), []string{"DELETE", "GET", "HEAD", "PUT"}},
			{"PUT", "/api/v1/artifacts", []string{"GET", "HEAD", "POST"}},
			{"DELETE", "/v1/roles", []string{"GET", "HEAD", "POST"}},
			{"POST", "/v1/enrichment-settings", []string{"GET", "HEAD", "PUT"}},
			{"DELETE", "/api/v1/classification-rules", []string{"GET", "HEAD", "POST"}},
		}
		for _, tc := range cases {
			for _, tk := range []string{tok, ""} {
				t.Run(tc.method+" "+tc.path, func(t *testing.T) {
					r := call(t, e, tc.method, tc.path, tk, nil)
					wantError(t, r, http.StatusMethodNotAllowed, "")
					var allow []string
					for _, m := range strings.Split(r.Header.Get("Allow"), ",") {
						allow = append(allow, strings.TrimSpace(m))
					}
					sort.Strings(allow)
					if !eqStrings(allow, tc.allow) {
						t.Errorf("Allow = %q, want %v", r.Header.Get("Allow"), tc.allow)
					}
				})
			}
		}
	})
	t.Run("wrong method changed nothing", func(t *testing.T) {
		d := must(t, call(t, e, "GET", "/v1/incidents/"+inc, tok, nil), http.StatusOK).data()
		if d["id"] != inc {
			t.Errorf("incident = %v", d)
		}
	})
}

// TestCheckOrder: route (404/405) → token (401) → permission (403) → id
// and body validation (400) → existence (404), as docs/api.md states.
func TestCheckOrder(t *testing.T) {
	e := newEnv(t)
	admin := e.token("org-a", "admin")
	none := e.token("org-a", "signals:read")
	inc := newIncident(t, e, admin, "low")
	cases := []struct {
		name, method, path, tok string
		body                    any
		status                  int
		field                   string
	}{
		{"405 before 401", "PATCH", "/v1/incidents/" + inc, "", `{`, 405, ""},
		{"404 route before 401", "GET", "/v1/incidentz", "", nil, 404, ""},
		{"401 before 403", "POST", "/v1/observations", "garbage", `{`, 401, ""},
		{"401 before 400 id", "GET", "/v1/incidents/not-a-uuid", "", nil, 401, ""},
		{"403 before 400 body", "POST", "/v1/observations", none, `{`, 403, ""},
		{"403 before 400 id", "PUT", "/v1/incidents/not-a-uuid/status", none, map[string]any{"status": 9}, 403, ""},
		{"403 before 404", "GET", "/v1/observations/" + absentID, none, nil, 403, ""},
		{"403 before 400 settings", "PUT", "/v1/enrichment-settings", none, map[string]any{"rate_limit": -1}, 403, ""},
		{"400 id before 400 body", "PUT", "/v1/incidents/not-a-uuid/status", admin, map[string]any{"status": 9}, 400, "id"},
		{"400 body before 404 incident", "PUT", "/v1/incidents/" + absentID + "/status", admin, map[string]any{"status": 9}, 400, "status"},
		{"400 body before 404 observation", "PUT", "/v1/observations/" + absentID, admin, map[string]any{"severity": "urgent"}, 400, "severity"},
		{"400 body before 404 rule", "PUT", "/v1/classification-rules/" + absentID, admin, map[string]any{"priority": -1}, 400, "priority"},
		{"400 body before 404 role", "PUT", "/v1/roles/" + absentID, admin, map[string]any{"permissions": []string{"x"}}, 400, "permissions[0]"},
		{"404 for a valid body", "PUT", "/v1/incidents/" + absentID + "/status", admin, map[string]any{"status": 2}, 404, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, call(t, e, tc.method, tc.path, tc.tok, tc.body), tc.status, tc.field)
		})
	}
}

func TestObservationRefsOfAnotherOrg(t *testing.T) {
	e := newEnv(t)
	a, b := e.token("org-a", "admin"), e.token("org-b", "admin")
	nodesB, err := e.store.UpsertNodes(context.Background(), "org-b", []vigil.NodeRef{{Type: vigil.NodeIP, Value: "192.0.2.50", Key: true}})
	if err != nil {
		t.Fatal(err)
	}
	nodesA, err := e.store.UpsertNodes(context.Background(), "org-a", []vigil.NodeRef{{Type: vigil.NodeIP, Value: "192.0.2.50", Key: true}})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, call(t, e, "POST", "/v1/observations", a, map[string]any{"type": "auth", "description": "d", "node_ids": []string{nodesB[0].ID}}), http.StatusBadRequest, "node_ids")
	wantError(t, call(t, e, "POST", "/v1/observations", b, map[string]any{"type": "auth", "description": "d", "node_ids": []string{nodesA[0].ID}}), http.StatusBadRequest, "node_ids")
	o := createObs(t, e, a, map[string]any{"type": "auth", "description": "d", "node_ids": []string{nodesA[0].ID}})
	if !eqStrings(strs(o["node_ids"]), []string{nodesA[0].ID}) {
		t.Errorf("node_ids = %v", o["node_ids"])
	}
	wantError(t, call(t, e, "PUT", "/v1/observations/"+o["id"].(string), a, map[string]any{"node_ids": []string{nodesB[0].ID}}), http.StatusBadRequest, "node_ids")
}
