package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// Lines whose parsed events name entities (docs/api.md, "Nodes of an
// observation").
const (
	sshFail1   = "Jun 14 15:16:01 web-1 sshd[1234]: Failed password for root from 203.0.113.50 port 4242 ssh2"
	sshFail2   = "Jun 14 15:17:30 db-1 sshd[999]: Failed password for admin from 203.0.113.50 port 5151 ssh2"
	sshFail3   = "Jun 14 15:18:00 web-1 sshd[1240]: Failed password for root from 198.51.100.23 port 6000 ssh2"
	outbound1  = "Jun 14 15:16:01 fw kernel: [UFW ALLOW] IN= OUT=eth0 SRC=10.0.0.7 DST=198.51.100.200 PROTO=TCP SPT=5555 DPT=443"
	outbound2  = "Jun 14 15:16:09 fw kernel: [UFW ALLOW] IN= OUT=eth0 SRC=10.0.0.8 DST=198.51.100.200 PROTO=TCP SPT=5600 DPT=443"
	inboundOne = "Jun 14 15:16:01 fw kernel: [UFW BLOCK] IN=eth0 OUT= SRC=198.51.100.9 DST=10.0.0.5 PROTO=TCP SPT=5555 DPT=23"
	inboundTwo = "Jun 14 15:16:02 fw kernel: [UFW BLOCK] IN=eth0 OUT= SRC=192.0.2.77 DST=10.0.0.5 PROTO=TCP SPT=5555 DPT=23"
)

// nodeValues returns "Type:value" of each node id, looked up through
// GET /v1/nodes/{id}.
func nodeValues(t testing.TB, e *env, tok string, ids []string) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		n := must(t, call(t, e, "GET", "/v1/nodes/"+id, tok, nil), http.StatusOK).data()
		out = append(out, fmt.Sprint(n["type"], ":", n["value"]))
	}
	return out
}

// findNode returns the id of the node of type and value, via the list's
// value filter ("" if none).
func findNode(t testing.TB, e *env, tok, typ, value string) string {
	t.Helper()
	r := must(t, call(t, e, "GET", "/v1/nodes?"+url.Values{"type": {typ}, "value": {value}}.Encode(), tok, nil), http.StatusOK)
	list := items(t, r, "nodes")
	if len(list) == 0 {
		return ""
	}
	return list[0]["id"].(string)
}

// TestObservationNodesByValue: an analyst's observation names nodes by
// value; they are created once per (org, type, value), normalized as the
// detectors normalize them, and listed in node_ids.
func TestObservationNodesByValue(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "admin")

	o := createObs(t, e, tok, map[string]any{"type": "network", "description": "c2 beacon", "nodes": []any{
		map[string]any{"type": "IP", "value": "::ffff:203.0.113.7"},
		map[string]any{"type": "Domain", "value": "C2.Example.NET."},
		map[string]any{"type": "Hash", "value": "D41D8CD98F00B204E9800998ECF8427E"},
		map[string]any{"type": "IP", "value": "203.0.113.7"}, // the same node again
	}})
	ids := strs(o["node_ids"])
	if got, want := nodeValues(t, e, tok, ids), []string{"IP:203.0.113.7", "Domain:c2.example.net", "Hash:d41d8cd98f00b204e9800998ecf8427e"}; !slices.Equal(got, want) {
		t.Fatalf("nodes = %v, want %v", got, want)
	}

	t.Run("the response shape is the contract's", func(t *testing.T) {
		var keys []string
		for k := range o {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		want := []string{"artifact_ids", "created_at", "description", "id", "incident_id", "node_ids", "org_id", "severity", "type", "updated_at"}
		if !slices.Equal(keys, want) {
			t.Errorf("observation fields = %v, want %v", keys, want)
		}
	})

	t.Run("a value already known is the same node", func(t *testing.T) {
		again := createObs(t, e, tok, map[string]any{"type": "network", "description": "again", "nodes": []any{
			map[string]any{"type": "Domain", "value": "c2.example.net"},
		}})
		if got := strs(again["node_ids"]); !slices.Equal(got, ids[1:2]) {
			t.Errorf("node_ids = %v, want %v", got, ids[1:2])
		}
		if r := must(t, call(t, e, "GET", "/v1/nodes", tok, nil), http.StatusOK); total(t, r) != 3 {
			t.Errorf("the org has %d nodes, want 3", total(t, r))
		}
	})

	t.Run("joined with node_ids, in order, once", func(t *testing.T) {
		both := createObs(t, e, tok, map[string]any{"type": "network", "description": "both",
			"node_ids": []string{ids[2], ids[0]},
			"nodes":    []any{map[string]any{"type": "IP", "value": "203.0.113.7"}, map[string]any{"type": "User", "value": "mallory"}},
		})
		got := strs(both["node_ids"])
		if len(got) != 3 || got[0] != ids[2] || got[1] != ids[0] {
			t.Fatalf("node_ids = %v, want [%s %s <User mallory>]", got, ids[2], ids[0])
		}
		if v := nodeValues(t, e, tok, got[2:]); v[0] != "User:mallory" {
			t.Errorf("third node = %v", v)
		}
		fetched := must(t, call(t, e, "GET", "/v1/observations/"+both["id"].(string), tok, nil), http.StatusOK).data()
		if !slices.Equal(strs(fetched["node_ids"]), got) {
			t.Errorf("GET node_ids = %v, want %v", fetched["node_ids"], got)
		}
	})

	t.Run("another org gets its own nodes", func(t *testing.T) {
		b := e.token("org-b", "admin")
		ob := createObs(t, e, b, map[string]any{"type": "network", "description": "org b", "nodes": []any{
			map[string]any{"type": "IP", "value": "203.0.113.7"},
		}})
		if id := strs(ob["node_ids"])[0]; id == ids[0] {
			t.Errorf("org b reuses org a's node %s", id)
		}
		wantError(t, call(t, e, "POST", "/v1/observations", b, map[string]any{"type": "x", "description": "d", "node_ids": ids[:1]}),
			http.StatusBadRequest, "node_ids")
	})
}

// TestObservationNodesValidation: bad entries of nodes are refused with a
// 400 naming the entry, and a refused request creates no node.
func TestObservationNodesValidation(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "admin")
	obs := createObs(t, e, tok, map[string]any{"type": "auth", "description": "fixture"})
	P, U := "/v1/observations", "/v1/observations/"+obs["id"].(string)
	body := func(nodes any) map[string]any {
		return map[string]any{"type": "auth", "description": "d", "nodes": nodes}
	}
	ip := func(v any) map[string]any { return map[string]any{"type": "IP", "value": v} }
	var tooMany []any
	for i := range 101 {
		tooMany = append(tooMany, ip(fmt.Sprintf("198.51.100.%d", i%250)))
	}
	runBad(t, e, tok, []badCase{
		{"nodes not an array", "POST", P, body("203.0.113.7"), "nodes"},
		{"nodes item not an object", "POST", P, body([]any{"203.0.113.7"}), "nodes"},
		{"over 100 nodes", "POST", P, body(tooMany), "nodes"},
		{"type missing", "POST", P, body([]any{map[string]any{"value": "203.0.113.7"}}), "nodes[0].type"},
		{"type unknown", "POST", P, body([]any{map[string]any{"type": "Address", "value": "203.0.113.7"}}), "nodes[0].type"},
		{"type in lower case", "POST", P, body([]any{map[string]any{"type": "ip", "value": "203.0.113.7"}}), "nodes[0].type"},
		{"value missing", "POST", P, body([]any{map[string]any{"type": "IP"}}), "nodes[0].value"},
		{"value not a string", "POST", P, body([]any{ip(7)}), "nodes.value"},
		{"value empty", "POST", P, body([]any{ip(" ")}), "nodes[0].value"},
		{"second entry a bad IP", "POST", P, body([]any{ip("203.0.113.7"), ip("203.0.113.300")}), "nodes[1].value"},
		{"IP with a port", "POST", P, body([]any{ip("203.0.113.7:22")}), "nodes[0].value"},
		{"domain with a space", "POST", P, body([]any{map[string]any{"type": "Domain", "value": "evil example.com"}}), "nodes[0].value"},
		{"domain that is an address", "POST", P, body([]any{map[string]any{"type": "Domain", "value": "203.0.113.7"}}), "nodes[0].value"},
		{"hash not hex", "POST", P, body([]any{map[string]any{"type": "Hash", "value": "not-a-hash"}}), "nodes[0].value"},
		{"URL relative", "POST", P, body([]any{map[string]any{"type": "URL", "value": "/index.php"}}), "nodes[0].value"},
		{"user with a control character", "POST", P, body([]any{map[string]any{"type": "User", "value": "al\u0007ice"}}), "nodes[0].value"},
		{"unknown field in an entry", "POST", P, body([]any{map[string]any{"type": "IP", "value": "203.0.113.7", "key": true}}), "key"},
		{"put bad IP", "PUT", U, map[string]any{"nodes": []any{ip("999.1.1.1")}}, "nodes[0].value"},
		{"put type unknown", "PUT", U, map[string]any{"nodes": []any{map[string]any{"type": "MAC", "value": "aa:bb"}}}, "nodes[0].type"},
		{"good value with a bad node id", "POST", P, map[string]any{"type": "auth", "description": "d",
			"node_ids": []string{absentID}, "nodes": []any{ip("192.0.2.44")}}, "node_ids"},
		{"good value with another org's artifact", "POST", P, map[string]any{"type": "auth", "description": "d",
			"artifact_ids": []string{absentID}, "nodes": []any{ip("192.0.2.45")}}, "artifact_ids"},
	})
	t.Run("refused requests created no node", func(t *testing.T) {
		r := must(t, call(t, e, "GET", "/v1/nodes", tok, nil), http.StatusOK)
		if n := total(t, r); n != 0 {
			t.Errorf("the org has %d nodes after refused requests: %s", n, r.Raw)
		}
	})
	t.Run("100 nodes accepted", func(t *testing.T) {
		o := createObs(t, e, tok, body(tooMany[:100]))
		if n := len(strs(o["node_ids"])); n != 100 {
			t.Errorf("%d node_ids, want 100", n)
		}
	})
}

// TestManualObservationsCorrelate: two analysts' observations correlate
// exactly like detected ones, whether they name the entity by value or
// attach artifacts that name it.
func TestManualObservationsCorrelate(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "admin")
	arts := strs(postArtifacts(t, e, tok,
		map[string]any{"source": "auth", "raw": sshFail1},
		map[string]any{"source": "auth", "raw": sshFail2},
		map[string]any{"source": "auth", "raw": sshFail3},
		map[string]any{"source": "firewall", "raw": outbound1},
		map[string]any{"source": "firewall", "raw": outbound2},
		map[string]any{"source": "firewall", "raw": inboundOne},
		map[string]any{"source": "firewall", "raw": inboundTwo},
	)["ids"])
	fail1, fail2, fail3, out1, out2, in1, in2 := arts[0], arts[1], arts[2], arts[3], arts[4], arts[5], arts[6]

	t.Run("the same IP named by value", func(t *testing.T) {
		a := createObs(t, e, tok, map[string]any{"type": "network", "description": "seen in proxy logs",
			"nodes": []any{map[string]any{"type": "IP", "value": "192.0.2.200"}}})
		b := createObs(t, e, tok, map[string]any{"type": "malware", "description": "seen in EDR", "severity": "high",
			"nodes": []any{map[string]any{"type": "IP", "value": "::ffff:192.0.2.200"}}})
		if a["incident_id"] != b["incident_id"] {
			t.Fatalf("incidents %v and %v, want one", a["incident_id"], b["incident_id"])
		}
		inc := incidentOf(t, e, tok, a["incident_id"].(string))
		if inc["severity"] != "high" || len(obsIDs(inc)) != 2 || inc["node_count"] != float64(1) {
			t.Errorf("incident = severity %v observations %v nodes %v", inc["severity"], obsIDs(inc), inc["node_count"])
		}
	})

	var bruteForce string
	t.Run("artifacts with the same source IP", func(t *testing.T) {
		a := createObs(t, e, tok, map[string]any{"type": "auth", "description": "root tried on web-1", "artifact_ids": []string{fail1}})
		b := createObs(t, e, tok, map[string]any{"type": "auth", "description": "admin tried on db-1", "artifact_ids": []string{fail2}})
		bruteForce = a["incident_id"].(string)
		if b["incident_id"] != bruteForce {
			t.Fatalf("incidents %v and %v, want one (source 203.0.113.50)", bruteForce, b["incident_id"])
		}
		if got, want := nodeValues(t, e, tok, strs(a["node_ids"])), []string{"IP:203.0.113.50", "Host:web-1", "User:root"}; !slices.Equal(got, want) {
			t.Errorf("nodes from the artifact = %v, want %v", got, want)
		}
		inc := incidentOf(t, e, tok, bruteForce)
		if inc["artifact_count"] != float64(2) || inc["node_count"] != float64(5) {
			t.Errorf("incident artifacts %v nodes %v, want 2 and 5 (one IP, two hosts, two users)", inc["artifact_count"], inc["node_count"])
		}
	})

	t.Run("by value and by artifact meet", func(t *testing.T) {
		o := createObs(t, e, tok, map[string]any{"type": "network", "description": "threat feed says so",
			"nodes": []any{map[string]any{"type": "IP", "value": "203.0.113.50"}}})
		if o["incident_id"] != bruteForce {
			t.Errorf("incident %v, want %v", o["incident_id"], bruteForce)
		}
	})

	t.Run("a shared attacked host joins nothing", func(t *testing.T) {
		o := createObs(t, e, tok, map[string]any{"type": "auth", "description": "another attacker on web-1", "artifact_ids": []string{fail3}})
		if o["incident_id"] == bruteForce {
			t.Errorf("an attacker sharing only the attacked host web-1 joined %v", bruteForce)
		}
		a := createObs(t, e, tok, map[string]any{"type": "network", "description": "telnet probe", "artifact_ids": []string{in1}})
		b := createObs(t, e, tok, map[string]any{"type": "network", "description": "telnet probe", "artifact_ids": []string{in2}})
		if a["incident_id"] == b["incident_id"] {
			t.Errorf("two attackers of 10.0.0.5 share incident %v", a["incident_id"])
		}
	})

	t.Run("an outside address two internal hosts talk to", func(t *testing.T) {
		a := createObs(t, e, tok, map[string]any{"type": "malware", "description": "beacon", "artifact_ids": []string{out1}})
		b := createObs(t, e, tok, map[string]any{"type": "malware", "description": "beacon", "artifact_ids": []string{out2}})
		if a["incident_id"] != b["incident_id"] {
			t.Errorf("10.0.0.7 and 10.0.0.8 talking to 198.51.100.200: incidents %v and %v, want one", a["incident_id"], b["incident_id"])
		}
	})

	t.Run("node_ids given: the artifacts' entities are added too", func(t *testing.T) {
		named := findNode(t, e, tok, "IP", "192.0.2.200")
		o := createObs(t, e, tok, map[string]any{"type": "auth", "description": "both", "node_ids": []string{named}, "artifact_ids": []string{fail1}})
		if got, want := nodeValues(t, e, tok, strs(o["node_ids"])), []string{"IP:192.0.2.200", "IP:203.0.113.50", "Host:web-1", "User:root"}; !slices.Equal(got, want) {
			t.Errorf("nodes = %v, want %v", got, want)
		}
		// It bridges the two incidents: they merge into the older one.
		if inc := incidentOf(t, e, tok, o["incident_id"].(string)); len(obsIDs(inc)) < 6 {
			t.Errorf("bridging incident has %d observations, want both incidents' and this one", len(obsIDs(inc)))
		}
	})
}

// TestObservationUpdateNodes: on PUT, node_ids and nodes together replace
// the nodes; the artifacts' entities are always added again.
func TestObservationUpdateNodes(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "admin")
	arts := strs(postArtifacts(t, e, tok,
		map[string]any{"source": "auth", "raw": sshFail1},
		map[string]any{"source": "firewall", "raw": inboundOne},
	)["ids"])
	o := createObs(t, e, tok, map[string]any{"type": "auth", "description": "d", "nodes": []any{map[string]any{"type": "User", "value": "mallory"}}})
	path := "/v1/observations/" + o["id"].(string)
	put := func(body map[string]any) []string {
		t.Helper()
		r := must(t, call(t, e, "PUT", path, tok, body), http.StatusOK).data()
		got := nodeValues(t, e, tok, strs(r["node_ids"]))
		stored := must(t, call(t, e, "GET", path, tok, nil), http.StatusOK).data()
		if !slices.Equal(strs(stored["node_ids"]), strs(r["node_ids"])) {
			t.Errorf("stored node_ids %v, PUT answered %v", stored["node_ids"], r["node_ids"])
		}
		return got
	}
	steps := []struct {
		name string
		body map[string]any
		want []string
	}{
		{"artifact_ids add their entities to the nodes", map[string]any{"artifact_ids": []string{arts[0]}},
			[]string{"User:mallory", "IP:203.0.113.50", "Host:web-1", "User:root"}},
		{"a field other than nodes and artifacts leaves the nodes", map[string]any{"severity": "high"},
			[]string{"User:mallory", "IP:203.0.113.50", "Host:web-1", "User:root"}},
		{"nodes replace the named ones; the artifacts' stay", map[string]any{"nodes": []any{map[string]any{"type": "Domain", "value": "Evil.Example.com"}}},
			[]string{"Domain:evil.example.com", "IP:203.0.113.50", "Host:web-1", "User:root"}},
		{"node_ids empty and other artifacts", map[string]any{"node_ids": []string{}, "artifact_ids": []string{arts[1]}},
			[]string{"IP:198.51.100.9", "IP:10.0.0.5", "Host:fw"}},
		{"no artifacts and no nodes", map[string]any{"node_ids": []string{}, "artifact_ids": []string{}}, nil},
	}
	for _, st := range steps {
		if got := put(st.body); !slices.Equal(got, st.want) {
			t.Errorf("%s: nodes = %v, want %v", st.name, got, st.want)
		}
	}
}

// TestNodesEndpoints: GET /v1/nodes lists the org's nodes with the list
// rules of the other lists; GET /v1/nodes/{id} shows one.
func TestNodesEndpoints(t *testing.T) {
	e := newEnv(t)
	admin := e.token("org-a", "admin")
	var values []any
	for i := range 12 {
		values = append(values, map[string]any{"type": "IP", "value": fmt.Sprintf("198.51.100.%d", i+1)})
	}
	values = append(values,
		map[string]any{"type": "Domain", "value": "evil.example.com"},
		map[string]any{"type": "Domain", "value": "evil.example.org"},
		map[string]any{"type": "Host", "value": "198.51.100.1"},
		map[string]any{"type": "User", "value": "Zoë"},
	)
	createObs(t, e, admin, map[string]any{"type": "network", "description": "fixture", "nodes": values})
	createObs(t, e, e.token("org-b", "admin"), map[string]any{"type": "network", "description": "org b", "nodes": []any{
		map[string]any{"type": "IP", "value": "198.51.100.1"}, map[string]any{"type": "Host", "value": "b-only"},
	}})
	list := func(t *testing.T, tok, query string) ([]string, int) {
		t.Helper()
		r := must(t, call(t, e, "GET", "/v1/nodes?"+query, tok, nil), http.StatusOK)
		var got []string
		for _, n := range items(t, r, "nodes") {
			got = append(got, fmt.Sprint(n["type"], ":", n["value"]))
		}
		return got, total(t, r)
	}

	t.Run("list shape, order and paging", func(t *testing.T) {
		r := must(t, call(t, e, "GET", "/api/v1/nodes?limit=5&offset=2", admin, nil), http.StatusOK)
		d := r.data()
		if d["total"] != float64(16) || d["limit"] != float64(5) || d["offset"] != float64(2) {
			t.Errorf("page = total %v limit %v offset %v", d["total"], d["limit"], d["offset"])
		}
		page := items(t, r, "nodes")
		// Created in one request: newest first means the last named first
		// (User Zoë, Host 198.51.100.1, then these).
		if len(page) != 5 || page[0]["value"] != "evil.example.org" || page[4]["value"] != "198.51.100.10" {
			t.Errorf("page = %v", page)
		}
		for _, n := range page {
			if n["org_id"] != "org-a" || n["created_at"] == nil || len(n) != 5 {
				t.Errorf("node = %v, want id, org_id, type, value, created_at", n)
			}
		}
		all, n := list(t, admin, "")
		if n != 16 || len(all) != 16 {
			t.Errorf("default page = %d of %d", len(all), n)
		}
	})

	filters := []struct {
		name, query string
		want        []string
	}{
		{"type", "type=Domain", []string{"Domain:evil.example.org", "Domain:evil.example.com"}},
		{"value normalized for its type", "type=Domain&value=EVIL.Example.COM.", []string{"Domain:evil.example.com"}},
		{"value of an IP in another form", "type=IP&value=%3A%3Affff%3A198.51.100.2", []string{"IP:198.51.100.2"}},
		{"value under every type it is valid for", "value=198.51.100.1", []string{"Host:198.51.100.1", "IP:198.51.100.1"}},
		{"value exact, not a prefix", "value=198.51.100", nil},
		{"prefix", "type=IP&prefix=198.51.100.1", []string{"IP:198.51.100.12", "IP:198.51.100.11", "IP:198.51.100.10", "IP:198.51.100.1"}},
		{"prefix lower-cased for domains", "type=Domain&prefix=EVIL.EXAMPLE.O", []string{"Domain:evil.example.org"}},
		{"prefix case-sensitive for users", "prefix=zo", nil},
		{"prefix multibyte", "prefix=Zo%C3%AB", []string{"User:Zoë"}},
		{"nothing of another org", "value=b-only", nil},
	}
	for _, f := range filters {
		t.Run(f.name, func(t *testing.T) {
			got, n := list(t, admin, f.query)
			if !slices.Equal(got, f.want) || n != len(f.want) {
				t.Errorf("?%s = %v (total %d), want %v", f.query, got, n, f.want)
			}
		})
	}

	t.Run("bad filters", func(t *testing.T) {
		runBad(t, e, admin, []badCase{
			{"type unknown", "GET", "/v1/nodes?type=Address", nil, "type"},
			{"type lower case", "GET", "/v1/nodes?type=ip", nil, "type"},
			{"value not of the type", "GET", "/v1/nodes?type=IP&value=evil.example.com", nil, "value"},
			{"value of no type", "GET", "/v1/nodes?value=" + url.QueryEscape("a\x01b"), nil, "value"},
			{"prefix with a control character", "GET", "/v1/nodes?prefix=" + url.QueryEscape("a\x00"), nil, "prefix"},
			{"prefix not UTF-8", "GET", "/v1/nodes?prefix=%FF", nil, "prefix"},
			{"limit 0", "GET", "/v1/nodes?limit=0", nil, "limit"},
			{"limit 1001", "GET", "/api/v1/nodes?limit=1001", nil, "limit"},
			{"offset negative", "GET", "/v1/nodes?offset=-1", nil, "offset"},
		})
	})

	t.Run("one node; another org's is not found", func(t *testing.T) {
		id := findNode(t, e, admin, "Domain", "evil.example.com")
		for _, p := range prefixes {
			n := must(t, call(t, e, "GET", p+"/nodes/"+id, admin, nil), http.StatusOK).data()
			if n["id"] != id || n["type"] != "Domain" || n["value"] != "evil.example.com" || n["org_id"] != "org-a" {
				t.Errorf("node = %v", n)
			}
		}
		wantError(t, call(t, e, "GET", "/v1/nodes/"+id, e.token("org-b", "admin"), nil), http.StatusNotFound, "")
		wantError(t, call(t, e, "GET", "/v1/nodes/"+absentID, admin, nil), http.StatusNotFound, "")
		wantError(t, call(t, e, "GET", "/v1/nodes/not-a-uuid", admin, nil), http.StatusNotFound, "")
		bIDs, _ := list(t, e.token("org-b", "observations:read"), "")
		if len(bIDs) != 2 || slices.Contains(bIDs, "Domain:evil.example.com") {
			t.Errorf("org b lists %v", bIDs)
		}
	})

	t.Run("permissions", func(t *testing.T) {
		id := findNode(t, e, admin, "Domain", "evil.example.com")
		for _, path := range []string{"/v1/nodes", "/v1/nodes/" + id} {
			for _, perm := range []string{"observations:read", "observations:manage", "observer:read", "admin"} {
				must(t, call(t, e, "GET", path, e.token("org-a", perm), nil), http.StatusOK)
			}
			for _, perm := range []string{"observations:write", "incidents:read", "signals:manage"} {
				wantError(t, call(t, e, "GET", path, e.token("org-a", perm), nil), http.StatusForbidden, "")
			}
			wantError(t, call(t, e, "GET", path, "", nil), http.StatusUnauthorized, "")
			r := call(t, e, "POST", path, admin, map[string]any{})
			if r.Status != http.StatusMethodNotAllowed || !strings.Contains(r.Header.Get("Allow"), "GET") {
				t.Errorf("POST %s: %d Allow %q, want 405 allowing GET", path, r.Status, r.Header.Get("Allow"))
			}
		}
	})
}
