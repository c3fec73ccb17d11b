package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/api"
	"github.com/vigil-soc/vigil/internal/auth"
	"github.com/vigil-soc/vigil/internal/console"
	"github.com/vigil-soc/vigil/internal/sqlite"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// provider is a real OpenID Provider: zitadel/oidc's (OpenID Certified)
// op package as its example server sets it up, with its login form and
// in-memory users, on a loopback server. Its access tokens are JWTs
// carrying Vigil's claims: what docs/console.md asks of a provider.
type provider struct {
	*storage.Storage
	// claims of each user id in its access tokens
	claims map[string]map[string]any
}

// GetPrivateClaimsFromScopes adds Vigil's claims to the user's JWT access
// tokens.
func (p *provider) GetPrivateClaimsFromScopes(ctx context.Context, userID, clientID string, scopes []string) (map[string]any, error) {
	return p.claims[userID], nil
}

// GetClientByClientID makes the console's client's access tokens JWTs
// (the example's clients have opaque ones, which opaqueClientID keeps).
func (p *provider) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := p.Storage.GetClientByClientID(ctx, id)
	if err != nil || id == opaqueClientID {
		return c, err
	}
	return jwtClient{c}, nil
}

type jwtClient struct{ op.Client }

func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }

const (
	clientID       = "vigil-console"
	opaqueClientID = "vigil-console-opaque"
	clientSecret   = "console-secret-at-the-provider"
	user1          = "test-user@127.0.0.1" // id1 of the example's users
	user2          = "test-user2"          // id2
	password       = "verysecure"
)

// lateHandler is a server's handler set once the server's URL, which it
// needs, is known.
type lateHandler struct {
	mu sync.Mutex
	h  http.Handler
}

func (l *lateHandler) set(h http.Handler) { l.mu.Lock(); l.h = h; l.mu.Unlock() }
func (l *lateHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	h := l.h
	l.mu.Unlock()
	h.ServeHTTP(w, r)
}

func startServer(t *testing.T) (*httptest.Server, *lateHandler) {
	l := &lateHandler{h: http.NotFoundHandler()}
	srv := httptest.NewServer(l)
	t.Cleanup(srv.Close)
	return srv, l
}

// startProvider runs the provider, named host (its server listens on
// 127.0.0.1), with the console's client registered for each of the
// consoles' callback URLs.
func startProvider(t *testing.T, host string, consoles ...string) string {
	srv, late := startServer(t)
	issuer := strings.Replace(srv.URL, "127.0.0.1", host, 1)
	var redirects []string
	for _, c := range consoles {
		redirects = append(redirects, c+"/signin/oidc/callback")
	}
	clients := map[string]*storage.Client{clientID: storage.WebClient(clientID, clientSecret, redirects...),
		opaqueClientID: storage.WebClient(opaqueClientID, clientSecret, redirects...)}
	p := &provider{Storage: storage.NewStorageWithClients(storage.NewUserStore(issuer), clients), claims: map[string]map[string]any{
		"id1": {"org_id": "acme", "permissions": []string{"incidents:read", "observations:read"}},
		// a user whose token is too large for a cookie
		"id2": {"org_id": "acme", "groups": strings.Split(strings.Repeat("a-rather-long-group-name-of-the-directory,", 100), ",")},
	}}
	late.set(exampleop.SetupServer(issuer, p, nil, false))
	return issuer
}

// startVigil runs Vigil's API and console on srv, the API verifying
// tokens by the provider's key set with the given issuer and audience.
func startVigil(t *testing.T, late *lateHandler, cfg console.OIDC, jwks, issuer, audience string) {
	store, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "vigil.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	v, err := auth.NewVerifier(t.Context(), auth.Config{JWKSURL: jwks, Issuer: issuer, Audience: audience})
	if err != nil {
		t.Fatal(err)
	}
	a := api.New(api.Config{Store: store, Verifier: v})
	late.set(console.Mount(a, console.New(console.Config{API: a, OIDC: &cfg})))
}

type browser struct {
	t      *testing.T
	client *http.Client
}

func newBrowser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, client: &http.Client{Jar: jar}}
}

// get follows redirects and returns the last response's status, body and
// URL.
func (b *browser) do(req *http.Request) (int, string, *http.Response) {
	b.t.Helper()
	req.Header.Set("Accept", "text/html")
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp
}

func (b *browser) get(u string) (int, string, *http.Response) {
	req, _ := http.NewRequest("GET", u, nil)
	return b.do(req)
}

func (b *browser) post(u string, form url.Values) (int, string, *http.Response) {
	req, _ := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

var loginID = regexp.MustCompile(`name="id" value="([^"]+)"`)

// toLogin starts the sign-in at the console and returns the provider's
// login form's auth request id.
func (b *browser) toLogin(console string) string {
	b.t.Helper()
	status, body, resp := b.get(console + "/signin/oidc")
	m := loginID.FindStringSubmatch(body)
	if status != http.StatusOK || m == nil {
		b.t.Fatalf("sign-in start: %d at %s, no login form: %.300s", status, resp.Request.URL, body)
	}
	return m[1]
}

// login submits the provider's login form; the provider sends the browser
// back to the console's callback.
func (b *browser) login(issuer, id, user string) (int, string, *http.Response) {
	return b.post(issuer+"/login/username", url.Values{"id": {id}, "username": {user}, "password": {password}})
}

// TestOIDCSignIn signs in through a real OpenID Provider with the
// authorization code flow and PKCE, the API verifying the provider's
// access token by its JWKS, and checks each way the flow is refused.
func TestOIDCSignIn(t *testing.T) {
	good, goodLate := startServer(t)
	wrongAud, wrongAudLate := startServer(t)
	wrongIss, wrongIssLate := startServer(t)
	opaque, opaqueLate := startServer(t)
	issuer := startProvider(t, "127.0.0.1", good.URL, wrongAud.URL, wrongIss.URL, opaque.URL)
	jwks := issuer + "/keys"
	cfg := console.OIDC{Issuer: issuer, ClientID: clientID, ClientSecret: clientSecret, Name: "Example IdP"}
	startVigil(t, goodLate, cfg, jwks, issuer, clientID)
	startVigil(t, wrongAudLate, cfg, jwks, issuer, "another-api")
	startVigil(t, wrongIssLate, cfg, jwks, "https://idp.other.example", clientID)
	opaqueCfg := cfg
	opaqueCfg.ClientID = opaqueClientID
	startVigil(t, opaqueLate, opaqueCfg, jwks, issuer, opaqueClientID)

	t.Run("signed in as the provider's user, signed out", func(t *testing.T) {
		b := newBrowser(t)
		_, body, _ := b.get(good.URL + "/signin")
		if !strings.Contains(body, "Sign in with Example IdP") {
			t.Fatalf("sign-in page without the provider's button: %.500s", body)
		}
		status, body, resp := b.login(issuer, b.toLogin(good.URL), user1)
		if status != http.StatusOK || !strings.Contains(body, "Signed in as <b>id1</b> of <b>acme</b>") {
			t.Fatalf("callback: %d at %s: %.800s", status, resp.Request.URL, body)
		}
		if resp.Header.Get("Refresh") != "0; url=/" {
			t.Errorf("Refresh header %q, want the page to move on to the queue", resp.Header.Get("Refresh"))
		}
		var session *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == "vigil_session" {
				session = c
			}
		}
		if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.MaxAge <= 0 {
			t.Fatalf("session cookie %+v", session)
		}
		callback := resp.Request.URL.String()
		status, body, resp = b.get(good.URL + "/")
		if status != http.StatusOK || resp.Request.URL.Path != "/" || !strings.Contains(body, "id1 · <b>acme</b>") {
			t.Fatalf("queue after sign-in: %d at %s: %.500s", status, resp.Request.URL, body)
		}
		// The provider's answer replayed: its flow is over.
		if status, body, _ := b.get(callback); status != http.StatusBadRequest || !strings.Contains(body, "was not started here") {
			t.Errorf("replayed callback: %d %.300s", status, body)
		}
		if status, _, resp := b.post(good.URL+"/signout", nil); status != http.StatusOK || resp.Request.URL.Path != "/signin" {
			t.Fatalf("sign-out: %d at %s", status, resp.Request.URL)
		}
		if _, _, resp := b.get(good.URL + "/"); resp.Request.URL.Path != "/signin" {
			t.Fatalf("after sign-out / is %s, want the sign-in page", resp.Request.URL)
		}
	})

	// refused signs in at the provider through console and expects the
	// console's page to refuse the sign-in with status and msg, without
	// a session.
	refused := func(t *testing.T, b *browser, status int, body string, resp *http.Response, msg string) {
		t.Helper()
		if status == http.StatusOK || !strings.Contains(body, msg) {
			t.Errorf("got %d at %s, want a refusal saying %q: %.1500s", status, resp.Request.URL, msg, body)
		}
		if _, _, resp := b.get(resp.Request.URL.Scheme + "://" + resp.Request.URL.Host + "/"); resp.Request.URL.Path != "/signin" {
			t.Errorf("a refused sign-in left a session: / is %s", resp.Request.URL)
		}
	}
	t.Run("authorization request", func(t *testing.T) {
		b := newBrowser(t)
		b.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		status, _, resp := b.get(good.URL + "/signin/oidc")
		loc, _ := url.Parse(resp.Header.Get("Location"))
		q := loc.Query()
		if status != http.StatusFound || !strings.HasPrefix(loc.String(), issuer+"/auth?") || q.Get("response_type") != "code" ||
			q.Get("client_id") != clientID || q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 ||
			len(q.Get("state")) != 43 || len(q.Get("nonce")) != 43 || q.Get("redirect_uri") != good.URL+"/signin/oidc/callback" {
			t.Fatalf("%d to %s", status, loc)
		}
		ck := resp.Cookies()
		if len(ck) != 1 || ck[0].Name != "vigil_oidc" || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteLaxMode ||
			ck[0].Path != "/signin/oidc" || ck[0].MaxAge != 600 || strings.Contains(ck[0].Value, q.Get("code_challenge")) {
			t.Fatalf("flow cookie %+v", ck)
		}
	})
	// The provider signs the user in; the API refuses the access token.
	for _, tc := range []struct {
		name, console, user, msg string
	}{
		{"access token of another audience", wrongAud.URL, user1, "but the API refused its access token: invalid token audience"},
		{"access token of another issuer", wrongIss.URL, user1, "but the API refused its access token: invalid token issuer"},
		{"access token too large for the cookie", good.URL, user2, "more than the 3500 a session cookie may hold"},
		{"opaque access token", opaque.URL, user1, "its access token is not a JWT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBrowser(t)
			status, body, resp := b.login(issuer, b.toLogin(tc.console), tc.user)
			refused(t, b, status, body, resp, tc.msg)
		})
	}
	t.Run("forged state", func(t *testing.T) {
		b := newBrowser(t)
		b.toLogin(good.URL)
		status, body, resp := b.get(good.URL + "/signin/oidc/callback?state=forged&code=stolen")
		refused(t, b, status, body, resp, "(state mismatch)")
	})
	t.Run("answer with another state", func(t *testing.T) {
		b := newBrowser(t)
		callback := b.stopAtCallback(issuer, good.URL, user1)
		q := callback.Query()
		q.Set("state", q.Get("state")+"x")
		callback.RawQuery = q.Encode()
		status, body, resp := b.get(callback.String())
		refused(t, b, status, body, resp, "(state mismatch)")
	})
	t.Run("code without this flow's PKCE verifier", func(t *testing.T) {
		b := newBrowser(t)
		callback := b.stopAtCallback(issuer, good.URL, user1)
		parts := strings.Split(b.flowCookie(callback), ".")
		parts[2] = strings.Repeat("v", 43)
		b.setFlowCookie(callback, strings.Join(parts, "."))
		status, body, resp := b.get(callback.String())
		refused(t, b, status, body, resp, "refused to exchange the authorization code: invalid_grant")
	})
	t.Run("provider refused", func(t *testing.T) {
		b := newBrowser(t)
		b.toLogin(good.URL)
		u, _ := url.Parse(good.URL + "/signin/oidc/callback")
		state := strings.Split(b.flowCookie(u), ".")[0]
		u.RawQuery = url.Values{"state": {state}, "error": {"access_denied"}, "error_description": {"<b>no</b>"}}.Encode()
		status, body, resp := b.get(u.String())
		refused(t, b, status, body, resp, "refused the sign-in: access_denied (&lt;b&gt;no&lt;/b&gt;)")
	})
	t.Run("not started here", func(t *testing.T) {
		b := newBrowser(t)
		status, body, resp := b.get(good.URL + "/signin/oidc/callback?state=s&code=c")
		refused(t, b, status, body, resp, "was not started here")
	})
	t.Run("expired", func(t *testing.T) {
		b := newBrowser(t)
		callback := b.stopAtCallback(issuer, good.URL, user1)
		parts := strings.Split(b.flowCookie(callback), ".")
		parts[3] = strconv.FormatInt(time.Now().Add(-11*time.Minute).Unix(), 10)
		b.setFlowCookie(callback, strings.Join(parts, "."))
		status, body, resp := b.get(callback.String())
		refused(t, b, status, body, resp, "has expired")
	})
	t.Run("issuer not the provider's", func(t *testing.T) {
		other, late := startServer(t)
		// The provider's discovery document names 127.0.0.1, not localhost.
		c := cfg
		c.Issuer = strings.Replace(issuer, "127.0.0.1", "localhost", 1)
		startVigil(t, late, c, jwks, issuer, clientID)
		b := newBrowser(t)
		status, body, resp := b.get(other.URL + "/signin/oidc")
		refused(t, b, status, body, resp, "did not match the issuer URL returned by provider")
		if status != http.StatusBadGateway {
			t.Errorf("status %d, want 502", status)
		}
	})
}

// stopAtCallback signs user in at the provider and returns the URL the
// provider sends the browser back to, not followed.
func (b *browser) stopAtCallback(issuer, console, user string) *url.URL {
	b.t.Helper()
	id := b.toLogin(console)
	var callback *url.URL
	b.client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Path == "/signin/oidc/callback" {
			callback = req.URL
			return http.ErrUseLastResponse
		}
		return nil
	}
	b.login(issuer, id, user)
	b.client.CheckRedirect = nil
	if callback == nil {
		b.t.Fatal("the provider did not send the browser back to the console")
	}
	return callback
}

func (b *browser) flowCookie(u *url.URL) string {
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == "vigil_oidc" {
			return c.Value
		}
	}
	b.t.Fatal("no flow cookie")
	return ""
}

func (b *browser) setFlowCookie(u *url.URL, v string) {
	b.client.Jar.SetCookies(u, []*http.Cookie{{Name: "vigil_oidc", Value: v, Path: "/signin/oidc"}})
}
