package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/vigil-soc/vigil"
)

// incidentOf returns the single-incident response of id.
func incidentOf(t testing.TB, e *env, tok, id string) map[string]any {
	t.Helper()
	return must(t, call(t, e, "GET", "/v1/incidents/"+id, tok, nil), http.StatusOK).data()
}

func obsIDs(inc map[string]any) []string {
	var out []string
	for _, o := range inc["observations"].([]any) {
		out = append(out, o.(map[string]any)["id"].(string))
	}
	return out
}

// TestCorrelationThroughAPI: observations created through the API are
// correlated exactly as detected ones (docs/api.md, Observations).
func TestCorrelationThroughAPI(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "admin")
	// Nodes set up in the store, named by id (node_test.go names them by value).
	nodes, err := e.store.UpsertNodes(context.Background(), "org-a", []vigil.NodeRef{
		{Type: vigil.NodeIP, Value: "203.0.113.9", Key: true},
		{Type: vigil.NodeDomain, Value: "evil.example.com", Key: true},
		{Type: vigil.NodeIP, Value: "198.51.100.1", Key: true},
	})
	if err != nil || len(nodes) != 3 {
		t.Fatalf("UpsertNodes: %v %v", nodes, err)
	}
	n1, n2, n3 := nodes[0].ID, nodes[1].ID, nodes[2].ID
	arts := strs(postArtifacts(t, e, tok,
		map[string]any{"source": "custom", "raw": "corr one"},
		map[string]any{"source": "custom", "raw": "corr two"},
		map[string]any{"source": "custom", "raw": "corr three"})["ids"])
	a1, a2, a3 := arts[0], arts[1], arts[2]

	t.Run("no node_ids opens its own incident", func(t *testing.T) {
		o1 := createObs(t, e, tok, map[string]any{"type": "auth", "description": "alone one"})
		o2 := createObs(t, e, tok, map[string]any{"type": "auth", "description": "alone one"})
		if o1["incident_id"] == o2["incident_id"] {
			t.Fatalf("two observations without nodes share incident %v", o1["incident_id"])
		}
		inc := incidentOf(t, e, tok, o1["incident_id"].(string))
		if got := obsIDs(inc); !eqStrings(got, []string{o1["id"].(string)}) {
			t.Errorf("observations = %v", got)
		}
		if inc["title"] != "auth: alone one" || inc["status"] != float64(1) || inc["severity"] != "medium" {
			t.Errorf("incident = %v", inc)
		}
	})

	t.Run("artifact_count counts distinct artifacts", func(t *testing.T) {
		o := createObs(t, e, tok, map[string]any{"type": "auth", "description": "with artifacts", "artifact_ids": []string{a1, a2, a2, a3, a1}})
		if got := strs(o["artifact_ids"]); !eqStrings(got, []string{a1, a2, a3}) {
			t.Errorf("artifact_ids = %v, want duplicates dropped in order", got)
		}
		inc := incidentOf(t, e, tok, o["incident_id"].(string))
		if inc["artifact_count"] != float64(3) {
			t.Errorf("artifact_count = %v, want 3", inc["artifact_count"])
		}
		// A partial PUT of artifact_ids recomputes the count.
		must(t, call(t, e, "PUT", "/v1/observations/"+o["id"].(string), tok, map[string]any{"artifact_ids": []string{a2}}), http.StatusOK)
		if got := incidentOf(t, e, tok, o["incident_id"].(string))["artifact_count"]; got != float64(1) {
			t.Errorf("artifact_count after PUT = %v, want 1", got)
		}
	})

	var incA string
	t.Run("shared node joins one incident; severity is the highest", func(t *testing.T) {
		low := createObs(t, e, tok, map[string]any{"type": "network", "description": "scan", "severity": "low", "node_ids": []string{n1}, "artifact_ids": []string{a1}})
		incA = low["incident_id"].(string)
		if got := incidentOf(t, e, tok, incA)["severity"]; got != "low" {
			t.Errorf("severity = %v, want low", got)
		}
		high := createObs(t, e, tok, map[string]any{"type": "auth", "description": "brute force", "severity": "high", "node_ids": []string{n1}, "artifact_ids": []string{a2}})
		if high["incident_id"] != incA {
			t.Fatalf("observation sharing node joined %v, want %v", high["incident_id"], incA)
		}
		med := createObs(t, e, tok, map[string]any{"type": "auth", "description": "one more", "severity": "medium", "node_ids": []string{n1, n2}})
		if med["incident_id"] != incA {
			t.Fatalf("observation sharing node joined %v, want %v", med["incident_id"], incA)
		}
		inc := incidentOf(t, e, tok, incA)
		if inc["severity"] != "high" || inc["artifact_count"] != float64(2) || inc["node_count"] != float64(2) {
			t.Errorf("incident = severity %v artifacts %v nodes %v, want high 2 2", inc["severity"], inc["artifact_count"], inc["node_count"])
		}
		if got := obsIDs(inc); len(got) != 3 || !contains(got, low["id"].(string)) || !contains(got, high["id"].(string)) || !contains(got, med["id"].(string)) {
			t.Errorf("observations = %v", got)
		}
		seen := map[string]string{}
		for _, n := range inc["nodes"].([]any) {
			m := n.(map[string]any)
			seen[m["id"].(string)] = m["type"].(string) + "/" + m["value"].(string)
		}
		if seen[n1] != "IP/203.0.113.9" || seen[n2] != "Domain/evil.example.com" || len(seen) != 2 {
			t.Errorf("nodes = %v", seen)
		}
		list := must(t, call(t, e, "GET", "/v1/incidents?severity=high", tok, nil), http.StatusOK)
		if got := idsOf(items(t, list, "incidents")); !eqStrings(got, []string{incA}) {
			t.Errorf("high incidents = %v", got)
		}
	})

	var incB string
	t.Run("no shared node opens another incident", func(t *testing.T) {
		o := createObs(t, e, tok, map[string]any{"type": "network", "description": "elsewhere", "node_ids": []string{n3}})
		incB = o["incident_id"].(string)
		if incB == incA || incB == "" {
			t.Fatalf("incident %q, want a new one", incB)
		}
		if got := incidentOf(t, e, tok, incA)["node_count"]; got != float64(2) {
			t.Errorf("first incident node_count = %v", got)
		}
	})

	t.Run("severity recomputed on update and delete", func(t *testing.T) {
		crit := createObs(t, e, tok, map[string]any{"type": "malware", "description": "c2", "severity": "critical", "node_ids": []string{n3}})
		if crit["incident_id"] != incB {
			t.Fatalf("joined %v, want %v", crit["incident_id"], incB)
		}
		if got := incidentOf(t, e, tok, incB)["severity"]; got != "critical" {
			t.Errorf("severity = %v, want critical", got)
		}
		must(t, call(t, e, "PUT", "/v1/observations/"+crit["id"].(string), tok, map[string]any{"severity": "high"}), http.StatusOK)
		if got := incidentOf(t, e, tok, incB)["severity"]; got != "high" {
			t.Errorf("severity after PUT = %v, want high", got)
		}
		must(t, call(t, e, "DELETE", "/v1/observations/"+crit["id"].(string), tok, nil), http.StatusOK)
		inc := incidentOf(t, e, tok, incB)
		if inc["severity"] != "medium" || len(obsIDs(inc)) != 1 {
			t.Errorf("after DELETE: severity %v observations %v, want medium and 1", inc["severity"], obsIDs(inc))
		}
	})

	t.Run("closed incidents never grow", func(t *testing.T) {
		must(t, call(t, e, "PUT", "/v1/incidents/"+incA+"/status", tok, map[string]any{"status": 3}), http.StatusOK)
		before := len(obsIDs(incidentOf(t, e, tok, incA)))
		o := createObs(t, e, tok, map[string]any{"type": "network", "description": "after close", "node_ids": []string{n1}})
		if o["incident_id"] == incA {
			t.Fatalf("observation joined the resolved incident %s", incA)
		}
		if after := len(obsIDs(incidentOf(t, e, tok, incA))); after != before {
			t.Errorf("resolved incident grew from %d to %d observations", before, after)
		}
	})

	t.Run("incidents list total", func(t *testing.T) {
		r := must(t, call(t, e, "GET", "/v1/incidents", tok, nil), http.StatusOK)
		// 2 lone + 1 with artifacts + incA + incB + 1 after close.
		if n := total(t, r); n != 6 {
			t.Errorf("total = %d, want 6; %v", n, idsOf(items(t, r, "incidents")))
		}
	})
}
