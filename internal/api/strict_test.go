package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestBodiesStrictJSON: encoding/json matches member names without regard
// to case and takes the last of a repeated name; the API does neither. A
// name in the wrong case is an unknown field, a repeated name is refused,
// each as a 400 naming the field (an item of a batch: that item refused).
func TestBodiesStrictJSON(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "admin")
	inc := newIncident(t, e, tok, "low")
	obs := createObs(t, e, tok, map[string]any{"type": "auth", "description": "d"})
	cases := []struct {
		name, method, path, body, field string
	}{
		{"Artifacts", "POST", "/v1/artifacts", `{"Artifacts":[{"source":"s","raw":"x"}]}`, "Artifacts"},
		{"artifacts twice", "POST", "/v1/artifacts", `{"artifacts":[{"source":"s","raw":"x"}],"artifacts":[{"source":"s","raw":"y"}]}`, "artifacts"},
		{"status twice", "PUT", "/v1/incidents/" + inc + "/status", `{"status":2,"status":3}`, "status"},
		{"Status", "PUT", "/v1/incidents/" + inc + "/status", `{"Status":3}`, "Status"},
		{"observation TYPE", "POST", "/v1/observations", `{"type":"auth","TYPE":"x","description":"d"}`, "TYPE"},
		{"observation description twice", "PUT", "/v1/observations/" + obs["id"].(string), `{"description":"a","description":"b"}`, "description"},
		{"rule name twice", "POST", "/v1/classification-rules", `{"name":"a","name":"b","priority":1,"severity":"low"}`, "name"},
		{"rule conditions key twice", "POST", "/v1/classification-rules",
			`{"name":"a","priority":1,"severity":"low","conditions":{"field":"incident.severity","op":"eq","op":"ne","value":"low"}}`, "conditions.op"},
		{"role Permissions", "POST", "/v1/roles", `{"name":"r","Permissions":["admin"]}`, "Permissions"},
		{"settings rate_limit twice", "PUT", "/v1/enrichment-settings", `{"rate_limit":1,"rate_limit":100000}`, "rate_limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, call(t, e, tc.method, tc.path, tok, tc.body), http.StatusBadRequest, tc.field)
		})
	}

	items := []struct {
		name, item, field string
	}{
		{"RAW", `{"source":"s","RAW":"x"}`, "RAW"},
		{"Source", `{"Source":"s","raw":"x"}`, "Source"},
		{"raw twice", `{"source":"s","raw":"x","raw":"y"}`, "raw"},
		{"metadata key twice", `{"source":"s","raw":"x","metadata":{"k":1,"k":2}}`, "metadata.k"},
		{"nested metadata key twice", `{"source":"s","raw":"x","metadata":{"a":[{"k":1,"k":2}]}}`, "metadata.a[0].k"},
	}
	for _, tc := range items {
		t.Run("item "+tc.name, func(t *testing.T) {
			r := must(t, call(t, e, "POST", "/v1/artifacts", tok, `{"artifacts":[{"source":"s","raw":"ok"},`+tc.item+`]}`), http.StatusAccepted)
			d := r.data()
			errs, _ := d["errors"].([]any)
			if d["accepted"] != float64(1) || len(errs) != 1 {
				t.Fatalf("accepted %v, errors %v; want 1 accepted, item 1 refused", d["accepted"], errs)
			}
			if er := errs[0].(map[string]any); er["index"] != float64(1) || er["field"] != tc.field {
				t.Errorf("error = %v, want index 1 field %s", er, tc.field)
			}
		})
	}
	t.Run("metadata names in any case", func(t *testing.T) {
		d := postArtifacts(t, e, tok, map[string]any{"source": "s", "raw": "x", "metadata": map[string]any{"Host": "a", "host": "b", "RAW": "c"}})
		if d["accepted"] != float64(1) {
			t.Errorf("metadata with names differing in case refused: %v", d)
		}
	})
}

// TestArtifactTextAltered: invalid UTF-8 (or an unpaired UTF-16 surrogate
// escape) cannot be stored as text and is replaced by U+FFFD; the reply
// says so for each item and field, so that the sender knows the stored
// evidence differs from what it sent. Text that is valid, NUL characters
// included, is stored byte for byte and draws no warning.
func TestArtifactTextAltered(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "signals:write", "signals:read")
	body := "{\"artifacts\":[" +
		`{"source":"s","raw":"fine \u00e9 \ufffd \ud83d\ude00"},` + // valid: no warning
		"{\"source\":\"s\",\"raw\":\"caf\xe9 latin-1\"}," +
		`{"source":"s","raw":"lone \ud800 surrogate"},` +
		"{\"source\":\"s\",\"raw\":\"ok\",\"metadata\":{\"k\":\"caf\xe9\"}}," +
		`{"source":"s","raw":"nul \u0000 kept"}` +
		"]}"
	r := must(t, call(t, e, "POST", "/v1/artifacts", tok, body), http.StatusAccepted)
	d := r.data()
	if d["accepted"] != float64(5) {
		t.Fatalf("accepted = %v, want 5: %s", d["accepted"], r.Raw)
	}
	warns, _ := d["warnings"].([]any)
	var got []string
	for _, w := range warns {
		m := w.(map[string]any)
		got = append(got, fmt.Sprintf("%v:%v", m["index"], m["field"]))
		if issue, _ := m["issue"].(string); !strings.Contains(issue, "U+FFFD") {
			t.Errorf("warning %v does not say what was replaced", m)
		}
	}
	if want := "1:raw 2:raw 3:metadata"; strings.Join(got, " ") != want {
		t.Errorf("warnings = %v, want %s; %s", got, want, r.Raw)
	}
	ids := strs(d["ids"])
	stored := map[string]map[string]any{}
	for _, a := range items(t, must(t, call(t, e, "GET", "/v1/artifacts?limit=10", tok, nil), http.StatusOK), "artifacts") {
		stored[a["id"].(string)] = a
	}
	for i, want := range []string{"fine é \ufffd 😀", "caf\ufffd latin-1", "lone \ufffd surrogate", "ok", "nul \x00 kept"} {
		a := stored[ids[i]]
		if a == nil || a["raw"] != want {
			t.Errorf("item %d stored as %v, want raw %q", i, a, want)
		}
	}
	if m, _ := stored[ids[3]]["metadata"].(map[string]any); m["k"] != "caf\ufffd" {
		t.Errorf("metadata stored as %v, want k = caf\ufffd", stored[ids[3]]["metadata"])
	}
}
