package console

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// fakeAPI answers /v1/me for the token "good" (expiring in an hour) and
// 401 for any other, and records the calls: the console's own handling
// of sessions, without a store (TestBrowser runs the real API).
type fakeAPI struct{ calls []string }

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls = append(f.calls, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer good" {
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(map[string]any{"success": false, "message": "token expired", "error": map[string]any{"code": "unauthenticated"}})
		return
	}
	switch r.URL.Path {
	case "/v1/me":
		json.NewEncoder(w).Encode(map[string]any{"success": true, "message": "ok", "data": map[string]any{
			"subject": "alice", "org_id": "acme", "roles": []string{}, "permissions": []string{"incidents:read"},
			"expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}})
	default:
		w.WriteHeader(http.StatusForbidden)
		json.NewEncoder(w).Encode(map[string]any{"success": false, "message": "permission incidents:write required", "error": map[string]any{"code": "permission_denied"}})
	}
}

func TestSignInCookie(t *testing.T) {
	c := New(Config{API: &fakeAPI{}})
	for _, tc := range []struct {
		name, token string
		tls         bool
		wantStatus  int
		wantSecure  bool
	}{
		{"good token over HTTP", "good", false, http.StatusSeeOther, false},
		{"good token behind TLS", "good", true, http.StatusSeeOther, true},
		{"refused token", "bad", false, http.StatusUnauthorized, false},
		{"empty", "", false, http.StatusUnauthorized, false},
	} {
		r := httptest.NewRequest("POST", "/signin", strings.NewReader(url.Values{"token": {tc.token}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if tc.tls {
			r.Header.Set("X-Forwarded-Proto", "https")
		}
		w := httptest.NewRecorder()
		c.ServeHTTP(w, r)
		if w.Code != tc.wantStatus {
			t.Errorf("%s: status %d, want %d: %s", tc.name, w.Code, tc.wantStatus, w.Body)
			continue
		}
		cookies := w.Result().Cookies()
		if tc.wantStatus != http.StatusSeeOther {
			if len(cookies) != 0 {
				t.Errorf("%s: cookie set for a refused token", tc.name)
			}
			if !strings.Contains(w.Body.String(), "Sign in") {
				t.Errorf("%s: no sign-in page with the error", tc.name)
			}
			continue
		}
		if len(cookies) != 1 {
			t.Fatalf("%s: cookies %v", tc.name, cookies)
		}
		ck := cookies[0]
		if ck.Name != cookieName || ck.Value != tc.token || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure != tc.wantSecure || ck.Path != "/" {
			t.Errorf("%s: cookie %+v", tc.name, ck)
		}
		if ck.MaxAge < 3500 || ck.MaxAge > 3600 {
			t.Errorf("%s: MaxAge %d, want the token's hour", tc.name, ck.MaxAge)
		}
	}
}

func TestSessionExpiry(t *testing.T) {
	c := New(Config{API: &fakeAPI{}})
	get := func(path, token string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		if token != "" {
			r.AddCookie(&http.Cookie{Name: cookieName, Value: token})
		}
		w := httptest.NewRecorder()
		c.ServeHTTP(w, r)
		return w
	}
	if w := get("/search", ""); w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/signin" {
		t.Errorf("no session: %d %s", w.Code, w.Header().Get("Location"))
	}
	// A cookie whose token the API no longer accepts: cleared, and the
	// user told why.
	w := get("/search", "expired")
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/signin?expired=1" {
		t.Errorf("expired: %d %s", w.Code, w.Header().Get("Location"))
	}
	if ck := w.Result().Cookies(); len(ck) != 1 || ck[0].MaxAge >= 0 || ck[0].Value != "" {
		t.Errorf("expired session's cookie not cleared: %v", ck)
	}
	// A page the token lacks the permission for says which.
	w = get("/search", "good")
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "signals:read") {
		t.Errorf("missing permission: %d %s", w.Code, w.Body)
	}
}

func TestCrossSiteRefused(t *testing.T) {
	api := &fakeAPI{}
	c := New(Config{API: api})
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"other origin", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"same origin", map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusSeeOther},
	} {
		api.calls = nil
		r := httptest.NewRequest("POST", "http://console.example/signout", nil)
		for k, v := range tc.headers {
			r.Header.Set(k, v)
		}
		r.AddCookie(&http.Cookie{Name: cookieName, Value: "good"})
		w := httptest.NewRecorder()
		c.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, w.Code, tc.want)
		}
		if tc.want == http.StatusForbidden && (len(w.Result().Cookies()) != 0 || len(api.calls) != 0) {
			t.Errorf("%s: a refused request reached a handler", tc.name)
		}
	}
}

func TestMountRoutes(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-From", "api") })
	h := Mount(api, New(Config{API: &fakeAPI{}}))
	for _, tc := range []struct {
		path, accept, want string
	}{
		{"/v1/incidents", "text/html", "api"},
		{"/api/v1/incidents", "", "api"},
		{"/healthz", "", "api"},
		{"/nope", "application/json", "api"},
		{"/nope", "text/html,application/xhtml+xml", "console"},
		{"/", "", "console"},
		{"/static/console.css", "", "console"},
		{"/incidents/x", "", "console"},
		{"/detections", "", "console"},
		{"/audit", "", "console"},
		{"/nodes/incidents", "", "console"},
		{"/queue/live", "", "console"},
		{"/signin/oidc", "", "console"},
	} {
		r := httptest.NewRequest("GET", tc.path, nil)
		if tc.accept != "" {
			r.Header.Set("Accept", tc.accept)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		got := "console"
		if w.Header().Get("X-From") == "api" {
			got = "api"
		}
		if got != tc.want {
			t.Errorf("%s (Accept %q): served by %s, want %s", tc.path, tc.accept, got, tc.want)
		}
	}
}

func TestHighlight(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		terms []string
		want  string
	}{
		{"from 10.0.0.1 port 22", []string{"10.0.0.1"}, "from <mark>10.0.0.1</mark> port 22"},
		{"from 10.0.0.15 port 22", []string{"10.0.0.1"}, "from 10.0.0.15 port 22"},
		{"Failed password for root", []string{"failed", "ROOT"}, "<mark>Failed</mark> password for <mark>root</mark>"},
		{"<script>alert(1)</script> sshd", []string{"sshd"}, "&lt;script&gt;alert(1)&lt;/script&gt; <mark>sshd</mark>"},
		{"a b", []string{"a b"}, "<mark>a b</mark>"},
		{"sshd", nil, "sshd"},
		{"bad \xff byte sshd", []string{"sshd"}, "bad \uFFFD byte <mark>sshd</mark>"},
	} {
		if got := string(highlight(tc.raw, tc.terms)); got != tc.want {
			t.Errorf("highlight(%q, %q) = %q, want %q", tc.raw, tc.terms, got, tc.want)
		}
	}
}

func TestSearchTerms(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{`203.0.113.7 sshd`, []string{"203.0.113.7", "sshd"}},
		{`"failed password" OR invalid -noise adm*`, []string{"failed password", "invalid", "adm"}},
		{`  `, nil},
		{`"unterminated`, []string{"unterminated"}},
	} {
		got := searchTerms(tc.q)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("searchTerms(%q) = %q, want %q", tc.q, got, tc.want)
		}
	}
}

func TestLocalPath(t *testing.T) {
	for in, want := range map[string]string{"/?status=1": "/?status=1", "//evil.example/": "/", "https://evil.example": "/", "/\\evil": "/", "": "/"} {
		if got := localPath(in, "/"); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzHighlight: any line and query give well-formed output that says
// the line's text and nothing else.
func FuzzHighlight(f *testing.F) {
	f.Add("Nov 22 sshd[811]: Failed password for root from 203.0.113.7", `203.0.113.7 "failed password" -x OR y*`)
	f.Add("<b>&amp;</b>", "b amp")
	f.Fuzz(func(t *testing.T, raw, query string) {
		out := string(highlight(raw, searchTerms(query)))
		plain := strings.NewReplacer("<mark>", "", "</mark>", "").Replace(out)
		if strings.ContainsAny(strings.NewReplacer("&lt;", "", "&gt;", "", "&amp;", "", "&#34;", "", "&#39;", "").Replace(plain), "<>") {
			t.Fatalf("unescaped markup in %q", out)
		}
		if strings.Count(out, "<mark>") != strings.Count(out, "</mark>") {
			t.Fatalf("unbalanced marks in %q", out)
		}
	})
}
