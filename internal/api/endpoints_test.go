package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/auth"
)

// Happy paths of every endpoint, under /v1 and /api/v1.

func TestObservationsEndpoints(t *testing.T) {
	for _, p := range prefixes {
		t.Run(strings.TrimPrefix(p, "/"), func(t *testing.T) {
			e := newEnv(t)
			tok := e.token("org-a", "observations:read", "observations:write")
			create := func(body map[string]any) map[string]any {
				t.Helper()
				r := must(t, call(t, e, "POST", p+"/observations", tok, body), http.StatusCreated)
				if msg, _ := r.Body["message"].(string); !strings.Contains(strings.ToLower(msg), "created") {
					t.Errorf("create message = %q", msg)
				}
				time.Sleep(3 * time.Millisecond) // distinct created_at values
				return r.data()
			}
			o1 := create(map[string]any{"type": "network", "description": "port scan from 203.0.113.7", "severity": "low"})
			o2 := create(map[string]any{"type": "auth", "description": "failed login"})
			o3 := create(map[string]any{"type": "network", "description": "beacon", "severity": "high"})
			id1, id2, id3 := o1["id"].(string), o2["id"].(string), o3["id"].(string)

			t.Run("created fields", func(t *testing.T) {
				want := map[string]any{"org_id": "org-a", "type": "network", "description": "port scan from 203.0.113.7", "severity": "low"}
				for k, v := range want {
					if o1[k] != v {
						t.Errorf("%s = %v, want %v", k, o1[k], v)
					}
				}
				if o2["severity"] != "medium" {
					t.Errorf("default severity = %v, want medium", o2["severity"])
				}
				if n, a := strs(o1["node_ids"]), strs(o1["artifact_ids"]); len(n) != 0 || len(a) != 0 || o1["node_ids"] == nil || o1["artifact_ids"] == nil {
					t.Errorf("node_ids = %v, artifact_ids = %v, want empty arrays", o1["node_ids"], o1["artifact_ids"])
				}
				parseTS(t, o1["created_at"])
				parseTS(t, o1["updated_at"])
			})

			c1, c2, c3 := url.QueryEscape(o1["created_at"].(string)), url.QueryEscape(o2["created_at"].(string)), url.QueryEscape(o3["created_at"].(string))
			lists := []struct {
				name, query   string
				want          []string
				total         int
				limit, offset int
			}{
				{"all newest first", "", []string{id3, id2, id1}, 3, 50, 0},
				{"type", "type=network", []string{id3, id1}, 2, 50, 0},
				{"severity", "severity=medium", []string{id2}, 1, 50, 0},
				{"type and severity", "type=network&severity=high", []string{id3}, 1, 50, 0},
				{"start inclusive", "start=" + c2, []string{id3, id2}, 2, 50, 0},
				{"end exclusive", "end=" + c2, []string{id1}, 1, 50, 0},
				{"start and end", "start=" + c1 + "&end=" + c3, []string{id2, id1}, 2, 50, 0},
				{"limit", "limit=1", []string{id3}, 3, 1, 0},
				{"limit and offset", "limit=2&offset=1", []string{id2, id1}, 3, 2, 1},
				{"offset past end", "offset=3", []string{}, 3, 50, 3},
				{"no match", "type=malware", []string{}, 0, 50, 0},
				{"limit max", "limit=1000", []string{id3, id2, id1}, 3, 1000, 0},
			}
			for _, tc := range lists {
				t.Run("list/"+tc.name, func(t *testing.T) {
					r := must(t, call(t, e, "GET", p+"/observations?"+tc.query, tok, nil), http.StatusOK)
					if got := idsOf(items(t, r, "observations")); !eqStrings(got, tc.want) {
						t.Errorf("ids = %v, want %v", got, tc.want)
					}
					if got := total(t, r); got != tc.total {
						t.Errorf("total = %d, want %d", got, tc.total)
					}
					if r.data()["limit"] != float64(tc.limit) || r.data()["offset"] != float64(tc.offset) {
						t.Errorf("limit/offset = %v/%v, want %d/%d", r.data()["limit"], r.data()["offset"], tc.limit, tc.offset)
					}
				})
			}

			t.Run("get", func(t *testing.T) {
				got := must(t, call(t, e, "GET", p+"/observations/"+id2, tok, nil), http.StatusOK).data()
				for _, k := range []string{"id", "org_id", "type", "description", "severity", "created_at", "updated_at"} {
					if got[k] != o2[k] {
						t.Errorf("%s = %v, want %v", k, got[k], o2[k])
					}
				}
			})

			t.Run("partial put", func(t *testing.T) {
				r := must(t, call(t, e, "PUT", p+"/observations/"+id2, tok, map[string]any{"severity": "high"}), http.StatusOK)
				got := r.data()
				if got["severity"] != "high" || got["type"] != "auth" || got["description"] != "failed login" || got["created_at"] != o2["created_at"] {
					t.Errorf("after PUT severity: %s", r.Raw)
				}
				if parseTS(t, got["updated_at"]).Before(parseTS(t, o2["updated_at"])) {
					t.Errorf("updated_at went back: %v < %v", got["updated_at"], o2["updated_at"])
				}
				r = must(t, call(t, e, "PUT", p+"/observations/"+id2, tok, map[string]any{"description": "failed login for root"}), http.StatusOK)
				if r.data()["severity"] != "high" || r.data()["description"] != "failed login for root" || r.data()["type"] != "auth" {
					t.Errorf("after PUT description: %s", r.Raw)
				}
				got = must(t, call(t, e, "GET", p+"/observations/"+id2, tok, nil), http.StatusOK).data()
				if got["severity"] != "high" || got["description"] != "failed login for root" || got["type"] != "auth" {
					t.Errorf("GET after PUTs: %v", got)
				}
			})

			t.Run("delete", func(t *testing.T) {
				r := must(t, call(t, e, "DELETE", p+"/observations/"+id1, tok, nil), http.StatusOK)
				if d, present := r.Body["data"]; !present || d != nil {
					t.Errorf("DELETE data = %v (present %v), want null", d, present)
				}
				if msg, _ := r.Body["message"].(string); !strings.Contains(strings.ToLower(msg), "deleted") {
					t.Errorf("DELETE message = %q", msg)
				}
				wantError(t, call(t, e, "GET", p+"/observations/"+id1, tok, nil), http.StatusNotFound, "")
				wantError(t, call(t, e, "DELETE", p+"/observations/"+id1, tok, nil), http.StatusNotFound, "")
				wantError(t, call(t, e, "PUT", p+"/observations/"+id1, tok, map[string]any{"severity": "low"}), http.StatusNotFound, "")
				r = must(t, call(t, e, "GET", p+"/observations", tok, nil), http.StatusOK)
				if got := idsOf(items(t, r, "observations")); total(t, r) != 2 || !eqStrings(got, []string{id3, id2}) {
					t.Errorf("after delete: total %d ids %v", total(t, r), got)
				}
			})
		})
	}
}

func TestIncidentsEndpoints(t *testing.T) {
	for _, p := range prefixes {
		t.Run(strings.TrimPrefix(p, "/"), func(t *testing.T) {
			e := newEnv(t)
			obsTok := e.token("org-a", "observations:write")
			tok := e.token("org-a", "incidents:read", "incidents:write")
			low := createObs(t, e, obsTok, map[string]any{"type": "network", "description": "odd flow", "severity": "low"})
			time.Sleep(3 * time.Millisecond)
			crit := createObs(t, e, obsTok, map[string]any{"type": "malware", "description": "ransomware note", "severity": "critical"})
			incLow, incCrit := low["incident_id"].(string), crit["incident_id"].(string)
			if incLow == "" || incCrit == "" || incLow == incCrit {
				t.Fatalf("incident ids %q %q", incLow, incCrit)
			}

			t.Run("list", func(t *testing.T) {
				r := must(t, call(t, e, "GET", p+"/incidents", tok, nil), http.StatusOK)
				list := items(t, r, "incidents")
				if got := idsOf(list); !eqStrings(got, []string{incCrit, incLow}) || total(t, r) != 2 {
					t.Fatalf("ids %v total %d", got, total(t, r))
				}
				if r.data()["limit"] != float64(50) || r.data()["offset"] != float64(0) {
					t.Errorf("limit/offset = %v/%v", r.data()["limit"], r.data()["offset"])
				}
				inc := list[0]
				want := map[string]any{"org_id": "org-a", "severity": "critical", "status": float64(1), "status_name": "New",
					"classification": nil, "resolved_at": nil, "artifact_count": float64(0), "node_count": float64(0),
					"title": "malware: ransomware note"}
				for k, v := range want {
					if got, present := inc[k]; !present || got != v {
						t.Errorf("%s = %v (present %v), want %v", k, got, present, v)
					}
				}
				for _, k := range []string{"classified_by", "last_activity_at"} {
					if _, present := inc[k]; !present {
						t.Errorf("list item lacks %q", k)
					}
				}
				for _, k := range []string{"nodes", "observations", "history"} {
					if _, present := inc[k]; present {
						t.Errorf("list item carries %q", k)
					}
				}
				parseTS(t, inc["created_at"])
				parseTS(t, inc["updated_at"])
			})

			t.Run("detail", func(t *testing.T) {
				d := must(t, call(t, e, "GET", p+"/incidents/"+incCrit, tok, nil), http.StatusOK).data()
				if d["id"] != incCrit || d["severity"] != "critical" || d["status"] != float64(1) {
					t.Errorf("detail = %v", d)
				}
				for _, k := range []string{"nodes", "observations", "history"} {
					if _, ok := d[k].([]any); !ok {
						t.Errorf("%s = %v, want an array", k, d[k])
					}
				}
				obs, _ := d["observations"].([]any)
				if len(obs) != 1 {
					t.Fatalf("observations = %v", obs)
				}
				o := obs[0].(map[string]any)
				if o["id"] != crit["id"] || o["type"] != "malware" || o["description"] != "ransomware note" || o["severity"] != "critical" {
					t.Errorf("observation ref = %v", o)
				}
				if n := len(d["history"].([]any)); n != 0 {
					t.Errorf("history of a new incident has %d entries", n)
				}
			})

			must(t, call(t, e, "PUT", p+"/incidents/"+incLow+"/status", tok, map[string]any{"status": 2}), http.StatusOK)
			filters := []struct {
				name, query string
				want        []string
			}{
				{"severity critical", "severity=critical", []string{incCrit}},
				{"severity low", "severity=low", []string{incLow}},
				{"severity medium", "severity=medium", []string{}},
				{"status 1", "status=1", []string{incCrit}},
				{"status 2", "status=2", []string{incLow}},
				{"status 3", "status=3", []string{}},
				{"status and severity", "status=2&severity=critical", []string{}},
				{"status 2 and low", "status=2&severity=low", []string{incLow}},
				{"limit offset", "limit=1&offset=1", []string{incLow}},
				{"start after both", "start=" + url.QueryEscape(ts(time.Now().Add(time.Hour))), []string{}},
				{"end after both", "end=" + url.QueryEscape(ts(time.Now().Add(time.Hour))), []string{incCrit, incLow}},
			}
			for _, tc := range filters {
				t.Run("filter/"+tc.name, func(t *testing.T) {
					r := must(t, call(t, e, "GET", p+"/incidents?"+tc.query, tok, nil), http.StatusOK)
					if got := idsOf(items(t, r, "incidents")); !eqStrings(got, tc.want) {
						t.Errorf("ids = %v, want %v", got, tc.want)
					}
					wantTotal := len(tc.want)
					if tc.name == "limit offset" {
						wantTotal = 2
					}
					if got := total(t, r); got != wantTotal {
						t.Errorf("total = %d, want %d", got, wantTotal)
					}
				})
			}
		})
	}
}

func TestIncidentStatusEachTarget(t *testing.T) {
	e := newEnv(t)
	obsTok := e.token("org-a", "observations:write")
	tok := e.token("org-a", "incidents:read", "incidents:write")
	cases := []struct {
		status         int
		name           string
		classification any
		resolved       bool
		history        int
	}{
		{1, "New", nil, false, 0}, // a new incident is already New: no change
		{2, "Investigating", nil, false, 1},
		{3, "Resolved", "true_positive", true, 1},
		{4, "Closed", "false_positive", true, 1},
		{5, "Disrupted", "true_positive", true, 1},
	}
	for _, tc := range cases {
		for _, p := range prefixes {
			t.Run(strings.TrimPrefix(p, "/")+"/"+tc.name, func(t *testing.T) {
				id := newIncident(t, e, obsTok, "medium")
				r := must(t, call(t, e, "PUT", p+"/incidents/"+id+"/status", tok, map[string]any{"status": tc.status}), http.StatusOK)
				if msg := r.Body["message"]; msg != "Incident status updated to "+tc.name {
					t.Errorf("message = %q", msg)
				}
				d := r.data()
				if d["id"] != id || d["status"] != float64(tc.status) || d["status_name"] != tc.name || d["classification"] != tc.classification {
					t.Errorf("data = %s", r.Raw)
				}
				if got := d["resolved_at"] != nil; got != tc.resolved {
					t.Errorf("resolved_at = %v, want set=%v", d["resolved_at"], tc.resolved)
				}
				g := must(t, call(t, e, "GET", p+"/incidents/"+id, tok, nil), http.StatusOK).data()
				if g["status"] != float64(tc.status) || g["status_name"] != tc.name || g["classification"] != tc.classification || g["resolved_at"] != d["resolved_at"] {
					t.Errorf("GET after PUT = %v", g)
				}
				hist, _ := g["history"].([]any)
				if len(hist) != tc.history {
					t.Fatalf("history = %v, want %d entries", hist, tc.history)
				}
				if tc.history == 1 {
					h := hist[0].(map[string]any)
					if h["actor"] != "analyst@org-a" || h["from"] != float64(1) || h["to"] != float64(tc.status) {
						t.Errorf("history entry = %v", h)
					}
					parseTS(t, h["at"])
				}
			})
		}
	}
}

func TestIncidentStatusSequence(t *testing.T) {
	e := newEnv(t)
	obsTok := e.token("org-a", "observations:write")
	tok, err := auth.Mint(testSecret, auth.Claims{Subject: "jane.doe", OrgID: "org-a", Permissions: []string{"incidents:read", "incidents:write"}}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	id := newIncident(t, e, obsTok, "high")
	put := func(status int) map[string]any {
		t.Helper()
		return must(t, call(t, e, "PUT", "/v1/incidents/"+id+"/status", tok, map[string]any{"status": status}), http.StatusOK).data()
	}
	history := func() []map[string]any {
		t.Helper()
		d := must(t, call(t, e, "GET", "/v1/incidents/"+id, tok, nil), http.StatusOK).data()
		var out []map[string]any
		for _, h := range d["history"].([]any) {
			out = append(out, h.(map[string]any))
		}
		return out
	}

	r1 := put(3)["resolved_at"]
	if r1 == nil {
		t.Fatal("resolved_at not set on resolving")
	}
	time.Sleep(2 * time.Millisecond)
	if got := put(4); got["resolved_at"] != r1 || got["classification"] != "false_positive" {
		t.Errorf("3→4: %v, want resolved_at kept %v", got, r1)
	}
	if got := put(5); got["resolved_at"] != r1 || got["classification"] != "true_positive" {
		t.Errorf("4→5: %v, want resolved_at kept %v", got, r1)
	}
	if got := put(2); got["resolved_at"] != nil || got["classification"] != nil {
		t.Errorf("5→2 (re-open): %v, want resolved_at and classification null", got)
	}
	before := len(history())
	again := must(t, call(t, e, "PUT", "/v1/incidents/"+id+"/status", tok, map[string]any{"status": 2}), http.StatusOK)
	if again.Body["message"] != "Incident status updated to Investigating" || again.data()["status"] != float64(2) {
		t.Errorf("same status again: %s", again.Raw)
	}
	if after := len(history()); after != before {
		t.Errorf("same status again added history: %d → %d", before, after)
	}
	if got := put(1); got["status_name"] != "New" || got["resolved_at"] != nil {
		t.Errorf("2→1: %v", got)
	}
	r2 := put(5)["resolved_at"]
	if r2 == nil || parseTS(t, r2).Before(parseTS(t, r1)) {
		t.Errorf("resolved_at after re-closing = %v, want set and not before %v", r2, r1)
	}

	want := [][2]float64{{1, 3}, {3, 4}, {4, 5}, {5, 2}, {2, 1}, {1, 5}}
	h := history()
	if len(h) != len(want) {
		t.Fatalf("history = %v, want %d entries", h, len(want))
	}
	var prev time.Time
	for i, w := range want {
		if h[i]["actor"] != "jane.doe" || h[i]["from"] != w[0] || h[i]["to"] != w[1] {
			t.Errorf("history[%d] = %v, want actor jane.doe from %v to %v", i, h[i], w[0], w[1])
		}
		at := parseTS(t, h[i]["at"])
		if at.Before(prev) {
			t.Errorf("history[%d].at %v before previous %v", i, at, prev)
		}
		prev = at
	}
}

func TestArtifactsEndpoints(t *testing.T) {
	for _, p := range prefixes {
		t.Run(strings.TrimPrefix(p, "/"), func(t *testing.T) {
			e := newEnv(t)
			tok := e.token("org-a", "signals:write")
			base := time.Now().UTC().Truncate(time.Second).Add(-10 * time.Hour)
			at := func(h int) string { return ts(base.Add(time.Duration(h) * time.Hour)) }
			docs := []map[string]any{
				{"source": "auth", "raw": "mk0 sshd failed password for root from 203.0.113.7 port 22", "timestamp": at(1)},
				{"source": "dns", "raw": "mk1 query evil.example.com from 10.0.0.15", "timestamp": at(2)},
				{"source": "firewall", "raw": "mk2 drop src 10.0.0.1 dst 198.51.100.2 port 443", "timestamp": at(3)},
				{"source": "auth", "raw": "mk3 accepted password for alice from 192.0.2.10", "timestamp": at(4)},
				{"source": "custom", "raw": "mk4 malware beacon to evil.example.org detected", "timestamp": at(5), "metadata": map[string]any{"sensor": "lab", "n": 1}},
			}
			batch := []any{docs[0], map[string]any{"source": "AUTH", "raw": "upper-case source"}, docs[1], docs[2],
				map[string]any{"source": "fw", "raw": ""}, docs[3], docs[4]}
			r := must(t, call(t, e, "POST", p+"/artifacts", tok, map[string]any{"artifacts": batch}), http.StatusAccepted)
			if msg, _ := r.Body["message"].(string); !strings.Contains(strings.ToLower(msg), "accepted") {
				t.Errorf("message = %q", msg)
			}
			d := r.data()
			if d["accepted"] != float64(5) || d["rejected"] != float64(2) {
				t.Fatalf("accepted/rejected = %v/%v; %s", d["accepted"], d["rejected"], r.Raw)
			}
			ids := strs(d["ids"])
			if len(ids) != 5 {
				t.Fatalf("ids = %v", ids)
			}
			errs, _ := d["errors"].([]any)
			if len(errs) != 2 {
				t.Fatalf("errors = %v", errs)
			}
			for i, w := range []struct {
				index float64
				field string
			}{{1, "source"}, {4, "raw"}} {
				got := errs[i].(map[string]any)
				if got["index"] != w.index || got["field"] != w.field {
					t.Errorf("errors[%d] = %v, want index %v field %s", i, got, w.index, w.field)
				}
				if reason, _ := got["reason"].(string); reason == "" {
					t.Errorf("errors[%d] without reason", i)
				}
			}

			rc := e.token("org-a", "signals:read")
			t.Run("ids in order", func(t *testing.T) {
				for k, doc := range docs {
					r := must(t, call(t, e, "GET", p+"/artifacts?query=mk"+string(rune('0'+k)), rc, nil), http.StatusOK)
					list := items(t, r, "artifacts")
					if len(list) != 1 || list[0]["id"] != ids[k] {
						t.Fatalf("doc %d: got %v, want id %s", k, idsOf(list), ids[k])
					}
					a := list[0]
					if a["org_id"] != "org-a" || a["source"] != doc["source"] || a["raw"] != doc["raw"] || a["timestamp"] != doc["timestamp"] {
						t.Errorf("doc %d = %v", k, a)
					}
					wantMeta := map[string]any{}
					if m, ok := doc["metadata"]; ok {
						b, _ := json.Marshal(m)
						json.Unmarshal(b, &wantMeta)
					}
					if !reflect.DeepEqual(a["metadata"], wantMeta) {
						t.Errorf("doc %d metadata = %v, want %v", k, a["metadata"], wantMeta)
					}
					parseTS(t, a["created_at"])
					for _, f := range []string{"event", "enrichment"} {
						if _, present := a[f]; !present {
							t.Errorf("doc %d has no %q", k, f)
						}
					}
				}
			})

			q := url.QueryEscape
			cases := []struct {
				name, query string
				want        []int
				total       int
			}{
				{"all newest first", "", []int{4, 3, 2, 1, 0}, 5},
				{"two words", "query=" + q("failed password"), []int{0}, 1},
				{"one word", "query=password", []int{3, 0}, 2},
				{"case insensitive", "query=PASSWORD", []int{3, 0}, 2},
				{"phrase", "query=" + q(`"password for root"`), []int{0}, 1},
				{"phrase wrong order", "query=" + q(`"root for password"`), []int{}, 0},
				{"prefix", "query=" + q("evi*"), []int{4, 1}, 2},
				{"or", "query=" + q("alice OR beacon"), []int{4, 3}, 2},
				{"exclude", "query=" + q("password -root"), []int{3}, 1},
				{"prefix exclude", "query=" + q("evil* -org"), []int{1}, 1},
				{"ip term", "query=" + q("10.0.0.1"), []int{2}, 1},
				{"longer ip term", "query=" + q("10.0.0.15"), []int{1}, 1},
				{"ip in text", "query=" + q("203.0.113.7"), []int{0}, 1},
				{"domain term", "query=" + q("evil.example.com"), []int{1}, 1},
				{"other domain term", "query=" + q("evil.example.org"), []int{4}, 1},
				{"no match", "query=nothingmatches", []int{}, 0},
				{"source", "source=auth", []int{3, 0}, 2},
				{"source and query", "source=auth&query=alice", []int{3}, 1},
				{"unknown source", "source=zeek", []int{}, 0},
				{"start inclusive", "start=" + q(at(3)), []int{4, 3, 2}, 3},
				{"end exclusive", "end=" + q(at(3)), []int{1, 0}, 2},
				{"start and end", "start=" + q(at(2)) + "&end=" + q(at(4)), []int{2, 1}, 2},
				{"range and query", "start=" + q(at(2)) + "&query=" + q("evil*"), []int{4, 1}, 2},
				{"limit", "limit=2", []int{4, 3}, 5},
				{"limit offset", "limit=2&offset=4", []int{0}, 5},
			}
			for _, tc := range cases {
				t.Run("search/"+tc.name, func(t *testing.T) {
					r := must(t, call(t, e, "GET", p+"/artifacts?"+tc.query, rc, nil), http.StatusOK)
					want := make([]string, len(tc.want))
					for i, k := range tc.want {
						want[i] = ids[k]
					}
					if got := idsOf(items(t, r, "artifacts")); !eqStrings(got, want) {
						t.Errorf("ids = %v, want docs %v = %v", got, tc.want, want)
					}
					if got := total(t, r); got != tc.total {
						t.Errorf("total = %d, want %d", got, tc.total)
					}
				})
			}
			// Last: it adds to the corpus searched above.
			t.Run("raw kept byte for byte", func(t *testing.T) {
				raw := "  rawexact\t<b>&amp; \"quoted\" caf\u00e9 \u2028 \\ end\n\n"
				d := postArtifacts(t, e, tok, map[string]any{"source": "custom", "raw": raw})
				r := must(t, call(t, e, "GET", p+"/artifacts?query=rawexact", rc, nil), http.StatusOK)
				list := items(t, r, "artifacts")
				if len(list) != 1 || list[0]["id"] != strs(d["ids"])[0] || list[0]["raw"] != raw {
					t.Errorf("got %q, want %q", list, raw)
				}
			})
		})
	}
}

func TestRulesEndpoints(t *testing.T) {
	for _, p := range prefixes {
		t.Run(strings.TrimPrefix(p, "/"), func(t *testing.T) {
			e := newEnv(t)
			tok := e.token("org-a", "signals:manage")
			cond := map[string]any{"all": []any{map[string]any{"field": "incident.severity", "op": "eq", "value": "high"}}}
			post := func(body map[string]any) map[string]any {
				t.Helper()
				r := must(t, call(t, e, "POST", p+"/classification-rules", tok, body), http.StatusCreated)
				time.Sleep(2 * time.Millisecond)
				return r.data()
			}
			high := post(map[string]any{"name": "escalate high", "priority": 10, "severity": "critical", "conditions": cond})
			first := post(map[string]any{"name": "first", "priority": 0, "severity": "low"})
			mid := post(map[string]any{"name": "mid", "priority": 5, "severity": "medium", "enabled": false, "target_infrastructure": true})
			mid2 := post(map[string]any{"name": "mid two", "priority": 5, "severity": "high"})

			t.Run("created fields", func(t *testing.T) {
				if high["org_id"] != "org-a" || high["name"] != "escalate high" || high["priority"] != float64(10) || high["severity"] != "critical" ||
					high["enabled"] != true || high["target_infrastructure"] != false {
					t.Errorf("rule = %v", high)
				}
				if !reflect.DeepEqual(high["conditions"], asAny(cond)) {
					t.Errorf("conditions = %v, want %v", high["conditions"], cond)
				}
				if !reflect.DeepEqual(first["conditions"], map[string]any{}) {
					t.Errorf("default conditions = %v, want {}", first["conditions"])
				}
				if mid["enabled"] != false || mid["target_infrastructure"] != true {
					t.Errorf("explicit flags = %v", mid)
				}
			})

			list := func(query string) ([]string, int) {
				t.Helper()
				r := must(t, call(t, e, "GET", p+"/classification-rules"+query, tok, nil), http.StatusOK)
				return idsOf(items(t, r, "rules")), total(t, r)
			}
			t.Run("list by priority", func(t *testing.T) {
				want := []string{first["id"].(string), mid["id"].(string), mid2["id"].(string), high["id"].(string)}
				if got, n := list(""); !eqStrings(got, want) || n != 4 {
					t.Errorf("ids %v total %d, want %v", got, n, want)
				}
				if got, n := list("?limit=2&offset=1"); !eqStrings(got, want[1:3]) || n != 4 {
					t.Errorf("page ids %v total %d", got, n)
				}
			})

			id := high["id"].(string)
			t.Run("get", func(t *testing.T) {
				g := must(t, call(t, e, "GET", p+"/classification-rules/"+id, tok, nil), http.StatusOK).data()
				if g["name"] != "escalate high" || g["priority"] != float64(10) || !reflect.DeepEqual(g["conditions"], asAny(cond)) {
					t.Errorf("get = %v", g)
				}
			})
			t.Run("partial put", func(t *testing.T) {
				g := must(t, call(t, e, "PUT", p+"/classification-rules/"+id, tok, map[string]any{"priority": 1}), http.StatusOK).data()
				if g["priority"] != float64(1) || g["name"] != "escalate high" || g["severity"] != "critical" || g["enabled"] != true ||
					!reflect.DeepEqual(g["conditions"], asAny(cond)) {
					t.Errorf("after PUT priority: %v", g)
				}
				newCond := map[string]any{"any": []any{map[string]any{"field": "observation.type", "op": "in", "value": []any{"malware", "c2"}}}}
				g = must(t, call(t, e, "PUT", p+"/classification-rules/"+id, tok, map[string]any{"enabled": false, "conditions": newCond, "name": "renamed"}), http.StatusOK).data()
				if g["enabled"] != false || g["name"] != "renamed" || g["priority"] != float64(1) || !reflect.DeepEqual(g["conditions"], asAny(newCond)) {
					t.Errorf("after PUT: %v", g)
				}
				want := []string{first["id"].(string), id, mid["id"].(string), mid2["id"].(string)}
				if got, _ := list(""); !eqStrings(got, want) {
					t.Errorf("order after priority change %v, want %v", got, want)
				}
			})
			t.Run("delete", func(t *testing.T) {
				mid := mid["id"].(string)
				r := must(t, call(t, e, "DELETE", p+"/classification-rules/"+mid, tok, nil), http.StatusOK)
				if d, present := r.Body["data"]; !present || d != nil {
					t.Errorf("data = %v, want null", d)
				}
				wantError(t, call(t, e, "GET", p+"/classification-rules/"+mid, tok, nil), http.StatusNotFound, "")
				wantError(t, call(t, e, "DELETE", p+"/classification-rules/"+mid, tok, nil), http.StatusNotFound, "")
				if _, n := list(""); n != 3 {
					t.Errorf("total after delete = %d", n)
				}
			})
		})
	}
}

func TestRolesEndpoints(t *testing.T) {
	for _, p := range prefixes {
		t.Run(strings.TrimPrefix(p, "/"), func(t *testing.T) {
			e := newEnv(t)
			tok := e.token("org-a", "admin")
			r := must(t, call(t, e, "POST", p+"/roles", tok, map[string]any{"name": "responders",
				"permissions": []string{"incidents:write", "observations:read", "incidents:write"}}), http.StatusCreated)
			role := r.data()
			if role["name"] != "responders" || !eqStrings(strs(role["permissions"]), []string{"incidents:write", "observations:read"}) || role["org_id"] != "org-a" {
				t.Errorf("created = %s", r.Raw)
			}
			parseTS(t, role["created_at"])
			parseTS(t, role["updated_at"])
			aud := createRole(t, e, tok, "auditors", "observer:read")
			id, audID := role["id"].(string), aud["id"].(string)

			list := func() ([]string, int) {
				t.Helper()
				r := must(t, call(t, e, "GET", p+"/roles", tok, nil), http.StatusOK)
				if r.data()["limit"] != float64(50) || r.data()["offset"] != float64(0) {
					t.Errorf("limit/offset = %v/%v", r.data()["limit"], r.data()["offset"])
				}
				return idsOf(items(t, r, "roles")), total(t, r)
			}
			t.Run("list by name", func(t *testing.T) {
				if got, n := list(); !eqStrings(got, []string{audID, id}) || n != 2 {
					t.Errorf("ids %v total %d", got, n)
				}
			})
			t.Run("get", func(t *testing.T) {
				g := must(t, call(t, e, "GET", p+"/roles/"+id, tok, nil), http.StatusOK).data()
				if g["name"] != "responders" || !eqStrings(strs(g["permissions"]), []string{"incidents:write", "observations:read"}) {
					t.Errorf("get = %v", g)
				}
			})
			t.Run("partial put", func(t *testing.T) {
				g := must(t, call(t, e, "PUT", p+"/roles/"+id, tok, map[string]any{"permissions": []string{"admin"}}), http.StatusOK).data()
				if g["name"] != "responders" || !eqStrings(strs(g["permissions"]), []string{"admin"}) {
					t.Errorf("after PUT permissions: %v", g)
				}
				g = must(t, call(t, e, "PUT", p+"/roles/"+audID, tok, map[string]any{"name": "  readers  "}), http.StatusOK).data()
				if g["name"] != "readers" || !eqStrings(strs(g["permissions"]), []string{"observer:read"}) {
					t.Errorf("after rename: %v", g)
				}
				g = must(t, call(t, e, "GET", p+"/roles/"+audID, tok, nil), http.StatusOK).data()
				if g["name"] != "readers" {
					t.Errorf("GET after rename: %v", g)
				}
				if got, _ := list(); !eqStrings(got, []string{audID, id}) {
					t.Errorf("order after rename %v", got)
				}
			})
			t.Run("delete", func(t *testing.T) {
				r := must(t, call(t, e, "DELETE", p+"/roles/"+id, tok, nil), http.StatusOK)
				if d, present := r.Body["data"]; !present || d != nil {
					t.Errorf("data = %v, want null", d)
				}
				wantError(t, call(t, e, "GET", p+"/roles/"+id, tok, nil), http.StatusNotFound, "")
				wantError(t, call(t, e, "PUT", p+"/roles/"+id, tok, map[string]any{"name": "x"}), http.StatusNotFound, "")
				if got, n := list(); n != 1 || !eqStrings(got, []string{audID}) {
					t.Errorf("after delete ids %v total %d", got, n)
				}
				// The name is free again.
				createRole(t, e, tok, "responders", "incidents:read")
			})
		})
	}
}

var defaultNetworks = []string{"10.0.0.0/8", "127.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "::1/128", "fc00::/7"}

func TestEnrichmentSettingsEndpoints(t *testing.T) {
	for _, p := range prefixes {
		t.Run(strings.TrimPrefix(p, "/"), func(t *testing.T) {
			e := newEnv(t)
			tok := e.token("org-a", "signals:manage")
			check := func(what string, got map[string]any, want map[string]any, nets []string) {
				t.Helper()
				for k, v := range want {
					if got[k] != v {
						t.Errorf("%s: %s = %v, want %v", what, k, got[k], v)
					}
				}
				gotNets := strs(got["internal_networks"])
				sort.Strings(gotNets)
				w := append([]string{}, nets...)
				sort.Strings(w)
				if !eqStrings(gotNets, w) {
					t.Errorf("%s: internal_networks = %v, want %v", what, gotNets, w)
				}
			}
			defaults := map[string]any{"geoip_enabled": true, "dns_enabled": true, "whois_enabled": false, "threat_intel_enabled": true,
				"rate_limit": float64(60), "cache_ttl_hours": float64(24)}
			check("first GET", must(t, call(t, e, "GET", p+"/enrichment-settings", tok, nil), http.StatusOK).data(), defaults, defaultNetworks)

			steps := []struct {
				name string
				body map[string]any
				set  map[string]any
				nets []string
			}{
				{"whois and rate", map[string]any{"whois_enabled": true, "rate_limit": 120}, map[string]any{"whois_enabled": true, "rate_limit": float64(120)}, nil},
				{"geoip and ttl", map[string]any{"geoip_enabled": false, "cache_ttl_hours": 0}, map[string]any{"geoip_enabled": false, "cache_ttl_hours": float64(0)}, nil},
				{"empty object", map[string]any{}, nil, nil},
				{"networks masked", map[string]any{"internal_networks": []string{"10.1.2.3/16", "2001:db8::1/32"}}, nil, []string{"10.1.0.0/16", "2001:db8::/32"}},
				{"bounds", map[string]any{"rate_limit": 100000, "cache_ttl_hours": 8760, "dns_enabled": false, "threat_intel_enabled": false},
					map[string]any{"rate_limit": float64(100000), "cache_ttl_hours": float64(8760), "dns_enabled": false, "threat_intel_enabled": false}, nil},
				{"pause", map[string]any{"rate_limit": 0}, map[string]any{"rate_limit": float64(0)}, nil},
				{"no internal networks", map[string]any{"internal_networks": []string{}}, nil, []string{}},
			}
			want := map[string]any{}
			for k, v := range defaults {
				want[k] = v
			}
			nets := defaultNetworks
			for _, st := range steps {
				t.Run("put/"+st.name, func(t *testing.T) {
					for k, v := range st.set {
						want[k] = v
					}
					if st.nets != nil {
						nets = st.nets
					}
					reply := must(t, call(t, e, "PUT", p+"/enrichment-settings", tok, st.body), http.StatusOK).data()
					check("PUT reply", reply, want, nets)
					if _, isArray := reply["internal_networks"].([]any); !isArray {
						t.Errorf("internal_networks = %v, want an array", reply["internal_networks"])
					}
					check("GET after PUT", must(t, call(t, e, "GET", p+"/enrichment-settings", tok, nil), http.StatusOK).data(), want, nets)
				})
			}
		})
	}
}

func TestHealthReadyMetrics(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "admin")
	must(t, call(t, e, "GET", "/v1/incidents", tok, nil), http.StatusOK)
	wantError(t, call(t, e, "GET", "/v1/incidents", "", nil), http.StatusUnauthorized, "")

	r := must(t, call(t, e, "GET", "/healthz", "", nil), http.StatusOK)
	if r.Body["success"] != true {
		t.Errorf("healthz = %s", r.Raw)
	}
	must(t, call(t, e, "GET", "/readyz", "", nil), http.StatusOK)

	m := must(t, e.as(t).do("GET", "/metrics", "", nil), http.StatusOK)
	text := string(m.Raw)
	for _, want := range []string{"vigil_http_requests_total", `route="GET /v1/incidents"`, `status="401"`, `status="200"`} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// asAny round-trips v through JSON so that it compares with decoded bodies.
func asAny(v any) any {
	b, _ := json.Marshal(v)
	var out any
	json.Unmarshal(b, &out)
	return out
}
