package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/auth"
)

// endpoint is one of the 22 endpoints of the contract with the permission
// it requires and a setup that makes a request to it valid, so that the
// only possible reason for a refusal is the caller's permissions.
type endpoint struct {
	method, path, perm string
	ok                 int
	// setup returns the concrete path (after the prefix) and body.
	setup func(t testing.TB, e *env, admin string) (string, any)
}

func (ep endpoint) String() string { return ep.method + " " + ep.path }

func static(path string, body any) func(testing.TB, *env, string) (string, any) {
	return func(testing.TB, *env, string) (string, any) { return path, body }
}

func withObs(suffix string, body any) func(testing.TB, *env, string) (string, any) {
	return func(t testing.TB, e *env, admin string) (string, any) {
		o := createObs(t, e, admin, map[string]any{"type": "auth", "description": "fixture"})
		return "/observations/" + o["id"].(string) + suffix, body
	}
}

func withIncident(suffix string, body any) func(testing.TB, *env, string) (string, any) {
	return func(t testing.TB, e *env, admin string) (string, any) {
		return "/incidents/" + newIncident(t, e, admin, "medium") + suffix, body
	}
}

func withRule(body any) func(testing.TB, *env, string) (string, any) {
	return func(t testing.TB, e *env, admin string) (string, any) {
		r := createRule(t, e, admin, map[string]any{"name": uniq("rule"), "priority": 3, "severity": "low"})
		return "/classification-rules/" + r["id"].(string), body
	}
}

func withRole(body any) func(testing.TB, *env, string) (string, any) {
	return func(t testing.TB, e *env, admin string) (string, any) {
		r := createRole(t, e, admin, uniq("role"), "incidents:read")
		return "/roles/" + r["id"].(string), body
	}
}

var endpoints = []endpoint{
	{"GET", "/observations", "observations:read", 200, static("/observations", nil)},
	{"GET", "/observations/{id}", "observations:read", 200, withObs("", nil)},
	{"POST", "/observations", "observations:write", 201, func(testing.TB, *env, string) (string, any) {
		return "/observations", map[string]any{"type": "auth", "description": "posted"}
	}},
	{"PUT", "/observations/{id}", "observations:write", 200, withObs("", map[string]any{"severity": "high"})},
	{"DELETE", "/observations/{id}", "observations:write", 200, withObs("", nil)},

	{"GET", "/incidents", "incidents:read", 200, static("/incidents", nil)},
	{"GET", "/incidents/{id}", "incidents:read", 200, withIncident("", nil)},
	{"PUT", "/incidents/{id}/status", "incidents:write", 200, withIncident("/status", map[string]any{"status": 2})},

	{"POST", "/artifacts", "signals:write", 202, func(testing.TB, *env, string) (string, any) {
		return "/artifacts", map[string]any{"artifacts": []any{map[string]any{"source": "custom", "raw": "hello"}}}
	}},
	{"GET", "/artifacts", "signals:read", 200, static("/artifacts", nil)},

	{"GET", "/classification-rules", "signals:read", 200, static("/classification-rules", nil)},
	{"GET", "/classification-rules/{id}", "signals:read", 200, withRule(nil)},
	{"POST", "/classification-rules", "signals:write", 201, func(testing.TB, *env, string) (string, any) {
		return "/classification-rules", map[string]any{"name": uniq("rule"), "priority": 1, "severity": "high"}
	}},
	{"PUT", "/classification-rules/{id}", "signals:write", 200, withRule(map[string]any{"priority": 7})},
	{"DELETE", "/classification-rules/{id}", "signals:manage", 200, withRule(nil)},

	{"GET", "/roles", "admin", 200, static("/roles", nil)},
	{"GET", "/roles/{id}", "admin", 200, withRole(nil)},
	{"POST", "/roles", "admin", 201, func(testing.TB, *env, string) (string, any) {
		return "/roles", map[string]any{"name": uniq("role"), "permissions": []string{"signals:read"}}
	}},
	{"PUT", "/roles/{id}", "admin", 200, withRole(map[string]any{"permissions": []string{"signals:write"}})},
	{"DELETE", "/roles/{id}", "admin", 200, withRole(nil)},

	{"GET", "/enrichment-settings", "signals:read", 200, static("/enrichment-settings", nil)},
	{"PUT", "/enrichment-settings", "signals:manage", 200, static("/enrichment-settings", map[string]any{"rate_limit": 30})},
}

// additions are the endpoints Vigil adds to the contract's, in the same
// matrix.
var additions = []endpoint{
	{"GET", "/incidents/{id}/history", "incidents:read", 200, withIncident("/history", nil)},
	{"PUT", "/incidents/{id}", "incidents:write", 200, withIncident("", map[string]any{"tags": []string{"vip"}})},
	{"GET", "/incidents/{id}/comments", "incidents:read", 200, withIncident("/comments", nil)},
	{"POST", "/incidents/{id}/comments", "incidents:write", 201, withIncident("/comments", map[string]any{"body": "seen"})},
	{"PUT", "/incidents/{id}/comments/{comment}", "incidents:write", 200, withComment(map[string]any{"body": "edited"})},
	{"DELETE", "/incidents/{id}/comments/{comment}", "incidents:write", 200, withComment(nil)},
	{"GET", "/audit", "admin", 200, static("/audit", nil)},
}

// withComment makes a comment on a new incident, written by the sub of
// every token of the matrix (so that only permissions decide).
func withComment(body any) func(testing.TB, *env, string) (string, any) {
	return func(t testing.TB, e *env, admin string) (string, any) {
		inc := newIncident(t, e, admin, "medium")
		c := must(t, call(t, e, "POST", "/v1/incidents/"+inc+"/comments", admin, map[string]any{"body": "fixture"}), http.StatusCreated).data()
		return "/incidents/" + inc + "/comments/" + c["id"].(string), body
	}
}

// catalog is every permission a token or role may carry.
var catalog = []string{
	"observations:read", "observations:write", "observations:manage",
	"incidents:read", "incidents:write", "incidents:manage",
	"signals:read", "signals:write", "signals:manage",
	"observer:read", "admin",
}

// grantedBy lists, per required permission, every catalog permission that
// grants it (docs/api.md): itself, admin, the stronger actions of the same
// resource, and observer:read for every *:read.
var grantedBy = map[string][]string{
	"observations:read":  {"observations:read", "observations:write", "observations:manage", "observer:read", "admin"},
	"observations:write": {"observations:write", "observations:manage", "admin"},
	"incidents:read":     {"incidents:read", "incidents:write", "incidents:manage", "observer:read", "admin"},
	"incidents:write":    {"incidents:write", "incidents:manage", "admin"},
	"signals:read":       {"signals:read", "signals:write", "signals:manage", "observer:read", "admin"},
	"signals:write":      {"signals:write", "signals:manage", "admin"},
	"signals:manage":     {"signals:manage", "admin"},
	"admin":              {"admin"},
}

func TestEndpointCount(t *testing.T) {
	seen := map[string]bool{}
	for _, ep := range endpoints {
		seen[ep.String()] = true
	}
	if len(seen) != 22 {
		t.Fatalf("the matrix covers %d distinct endpoints, want the contract's 22", len(seen))
	}
}

func TestPermissionMatrix(t *testing.T) {
	e := newEnv(t)
	admin := e.token("org-a", "admin")
	for _, p := range prefixes {
		for _, ep := range slices.Concat(endpoints, additions) {
			t.Run(strings.TrimPrefix(p, "/")+" "+ep.String(), func(t *testing.T) {
				// Refused requests change nothing, so they share one fixture;
				// each granted request gets a fresh one (it may delete it).
				sharedPath, sharedBody := ep.setup(t, e, admin)
				send := func(t *testing.T, tok string) resp {
					t.Helper()
					return call(t, e, ep.method, p+sharedPath, tok, sharedBody)
				}
				sendFresh := func(t *testing.T, tok string) resp {
					t.Helper()
					path, body := ep.setup(t, e, admin)
					return call(t, e, ep.method, p+path, tok, body)
				}
				t.Run("no token", func(t *testing.T) {
					r := send(t, "")
					wantError(t, r, http.StatusUnauthorized, "")
					if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
						t.Errorf("WWW-Authenticate = %q", r.Header.Get("WWW-Authenticate"))
					}
				})
				t.Run("garbage token", func(t *testing.T) {
					wantError(t, send(t, "garbage.not.ajwt"), http.StatusUnauthorized, "")
				})
				t.Run("no permissions", func(t *testing.T) {
					wantError(t, send(t, e.token("org-a")), http.StatusForbidden, "")
				})
				t.Run("unknown permission", func(t *testing.T) {
					wantError(t, send(t, e.token("org-a", "foo:bar", "ADMIN", "signals")), http.StatusForbidden, "")
				})
				for _, perm := range catalog {
					granted := contains(grantedBy[ep.perm], perm)
					kind := "unrelated"
					switch {
					case perm == ep.perm:
						kind = "exact"
					case perm == "admin":
						kind = "admin"
					case granted:
						kind = "implied"
					}
					t.Run(kind+" "+perm, func(t *testing.T) {
						if !granted {
							wantError(t, send(t, e.token("org-a", perm)), http.StatusForbidden, "")
							return
						}
						r := sendFresh(t, e.token("org-a", perm))
						if r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden || r.Status != ep.ok {
							t.Errorf("status %d, want %d; body %s", r.Status, ep.ok, r.Raw)
						}
					})
				}
			})
		}
	}
}

// TestNegativeImplications names the implications that do not hold
// (nothing is implied beyond admin, manage ⊇ write ⊇ read and
// observer:read), and checks that a refused request changed nothing.
func TestNegativeImplications(t *testing.T) {
	e := newEnv(t)
	admin := e.token("org-a", "admin")
	write := e.token("org-a", "signals:write")
	rule := createRule(t, e, admin, map[string]any{"name": "keep", "priority": 1, "severity": "low"})
	ruleID := rule["id"].(string)

	t.Run("signals:write cannot delete a rule", func(t *testing.T) {
		wantError(t, call(t, e, "DELETE", "/v1/classification-rules/"+ruleID, write, nil), http.StatusForbidden, "")
		must(t, call(t, e, "GET", "/v1/classification-rules/"+ruleID, write, nil), http.StatusOK)
	})
	t.Run("signals:write can still update a rule", func(t *testing.T) {
		must(t, call(t, e, "PUT", "/v1/classification-rules/"+ruleID, write, map[string]any{"priority": 2}), http.StatusOK)
	})
	t.Run("signals:write cannot put enrichment settings", func(t *testing.T) {
		wantError(t, call(t, e, "PUT", "/v1/enrichment-settings", write, map[string]any{"rate_limit": 1}), http.StatusForbidden, "")
		got := must(t, call(t, e, "GET", "/v1/enrichment-settings", write, nil), http.StatusOK).data()
		if got["rate_limit"] != float64(60) {
			t.Errorf("rate_limit = %v after a refused PUT", got["rate_limit"])
		}
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
		check(t, tok, "GET", "/v1/observations", nil, 200) // write implies read through a role too
		check(t, tok, "POST", "/v1/observations", obsBody, 201)
		check(t, tok, "GET", "/v1/incidents", nil, 403)
	})
	t.Run("role implications", func(t *testing.T) {
		must(t, call(t, e, "PUT", "/v1/roles/"+roleID, admin, map[string]any{"permissions": []string{"observer:read", "signals:manage"}}), http.StatusOK)
		check(t, tok, "GET", "/v1/incidents", nil, 200)
		check(t, tok, "DELETE", "/v1/classification-rules/"+createRule(t, e, admin, map[string]any{"name": "r", "priority": 0, "severity": "low"})["id"].(string), nil, 200)
		check(t, tok, "GET", "/v1/roles", nil, 403)
		check(t, tok, "POST", "/v1/observations", obsBody, 403)
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
