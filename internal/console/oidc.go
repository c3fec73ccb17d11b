package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// OIDC configures sign-in with an OpenID Connect provider: the
// authorization code flow with PKCE (S256). The provider's access token
// becomes the session's token, so the API must verify it: its
// --jwt-jwks-url must be the provider's key set (docs/console.md).
type OIDC struct {
	Issuer       string   // the provider's issuer URL, as its discovery document names it
	ClientID     string   // this console's client at the provider
	ClientSecret string   // "" for a public client (PKCE alone)
	RedirectURL  string   // "": <scheme>://<host of the request>/signin/oidc/callback
	Scopes       []string // "openid" is always asked for
	Name         string   // shown on the sign-in button ("": the issuer's host)
	HTTPClient   *http.Client
}

// flowCookie holds one sign-in's state, nonce and PKCE verifier between
// the redirect to the provider and its redirect back: HttpOnly, scoped to
// the sign-in paths, and SameSite=Lax, since the provider's redirect back
// is a cross-site navigation that a Strict cookie would not follow.
const (
	flowCookie = "vigil_oidc"
	flowPath   = "/signin/oidc"
	flowTTL    = 10 * time.Minute
	// callbackPath is where the provider sends the browser back.
	callbackPath = flowPath + "/callback"
)

// oidcLogin is the console's client of one provider. Discovery is done on
// first use and retried until it succeeds, so that a provider that is
// down when vigil starts does not stop the console from starting.
type oidcLogin struct {
	cfg    OIDC
	client *http.Client
	log    *slog.Logger

	mu       sync.Mutex
	provider *oidc.Provider
}

func newOIDCLogin(cfg OIDC, log *slog.Logger) *oidcLogin {
	if cfg.Name == "" {
		if u, err := url.Parse(cfg.Issuer); err == nil && u.Host != "" {
			cfg.Name = u.Host
		} else {
			cfg.Name = cfg.Issuer
		}
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 15 * time.Second}
	}
	return &oidcLogin{cfg: cfg, client: client, log: log}
}

func (o *oidcLogin) discover(ctx context.Context) (*oidc.Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider != nil {
		return o.provider, nil
	}
	// The key set fetched later keeps this context's HTTP client, not its
	// deadline.
	dctx, cancel := context.WithTimeout(oidc.ClientContext(context.WithoutCancel(ctx), o.client), 15*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(dctx, o.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("console: discover %s: %w", o.cfg.Issuer, err)
	}
	o.provider = p
	return p, nil
}

func (o *oidcLogin) oauth2(r *http.Request, p *oidc.Provider) *oauth2.Config {
	scopes := []string{oidc.ScopeOpenID}
	for _, s := range o.cfg.Scopes {
		if s != oidc.ScopeOpenID {
			scopes = append(scopes, s)
		}
	}
	redirect := o.cfg.RedirectURL
	if redirect == "" {
		scheme := "http"
		if secure(r) {
			scheme = "https"
		}
		redirect = scheme + "://" + r.Host + callbackPath
	}
	return &oauth2.Config{ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: redirect, Scopes: scopes}
}

func (c *Console) oidcRoutes(mux *http.ServeMux) {
	if c.oidc == nil {
		return
	}
	mux.HandleFunc("GET "+flowPath, c.oidcStart)
	mux.HandleFunc("GET "+callbackPath, c.oidcCallback)
}

// oidcStart sends the browser to the provider's authorization endpoint
// with a fresh state, nonce and PKCE challenge, keeping their secrets in
// the flow cookie.
func (c *Console) oidcStart(w http.ResponseWriter, r *http.Request) {
	p, err := c.oidc.discover(r.Context())
	if err != nil {
		c.log.Warn("oidc discovery failed", slog.String("issuer", c.oidc.cfg.Issuer), slog.Any("error", err))
		c.signinFailed(w, r, http.StatusBadGateway, "The identity provider "+c.oidc.cfg.Name+" could not be reached: "+err.Error())
		return
	}
	f := flow{State: randomString(), Nonce: randomString(), Verifier: oauth2.GenerateVerifier(), Started: time.Now()}
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Value: f.encode(), Path: flowPath, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: secure(r), MaxAge: int(flowTTL.Seconds())})
	u := c.oidc.oauth2(r, p).AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier))
	http.Redirect(w, r, u, http.StatusFound)
}

// oidcCallback completes a sign-in: the state must be the flow cookie's,
// the code is exchanged with the PKCE verifier, the ID token is verified
// (signature by the provider's keys, issuer, audience, expiry, nonce),
// and the access token must be one the API accepts, as a pasted token
// must.
func (c *Console) oidcCallback(w http.ResponseWriter, r *http.Request) {
	clearFlow(w, r)
	q := r.URL.Query()
	ck, err := r.Cookie(flowCookie)
	if err != nil {
		c.signinFailed(w, r, http.StatusBadRequest, "This sign-in was not started here, or took longer than 10 minutes (or cookies are blocked). Start again.")
		return
	}
	f, ok := decodeFlow(ck.Value)
	if !ok || time.Since(f.Started) > flowTTL {
		c.signinFailed(w, r, http.StatusBadRequest, "This sign-in took longer than 10 minutes and has expired. Start again.")
		return
	}
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.State)) != 1 {
		// Not the answer to the request this browser sent: a forged or
		// replayed redirect. Nothing of it is shown.
		c.signinFailed(w, r, http.StatusBadRequest, "The provider's answer does not belong to the sign-in this browser started (state mismatch), and was refused. Start again.")
		return
	}
	if e := q.Get("error"); e != "" {
		msg := "The identity provider " + c.oidc.cfg.Name + " refused the sign-in: " + clip(e, 100)
		if d := q.Get("error_description"); d != "" {
			msg += " (" + clip(d, 300) + ")"
		}
		c.signinFailed(w, r, http.StatusUnauthorized, msg)
		return
	}
	code := q.Get("code")
	if code == "" {
		c.signinFailed(w, r, http.StatusBadRequest, "The provider sent the browser back without an authorization code. Start again.")
		return
	}
	p, err := c.oidc.discover(r.Context())
	if err != nil {
		c.signinFailed(w, r, http.StatusBadGateway, "The identity provider "+c.oidc.cfg.Name+" could not be reached: "+err.Error())
		return
	}
	ctx := oidc.ClientContext(r.Context(), c.oidc.client)
	tok, err := c.oidc.oauth2(r, p).Exchange(ctx, code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		c.log.Info("oidc code exchange refused", slog.String("issuer", c.oidc.cfg.Issuer), slog.String("error", exchangeError(err)))
		c.signinFailed(w, r, http.StatusBadGateway, "The identity provider refused to exchange the authorization code: "+exchangeError(err))
		return
	}
	rawID, _ := tok.Extra("id_token").(string)
	if rawID == "" {
		c.signinFailed(w, r, http.StatusBadGateway, "The identity provider answered without an ID token (is the openid scope allowed for this client?).")
		return
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: c.oidc.cfg.ClientID}).Verify(ctx, rawID)
	if err != nil {
		c.signinFailed(w, r, http.StatusUnauthorized, "The provider's ID token was refused: "+err.Error())
		return
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(f.Nonce)) != 1 {
		c.signinFailed(w, r, http.StatusUnauthorized, "The provider's ID token was refused: its nonce is not this sign-in's.")
		return
	}
	if idt.AccessTokenHash != "" {
		if err := idt.VerifyAccessToken(tok.AccessToken); err != nil {
			c.signinFailed(w, r, http.StatusUnauthorized, "The provider's access token does not match its ID token (at_hash).")
			return
		}
	}
	if strings.Count(tok.AccessToken, ".") != 2 {
		c.signinFailed(w, r, http.StatusUnauthorized, "The provider signed you in as "+clip(idt.Subject, 100)+", but its access token is not a JWT (an opaque one) and the API "+
			"cannot verify it. Configure the provider to issue JWT access tokens, carrying org_id, for this client.")
		return
	}
	if len(tok.AccessToken) > maxTokenBytes {
		c.signinFailed(w, r, http.StatusUnauthorized, fmt.Sprintf("The provider signed you in as %s, but its access token is %d bytes, more than the %d a session cookie may hold. "+
			"Ask the provider for a smaller token (fewer claims, groups left out).", clip(idt.Subject, 100), len(tok.AccessToken), maxTokenBytes))
		return
	}
	m, err := c.whoami(r, tok.AccessToken)
	if err != nil {
		c.signinFailed(w, r, http.StatusUnauthorized, "The provider signed you in as "+clip(idt.Subject, 100)+", but the API refused its access token: "+err.Error()+
			". The API must verify the provider's tokens (--jwt-jwks-url, --jwt-issuer, --jwt-audience) and the token must carry org_id.")
		return
	}
	c.log.Info("oidc sign-in", slog.String("issuer", c.oidc.cfg.Issuer), slog.String("subject", m.Subject), slog.String("org_id", m.OrgID))
	c.startSession(w, r, tok.AccessToken, m)
	// The browser came here from the provider's site: a redirect would
	// still be part of that cross-site navigation, on which the
	// SameSite=Strict session cookie is not sent. A page of this site that
	// moves on to the queue starts a same-site one.
	w.Header().Set("Refresh", "0; url=/")
	c.render(w, r, http.StatusOK, "signedin", page{Title: "Signed in", Data: m})
}

func (c *Console) signinFailed(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.render(w, r, status, "signin", page{Title: "Sign in", Data: c.signinView(msg)})
}

func clearFlow(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Value: "", Path: flowPath, HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: secure(r), MaxAge: -1})
}

// exchangeError is the provider's refusal of a token request, as its
// error code and description say it, without the response's body.
func exchangeError(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		msg := re.ErrorCode
		if msg == "" {
			msg = re.Response.Status
		}
		if re.ErrorDescription != "" {
			msg += " (" + clip(re.ErrorDescription, 300) + ")"
		}
		return msg
	}
	return err.Error()
}

// flow is one sign-in in progress, as the flow cookie keeps it.
type flow struct {
	State, Nonce, Verifier string
	Started                time.Time
}

func (f flow) encode() string {
	return strings.Join([]string{f.State, f.Nonce, f.Verifier, strconv.FormatInt(f.Started.Unix(), 10)}, ".")
}

func decodeFlow(s string) (flow, bool) {
	parts := strings.Split(s, ".")
	if len(s) > 512 || len(parts) != 4 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return flow{}, false
	}
	sec, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil {
		return flow{}, false
	}
	return flow{State: parts[0], Nonce: parts[1], Verifier: parts[2], Started: time.Unix(sec, 0)}, true
}

// randomString is 256 random bits, base64url without padding.
func randomString() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
