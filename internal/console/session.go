package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/vigil-soc/vigil/internal/auth"
)

// cookieName holds the signed-in user's token: HttpOnly (no script reads
// it), SameSite=Strict (no other site's request carries it), Secure when
// served over TLS, and expiring with the token.
const cookieName = "vigil_session"

// maxTokenBytes bounds a pasted token (a cookie must stay under 4 KiB).
const maxTokenBytes = 3500

// session is the signed-in user of a request, as GET /v1/me describes
// the token.
type session struct {
	token string
	Me    me
}

type me struct {
	Subject     string    `json:"subject"`
	OrgID       string    `json:"org_id"`
	Roles       []string  `json:"roles"`
	Permissions []string  `json:"permissions"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// Can reports whether the user's effective permissions, as the API
// resolved them, grant perm: a control that would fail is not shown.
func (s *session) Can(perm string) bool { return s != nil && auth.Allowed(s.Me.Permissions, perm) }

func (c *Console) sessionRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /signin", c.signinPage)
	mux.HandleFunc("POST /signin", c.signin)
	mux.HandleFunc("POST /signout", c.signout)
}

type signinView struct {
	Expired bool
	Error   string
	// Provider names the identity provider of "Sign in with …", when
	// OIDC sign-in is configured.
	Provider string
}

func (c *Console) signinView(errMsg string) signinView {
	v := signinView{Error: errMsg}
	if c.oidc != nil {
		v.Provider = c.oidc.cfg.Name
	}
	return v
}

func (c *Console) signinPage(w http.ResponseWriter, r *http.Request) {
	v := c.signinView("")
	v.Expired = r.URL.Query().Has("expired")
	c.render(w, r, http.StatusOK, "signin", page{Title: "Sign in", Data: v})
}

func (c *Console) signin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	token := strings.TrimSpace(r.PostFormValue("token"))
	token = strings.TrimPrefix(token, "Bearer ")
	fail := func(msg string) { c.signinFailed(w, r, http.StatusUnauthorized, msg) }
	if token == "" {
		fail("Paste a token: `vigil token --org ORG --sub NAME --permission …` prints one.")
		return
	}
	if len(token) > maxTokenBytes {
		fail("That token is too long to keep in a cookie (more than 3500 bytes).")
		return
	}
	m, err := c.whoami(r, token)
	if err != nil {
		fail("The API refused this token: " + err.Error())
		return
	}
	c.startSession(w, r, token, m)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// whoami asks the API who token is, as every page does.
func (c *Console) whoami(r *http.Request, token string) (me, error) {
	var m me
	_, err := c.call(r, token, "GET", "/v1/me", nil, nil, &m)
	return m, err
}

// startSession keeps token, which the API accepted, in the session cookie
// until it expires.
func (c *Console) startSession(w http.ResponseWriter, r *http.Request, token string, m me) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: secure(r), Expires: m.ExpiresAt, MaxAge: max(1, int(time.Until(m.ExpiresAt).Seconds())),
	})
}

func (c *Console) signout(w http.ResponseWriter, r *http.Request) {
	clearSession(w, r)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

func clearSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: secure(r), MaxAge: -1})
}

// secure: the request came over TLS, here or at a proxy in front.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

type sessionKey struct{}

// authed runs h for a signed-in user holding perm ("" for any): without a
// session, or with one the API no longer accepts (expired, its key
// rotated), the cookie is cleared and the browser sent to sign in.
func (c *Console) authed(perm string, h func(w http.ResponseWriter, r *http.Request, s *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ck, err := r.Cookie(cookieName)
		if err != nil || ck.Value == "" {
			c.toSignin(w, r, false)
			return
		}
		s := &session{token: ck.Value}
		if _, err := c.call(r, s.token, "GET", "/v1/me", nil, nil, &s.Me); err != nil {
			var ae *apiError
			if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
				clearSession(w, r)
				c.toSignin(w, r, true)
				return
			}
			c.renderError(w, r, nil, http.StatusBadGateway, "The API could not say who you are: "+err.Error())
			return
		}
		if perm != "" && !s.Can(perm) {
			c.renderError(w, r, s, http.StatusForbidden, "Your token lacks the permission "+perm+" this page needs.")
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, s)), s)
	}
}

// toSignin sends the browser to the sign-in page; a script polling for
// fragments gets a 401 instead, and reloads.
func (c *Console) toSignin(w http.ResponseWriter, r *http.Request, expired bool) {
	if r.Header.Get("X-Console-Fragment") != "" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	u := "/signin"
	if expired {
		u += "?" + url.Values{"expired": {"1"}}.Encode()
	}
	http.Redirect(w, r, u, http.StatusSeeOther)
}

// expired handles an API call that answered 401 in the middle of a page:
// the token ran out since the page began.
func (c *Console) expired(w http.ResponseWriter, r *http.Request, err error) bool {
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
		clearSession(w, r)
		c.toSignin(w, r, true)
		return true
	}
	return false
}
