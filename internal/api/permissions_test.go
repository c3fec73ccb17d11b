package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/api"
	"github.com/vigil-soc/vigil/internal/auth"
)

func TestEndpointCount(t *testing.T) {
	seen := map[string]bool{}
	for _, ep := range endpoints {
		seen[ep.String()] = true
	}
	if len(seen) != 22 {
		t.Fatalf("the matrix covers %d distinct endpoints, want the contract's 22", len(seen))
	}
}

// TestEveryRoutePermission sends every route of the router (its table
// and the Elasticsearch endpoint's) as each permission of the catalog,
// carried by the token's claims and by a role of the org, as an API key,
// with no or unknown permissions, and with no or a garbage token: the
// route's status where the permission grants the route's (grantedBy),
// else 403 (401 without a valid credential). A route without an entry in
// endpoints or additions fails, as does an entry naming no route.
func TestEveryRoutePermission(t *testing.T) {
	e := newEnv(t)
	admin := e.token("org-a", "admin")
	key := createKey(t, e, admin, "matrix")["key"].(string)
	type caller struct{ name, perm, tok string }
	var callers []caller
	for _, perm := range catalog {
		role := "only-" + strings.ReplaceAll(perm, ":", "-")
		createRole(t, e, admin, role, perm)
		callers = append(callers, caller{"claim " + perm, perm, e.token("org-a", perm)},
			caller{"role " + perm, perm, e.roleToken("org-a", role)})
	}
	specs := map[string]endpoint{}
	for _, ep := range slices.Concat(endpoints, additions) {
		specs[ep.method+" /v1"+ep.path] = ep
	}
	srv := e.router()
	for _, route := range slices.Concat(api.RouteTable(srv), api.ElasticRouteTable(srv)) {
		ep, ok := specs[route]
		if !ok {
			t.Errorf("route %s is not in the permission matrix: add it to additions (routes_test.go) with the permission it needs", route)
			continue
		}
		delete(specs, route)
		method := ep.method
		if method == "ANY" {
			method = "PUT"
		}
		ingest := route == "POST /v1/artifacts" || strings.Contains(route, api.ElasticPath)
		t.Run(route, func(t *testing.T) {
			// Refused requests and reads change nothing, so they share one
			// fixture; every other granted request gets its own (it may
			// delete it).
			sharedPath, sharedBody := ep.setup(t, e, admin)
			send := func(t *testing.T, prefix, tok string, granted bool) resp {
				t.Helper()
				path, body := sharedPath, sharedBody
				if granted && method != "GET" {
					path, body = ep.setup(t, e, admin)
				}
				r := probe(t, e, method, prefix+path, tok, body)
				if !granted {
					wantError(t, r, http.StatusForbidden, "")
				} else if r.Status != ep.ok {
					t.Errorf("status %d, want %d; body %.300s", r.Status, ep.ok, r.Raw)
				}
				return r
			}
			for _, c := range callers {
				t.Run(c.name, func(t *testing.T) { send(t, "/v1", c.tok, contains(grantedBy[ep.perm], c.perm)) })
			}
			t.Run("API key", func(t *testing.T) { send(t, "/v1", key, ingest) })
			t.Run("no permissions", func(t *testing.T) { send(t, "/v1", e.token("org-a"), false) })
			t.Run("unknown permissions", func(t *testing.T) {
				send(t, "/v1", e.token("org-a", "foo:bar", "ADMIN", "signals", "signals:*", "*"), false)
			})
			t.Run("no token", func(t *testing.T) {
				r := probe(t, e, method, "/v1"+sharedPath, "", sharedBody)
				wantError(t, r, http.StatusUnauthorized, "")
				if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("WWW-Authenticate = %q", r.Header.Get("WWW-Authenticate"))
				}
			})
			t.Run("garbage token", func(t *testing.T) {
				wantError(t, probe(t, e, method, "/v1"+sharedPath, "garbage.not.ajwt", sharedBody), http.StatusUnauthorized, "")
			})
			// The /api/v1 alias runs the same checks.
			t.Run("api/v1 "+ep.perm, func(t *testing.T) { send(t, "/api/v1", e.token("org-a", ep.perm), true) })
			t.Run("api/v1 no permissions", func(t *testing.T) { send(t, "/api/v1", e.token("org-a"), false) })
		})
	}
	for route := range specs {
		t.Errorf("the permission matrix names %s, which the router does not serve", route)
	}
}

// probe sends a route's request as tok ("" none): through call for
// Vigil's routes, esCall for the Elasticsearch endpoint's (whose
// successes are Elasticsearch's bodies), and, of an event stream that
// opened, only the status and headers (it never ends).
func probe(t testing.TB, e *env, method, path, tok string, body any) resp {
	t.Helper()
	switch {
	case strings.Contains(path, api.ElasticPath):
		hdr := map[string]string{"Content-Type": "application/x-ndjson"}
		if tok != "" {
			hdr["Authorization"] = "Bearer " + tok
		}
		var b []byte
		if s, ok := body.(string); ok {
			b = []byte(s)
		}
		return esCall(t, e, method, path, hdr, b)
	case strings.HasSuffix(path, "/events"):
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		res, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		if res.StatusCode == http.StatusOK && strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			return resp{Status: res.StatusCode, Header: res.Header}
		}
		raw, _ := io.ReadAll(res.Body)
		r := resp{Status: res.StatusCode, Header: res.Header, Raw: raw}
		if err := json.Unmarshal(raw, &r.Body); err != nil {
			t.Fatalf("%s %s: %d %q", method, path, res.StatusCode, raw)
		}
		checkEnvelope(t, method+" "+path, r)
		return r
	}
	return call(t, e, method, path, tok, body)
}

// TestNegativeImplications names the implications that do not hold
// (least privilege: nothing is implied beyond admin, observer:read and a
// resource's manage; write does not imply read), checks the one of manage
// that does, and that a refused request changed nothing.
func TestNegativeImplications(t *testing.T) {
	e := newEnv(t)
	admin := e.token("org-a", "admin")
	write := e.token("org-a", "signals:write")
	reader := e.token("org-a", "signals:read")
	rule := createRule(t, e, admin, map[string]any{"name": "keep", "priority": 1, "severity": "low"})
	ruleID := rule["id"].(string)

	// A sensor's credential sends the org's logs and reads none of them
	// back (docs/security.md): the stolen-token case of issue 30.
	t.Run("signals:write sends but reads nothing", func(t *testing.T) {
		lines := datasetLines(t, "auth/integrations-test-auth.log", "auth", "2026-02-19T15:30:04Z")
		postArtifacts(t, e, write, lines...)
		for _, path := range []string{"/v1/artifacts", "/v1/artifacts?query=sshd", "/v1/classification-rules", "/v1/classification-rules/" + ruleID,
			"/v1/suppressions", "/v1/detection-rules", "/v1/starter-rules", "/v1/enrichment-settings"} {
			r := call(t, e, "GET", path, write, nil)
			wantError(t, r, http.StatusForbidden, "")
			if msg, _ := r.Body["message"].(string); !strings.Contains(msg, "signals:read") {
				t.Errorf("GET %s: message %q does not name signals:read", path, msg)
			}
		}
		if n := total(t, must(t, call(t, e, "GET", "/v1/artifacts?source=auth", reader, nil), http.StatusOK)); n != len(lines) {
			t.Errorf("a reader finds %d of the sensor's %d lines", n, len(lines))
		}
	})
	t.Run("signals:write cannot delete a rule", func(t *testing.T) {
		wantError(t, call(t, e, "DELETE", "/v1/classification-rules/"+ruleID, write, nil), http.StatusForbidden, "")
		must(t, call(t, e, "GET", "/v1/classification-rules/"+ruleID, reader, nil), http.StatusOK)
	})
	t.Run("signals:write can still update a rule", func(t *testing.T) {
		must(t, call(t, e, "PUT", "/v1/classification-rules/"+ruleID, write, map[string]any{"priority": 2}), http.StatusOK)
	})
	t.Run("signals:write cannot put enrichment settings", func(t *testing.T) {
		wantError(t, call(t, e, "PUT", "/v1/enrichment-settings", write, map[string]any{"rate_limit": 1}), http.StatusForbidden, "")
		got := must(t, call(t, e, "GET", "/v1/enrichment-settings", reader, nil), http.StatusOK).data()
		if got["rate_limit"] != float64(60) {
			t.Errorf("rate_limit = %v after a refused PUT", got["rate_limit"])
		}
	})
	// Who manages the rules reads and edits them (manage ⊇ write, read).
	t.Run("signals:manage reads and writes rules", func(t *testing.T) {
		manage := e.token("org-a", "signals:manage")
		must(t, call(t, e, "PUT", "/v1/classification-rules/"+ruleID, manage, map[string]any{"priority": 3}), http.StatusOK)
		got := must(t, call(t, e, "GET", "/v1/classification-rules/"+ruleID, manage, nil), http.StatusOK).data()
		if got["priority"] != float64(3) {
			t.Errorf("priority = %v after signals:manage's PUT of 3", got["priority"])
		}
		created := must(t, call(t, e, "POST", "/v1/classification-rules", manage, map[string]any{"name": "managed", "priority": 5, "severity": "low"}), http.StatusCreated).data()
		must(t, call(t, e, "GET", "/v1/classification-rules/"+created["id"].(string), manage, nil), http.StatusOK)
		must(t, call(t, e, "GET", "/v1/enrichment-settings", manage, nil), http.StatusOK)
		must(t, call(t, e, "PUT", "/v1/enrichment-settings", manage, map[string]any{"rate_limit": 60}), http.StatusOK)
	})
	t.Run("signals:manage cannot read roles", func(t *testing.T) {
		wantError(t, call(t, e, "GET", "/v1/roles", e.token("org-a", "signals:manage"), nil), http.StatusForbidden, "")
	})
	t.Run("incidents:manage cannot write observations", func(t *testing.T) {
		wantError(t, call(t, e, "POST", "/v1/observations", e.token("org-a", "incidents:manage"),
			map[string]any{"type": "auth", "description": "x"}), http.StatusForbidden, "")
	})

	observer := e.token("org-a", "observer:read")
	for _, ep := range endpoints {
		if ep.method == "GET" {
			want := http.StatusOK
			if ep.perm == "admin" {
				want = http.StatusForbidden
			}
			t.Run("observer:read "+ep.String(), func(t *testing.T) {
				path, _ := ep.setup(t, e, admin)
				r := call(t, e, "GET", "/v1"+path, observer, nil)
				if r.Status != want {
					t.Errorf("status %d, want %d; %s", r.Status, want, r.Raw)
				}
			})
			continue
		}
		t.Run("observer:read cannot "+ep.String(), func(t *testing.T) {
			path, body := ep.setup(t, e, admin)
			wantError(t, call(t, e, ep.method, "/v1"+path, observer, body), http.StatusForbidden, "")
		})
	}
	t.Run("observer:read refused write left no trace", func(t *testing.T) {
		r := must(t, call(t, e, "GET", "/v1/observations", admin, nil), http.StatusOK)
		for _, o := range items(t, r, "observations") {
			if o["description"] == "posted" {
				t.Errorf("a refused POST created %v", o)
			}
		}
	})
}

func mintFull(t testing.TB, c auth.Claims) string {
	t.Helper()
	tok, err := auth.Mint(testSecret, c, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestPermissionsViaRoles(t *testing.T) {
	e := newEnv(t)
	admin := e.token("org-a", "admin")
	role := createRole(t, e, admin, "triage", "incidents:read")
	roleID := role["id"].(string)
	tok := e.roleToken("org-a", "triage")
	obsBody := map[string]any{"type": "auth", "description": "via role"}

	check := func(t *testing.T, tok, method, path string, body any, want int) {
		t.Helper()
		r := call(t, e, method, path, tok, body)
		if r.Status != want {
			t.Errorf("%s %s: status %d, want %d; %s", method, path, r.Status, want, r.Raw)
		}
	}

	t.Run("role grants its permissions", func(t *testing.T) {
		check(t, tok, "GET", "/v1/incidents", nil, 200)
		check(t, tok, "GET", "/api/v1/incidents", nil, 200)
		check(t, tok, "GET", "/v1/observations", nil, 403)
		check(t, tok, "PUT", "/v1/enrichment-settings", map[string]any{}, 403)
	})
	t.Run("role update applies on the next request", func(t *testing.T) {
		must(t, call(t, e, "PUT", "/v1/roles/"+roleID, admin, map[string]any{"permissions": []string{"observations:write"}}), http.StatusOK)
		check(t, tok, "POST", "/v1/observations", obsBody, 201)
		check(t, tok, "GET", "/v1/observations", nil, 403) // write does not imply read through a role either
		check(t, tok, "GET", "/v1/incidents", nil, 403)
	})
	t.Run("role implications", func(t *testing.T) {
		must(t, call(t, e, "PUT", "/v1/roles/"+roleID, admin, map[string]any{"permissions": []string{"observer:read", "signals:manage"}}), http.StatusOK)
		check(t, tok, "GET", "/v1/incidents", nil, 200)
		check(t, tok, "DELETE", "/v1/classification-rules/"+createRule(t, e, admin, map[string]any{"name": "r", "priority": 0, "severity": "low"})["id"].(string), nil, 200)
		check(t, tok, "GET", "/v1/roles", nil, 403)
		check(t, tok, "POST", "/v1/observations", obsBody, 403)
		check(t, tok, "POST", "/v1/classification-rules", map[string]any{"name": "m", "priority": 0, "severity": "low"}, 201)
	})
	t.Run("claims and roles are united", func(t *testing.T) {
		both := mintFull(t, auth.Claims{Subject: "u", OrgID: "org-a", Permissions: []string{"incidents:write"}, Roles: []string{"triage"}})
		check(t, both, "PUT", "/v1/incidents/"+newIncident(t, e, admin, "low")+"/status", map[string]any{"status": 2}, 200)
		check(t, both, "GET", "/v1/artifacts", nil, 200)
		check(t, both, "GET", "/v1/roles", nil, 403)
	})
	t.Run("renaming a role moves its grant to the new name", func(t *testing.T) {
		must(t, call(t, e, "PUT", "/v1/roles/"+roleID, admin, map[string]any{"name": "triage-renamed"}), http.StatusOK)
		check(t, tok, "GET", "/v1/incidents", nil, 403)
		check(t, e.roleToken("org-a", "triage-renamed"), "GET", "/v1/incidents", nil, 200)
	})
	t.Run("deleting a role revokes at once", func(t *testing.T) {
		renamed := e.roleToken("org-a", "triage-renamed")
		check(t, renamed, "GET", "/v1/incidents", nil, 200)
		must(t, call(t, e, "DELETE", "/v1/roles/"+roleID, admin, nil), http.StatusOK)
		check(t, renamed, "GET", "/v1/incidents", nil, 403)
		check(t, renamed, "GET", "/v1/artifacts", nil, 403)
	})
	t.Run("unknown role names grant nothing", func(t *testing.T) {
		check(t, e.roleToken("org-a", "nonexistent", "admin"), "GET", "/v1/incidents", nil, 403)
	})
}

func TestRolesOfAnotherOrgGrantNothing(t *testing.T) {
	e := newEnv(t)
	adminA, adminB := e.token("org-a", "admin"), e.token("org-b", "admin")
	createRole(t, e, adminB, "analysts", "admin")
	createRole(t, e, adminB, "bosses", "admin")
	createRole(t, e, adminA, "analysts", "incidents:read")

	cases := []struct {
		name         string
		org          string
		roles        []string
		method, path string
		want         int
	}{
		{"same name grants own org's permissions", "org-a", []string{"analysts"}, "GET", "/v1/incidents", 200},
		{"same name does not grant other org's admin", "org-a", []string{"analysts"}, "GET", "/v1/roles", 403},
		{"same name does not grant other org's admin on writes", "org-a", []string{"analysts"}, "PUT", "/v1/enrichment-settings", 403},
		{"role only in other org", "org-a", []string{"bosses"}, "GET", "/v1/incidents", 403},
		{"org without roles", "org-c", []string{"analysts", "bosses"}, "GET", "/v1/incidents", 403},
		{"owning org still gets admin", "org-b", []string{"bosses"}, "GET", "/v1/roles", 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.method == "PUT" {
				body = map[string]any{"rate_limit": 5}
			}
			r := call(t, e, tc.method, tc.path, e.roleToken(tc.org, tc.roles...), body)
			if r.Status != tc.want {
				t.Errorf("status %d, want %d; %s", r.Status, tc.want, r.Raw)
			}
		})
	}
	// The refused PUT changed nothing in either org.
	for _, tok := range []string{adminA, adminB} {
		if got := must(t, call(t, e, "GET", "/v1/enrichment-settings", tok, nil), http.StatusOK).data()["rate_limit"]; got != float64(60) {
			t.Errorf("rate_limit = %v after refused PUT", got)
		}
	}
}
