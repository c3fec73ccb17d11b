package api_test

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// bruteForce ingests a real auth log (loghub's Linux 2k: a host under SSH
// brute force by several addresses, the lines with their own times) into
// org-a of a detecting server, and returns the server, a token that reads
// everything, and the incident with the most artifacts.
func bruteForce(t *testing.T) (*env, string, map[string]any) {
	t.Helper()
	e := newDetectingEnv(t)
	tok := e.token("org-a", "admin")
	lines := datasetLines(t, "auth/loghub-Linux_2k.log", "auth", "")
	for i := 0; i < len(lines); i += 500 {
		postArtifacts(t, e, tok, lines[i:min(i+500, len(lines))]...)
	}
	incs := items(t, must(t, call(t, e, "GET", "/v1/incidents?limit=1000", tok, nil), http.StatusOK), "incidents")
	var largest map[string]any
	for _, inc := range incs {
		if largest == nil || inc["artifact_count"].(float64) > largest["artifact_count"].(float64) {
			largest = inc
		}
	}
	if largest == nil {
		t.Fatal("the auth log made no incident")
	}
	return e, tok, largest
}

// pageAll reads every page of a list of limit items and returns the
// items in order, checking each page's total, limit and offset.
func pageAll(t *testing.T, e *env, tok, path, name string, limit int) (all []map[string]any, total int) {
	t.Helper()
	for offset := 0; ; offset += limit {
		r := must(t, call(t, e, "GET", path+"?limit="+strconv.Itoa(limit)+"&offset="+strconv.Itoa(offset), tok, nil), http.StatusOK)
		d := r.data()
		if d["limit"] != float64(limit) || d["offset"] != float64(offset) {
			t.Fatalf("%s page at %d: limit %v offset %v", path, offset, d["limit"], d["offset"])
		}
		n := int(d["total"].(float64))
		if offset > 0 && n != total {
			t.Fatalf("%s: total %d, then %d", path, total, n)
		}
		total = n
		page := items(t, r, name)
		all = append(all, page...)
		if want := min(limit, max(0, total-offset)); len(page) != want {
			t.Fatalf("%s page at %d: %d items, want %d of %d", path, offset, len(page), want, total)
		}
		if offset+limit >= total {
			return all, total
		}
	}
}

// TestIncidentArtifactsPaged: every artifact of a large brute force is
// reachable from its incident, a page at a time, newest first down to
// the first attempt.
func TestIncidentArtifactsPaged(t *testing.T) {
	e, tok, inc := bruteForce(t)
	id := inc["id"].(string)
	count := int(inc["artifact_count"].(float64))
	if count <= 50 {
		t.Fatalf("the largest incident has %d artifacts; the test needs more than a page of 50", count)
	}
	t.Logf("%s: %d artifacts", inc["title"], count)

	// The default page is the newest 50, as every list.
	first := must(t, call(t, e, "GET", "/v1/incidents/"+id+"/artifacts", tok, nil), http.StatusOK)
	if d := first.data(); d["total"] != float64(count) || d["limit"] != float64(50) || d["offset"] != float64(0) || len(items(t, first, "artifacts")) != 50 {
		t.Fatalf("first page: total %v limit %v offset %v, %d items; want %d, 50, 0, 50", d["total"], d["limit"], d["offset"], len(items(t, first, "artifacts")), count)
	}
	arts, total := pageAll(t, e, tok, "/api/v1/incidents/"+id+"/artifacts", "artifacts", 30)
	if total != count || len(arts) != count {
		t.Fatalf("%d artifacts read of total %d, want %d", len(arts), total, count)
	}
	if got := idsOf(arts); len(slices.Compact(slices.Sorted(slices.Values(got)))) != count {
		t.Errorf("pages overlap: %d distinct of %d", len(slices.Compact(slices.Sorted(slices.Values(got)))), count)
	}
	// Newest first by event time, down to the start of the attack.
	var times []time.Time
	for _, a := range arts {
		ts, err := time.Parse(time.RFC3339Nano, a["timestamp"].(string))
		if err != nil {
			t.Fatalf("artifact timestamp: %v", err)
		}
		times = append(times, ts)
	}
	if !slices.IsSortedFunc(times, func(a, b time.Time) int { return b.Compare(a) }) {
		t.Errorf("artifacts are not newest first")
	}
	// The same artifacts as the incident's observations name.
	obs, _ := pageAll(t, e, tok, "/v1/incidents/"+id+"/observations", "observations", 1000)
	named := map[string]bool{}
	for _, o := range obs {
		for _, a := range o["artifact_ids"].([]any) {
			named[a.(string)] = true
		}
	}
	for _, a := range arts {
		if !named[a["id"].(string)] {
			t.Errorf("artifact %s is named by no observation of the incident", a["id"])
		}
	}
	if len(named) != count {
		t.Errorf("observations name %d artifacts, the pages hold %d", len(named), count)
	}
	oldest := arts[len(arts)-1]
	if addr := strings.Fields(strings.TrimPrefix(inc["title"].(string), "SSH brute force from "))[0]; !strings.Contains(oldest["raw"].(string), addr) {
		t.Errorf("the oldest artifact %q is not the attacker's (%s)", oldest["raw"], addr)
	}
	t.Logf("first attempt: %s", oldest["raw"])
}

// TestIncidentObservationsAndNodesPaged: an incident's observations (whole)
// and nodes (with their roles) page in the order of the single-incident
// response, which keeps every one of them as before.
func TestIncidentObservationsAndNodesPaged(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "admin")
	// One address seen by 7 sensors: one incident of 7 observations and 8
	// nodes.
	var incID string
	for i := range 7 {
		o := must(t, call(t, e, "POST", "/v1/observations", tok, map[string]any{
			"type": "network", "description": "beaconing to 198.51.100.77 seen by sensor " + strconv.Itoa(i), "severity": "medium",
			"nodes": []any{map[string]any{"type": "IP", "value": "198.51.100.77"}, map[string]any{"type": "Host", "value": "sensor-" + strconv.Itoa(i)}},
		}), http.StatusCreated).data()
		if incID == "" {
			incID = o["incident_id"].(string)
		} else if o["incident_id"] != incID {
			t.Fatalf("observation %d opened another incident", i)
		}
	}
	detail := must(t, call(t, e, "GET", "/v1/incidents/"+incID, tok, nil), http.StatusOK).data()
	refs, nodes := detail["observations"].([]any), detail["nodes"].([]any)
	if len(refs) != 7 || len(nodes) != 8 {
		t.Fatalf("the single-incident response has %d observations and %d nodes, want all 7 and 8", len(refs), len(nodes))
	}

	obs, total := pageAll(t, e, tok, "/v1/incidents/"+incID+"/observations", "observations", 3)
	if total != 7 {
		t.Errorf("observations total %d, want 7", total)
	}
	for i, o := range obs {
		ref := refs[i].(map[string]any)
		if o["id"] != ref["id"] || o["description"] != ref["description"] || o["incident_id"] != incID {
			t.Errorf("observation %d = %v, want %v of the incident", i, o, ref)
		}
		if len(o["node_ids"].([]any)) != 2 {
			t.Errorf("observation %d is not whole: node_ids %v", i, o["node_ids"])
		}
	}
	got, total := pageAll(t, e, tok, "/v1/incidents/"+incID+"/nodes", "nodes", 3)
	if total != 8 {
		t.Errorf("nodes total %d, want 8", total)
	}
	for i, n := range got {
		want := nodes[i].(map[string]any)
		if n["id"] != want["id"] || n["value"] != want["value"] || n["type"] != want["type"] || n["key"] != want["key"] {
			t.Errorf("node %d = %v, want %v", i, n, want)
		}
	}
	if got[0]["value"] != "198.51.100.77" || got[0]["key"] != true {
		t.Errorf("the first node is not the address, a key node: %v", got[0])
	}

	// Bad pages and unknown incidents, as every list and incident route.
	other := e.token("org-b", "admin")
	for _, part := range []string{"observations", "nodes", "artifacts"} {
		p := "/v1/incidents/" + incID + "/" + part
		wantError(t, call(t, e, "GET", p+"?limit=0", tok, nil), http.StatusBadRequest, "limit")
		wantError(t, call(t, e, "GET", p+"?limit=1001", tok, nil), http.StatusBadRequest, "limit")
		wantError(t, call(t, e, "GET", p+"?offset=-1", tok, nil), http.StatusBadRequest, "offset")
		wantError(t, call(t, e, "GET", "/v1/incidents/not-a-uuid/"+part, tok, nil), http.StatusBadRequest, "id")
		wantError(t, call(t, e, "GET", "/v1/incidents/"+oasMissingID+"/"+part, tok, nil), http.StatusNotFound, "")
		wantError(t, call(t, e, "GET", p, other, nil), http.StatusNotFound, "")
		past := must(t, call(t, e, "GET", p+"?offset=100", tok, nil), http.StatusOK)
		if len(items(t, past, part)) != 0 {
			t.Errorf("%s past the end is not empty: %s", part, past.Raw)
		}
	}
	// An incident of API observations has no artifacts.
	if arts := must(t, call(t, e, "GET", "/v1/incidents/"+incID+"/artifacts", tok, nil), http.StatusOK); arts.data()["total"] != float64(0) {
		t.Errorf("artifacts of an incident without any: %s", arts.Raw)
	}
}
