package api_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/vlogs"
)

// TestArtifactTenancy: an org never reaches another's artifacts through
// any endpoint that reads them: search (by words, an address, a list),
// the artifact by id, an incident's artifacts, an observation naming
// them, and a detection rule tried over stored artifacts. On
// VictoriaLogs (VIGIL_TEST_API_STORE=vlogs) each org is a tenant of its
// own.
func TestArtifactTenancy(t *testing.T) {
	e := newEnv(t)
	a, b := e.token("org-a", "admin"), e.token("org-b", "admin")
	day := time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)
	aLines := datasetLines(t, "auth/fail2ban-sshd.log", "auth", day)[:20]
	bLines := datasetLines(t, "auth/loghub-Linux_2k.log", "auth", day)[:20]
	aIDs := strs(postArtifacts(t, e, a, aLines...)["ids"])
	bIDs := strs(postArtifacts(t, e, b, bLines...)["ids"])
	aObs := createObs(t, e, a, map[string]any{"type": "auth", "description": "brute force", "artifact_ids": aIDs[:5]})
	aInc := aObs["incident_id"].(string)

	// A's lines read "sshd[…]: error: PAM: Authentication failure for …";
	// B's (loghub) do not hold "PAM:" nor A's hosts.
	for _, q := range []string{"imago", `"Authentication failure for stefanor"`, "2606:2800:220:1:248:1893:25c8:1946", "stefan*"} {
		r := must(t, call(t, e, "GET", "/v1/artifacts?query="+url.QueryEscape(q), b, nil), http.StatusOK)
		if n := total(t, r); n != 0 {
			t.Errorf("B's search %s: total %d, want 0", q, n)
		}
		if n := total(t, must(t, call(t, e, "GET", "/v1/artifacts?query="+url.QueryEscape(q), a, nil), http.StatusOK)); n == 0 {
			t.Errorf("A's search %s finds nothing: the test proves nothing", q)
		}
	}
	r := must(t, call(t, e, "GET", "/v1/artifacts?limit=1000", b, nil), http.StatusOK)
	if got := idsOf(items(t, r, "artifacts")); total(t, r) != len(bIDs) || !sameIDs(got, bIDs) {
		t.Errorf("B's list: total %d, %d ids; want B's %d", total(t, r), len(got), len(bIDs))
	}
	for _, id := range aIDs[:3] {
		wantError(t, call(t, e, "GET", "/v1/artifacts/"+id, b, nil), http.StatusNotFound, "")
		must(t, call(t, e, "GET", "/v1/artifacts/"+id, a, nil), http.StatusOK)
	}
	wantError(t, call(t, e, "GET", "/v1/incidents/"+aInc+"/artifacts", b, nil), http.StatusNotFound, "")
	if got := items(t, must(t, call(t, e, "GET", "/v1/incidents/"+aInc+"/artifacts", a, nil), http.StatusOK), "artifacts"); len(got) != 5 {
		t.Errorf("A's incident lists %d artifacts, want 5", len(got))
	}
	wantError(t, call(t, e, "POST", "/v1/observations", b, map[string]any{"type": "auth", "description": "theft", "artifact_ids": aIDs[:1]}),
		http.StatusBadRequest, "artifact_ids")

	rule := "title: sshd on imago\nlogsource:\n    product: linux\ndetection:\n    kw:\n        - 'imago sshd'\n    condition: kw\n"
	window := map[string]any{"rule": rule, "from": time.Now().Add(-48 * time.Hour).UTC().Format(time.RFC3339), "to": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}
	tb := must(t, call(t, e, "POST", "/v1/detection-rules/test", b, window), http.StatusOK).data()
	if m, _ := tb["matches"].([]any); len(m) != 0 || tb["total"] != float64(len(bIDs)) {
		t.Errorf("B's rule test over stored artifacts: %d matches of %v scanned; want none of B's %d", len(m), tb["total"], len(bIDs))
	}
	ta := must(t, call(t, e, "POST", "/v1/detection-rules/test", a, window), http.StatusOK).data()
	if m, _ := ta["matches"].([]any); len(m) == 0 {
		t.Errorf("A's rule test matches none of A's lines: the rule proves nothing")
	}

	if vs, ok := e.store.(*vlogs.Store); ok {
		ta, err := vs.Tenant(t.Context(), "org-a")
		if err != nil {
			t.Fatal(err)
		}
		tb, err := vs.Tenant(t.Context(), "org-b")
		if err != nil {
			t.Fatal(err)
		}
		if ta == tb || ta.Account == 0 || tb.Project == 0 {
			t.Errorf("tenants %v and %v: want two of their own, neither the default 0:0", ta, tb)
		}
	}
}

// sameIDs reports whether a and b hold the same ids.
func sameIDs(a, b []string) bool {
	return eqStrings(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
