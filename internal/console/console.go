// Package console is the triage console: HTML pages served by the same
// binary at "/" beside the API, rendered on the server with html/template
// and a little plain JavaScript, their assets embedded. Every page reads
// and writes through the public JSON API, called in-process with the
// signed-in user's token, so that the console sees exactly what the token
// may see and its permission checks and org isolation are the API's.
package console

import (
	"embed"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Config configures a Console.
type Config struct {
	// API is the JSON API's handler; every page calls it in-process.
	API    http.Handler
	Logger *slog.Logger
	// PollInterval is how often an open queue asks for new and grown
	// incidents (0: 10 s).
	PollInterval time.Duration
	// OIDC, when not nil, offers sign-in with that identity provider
	// beside the token box.
	OIDC *OIDC
}

// Console is the HTTP handler of the console's pages.
type Console struct {
	api     http.Handler
	log     *slog.Logger
	poll    time.Duration
	views   *views
	oidc    *oidcLogin // nil: token sign-in only
	handler http.Handler
}

// New returns a Console with every page registered. Its templates are
// embedded and parsed here; one that does not parse is a bug of the
// build, which the package's tests catch, so New panics on it.
func New(cfg Config) *Console {
	v, err := loadViews()
	if err != nil {
		panic(err)
	}
	c := &Console{api: cfg.API, log: cfg.Logger, poll: cfg.PollInterval, views: v}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.poll == 0 {
		c.poll = 10 * time.Second
	}
	if cfg.OIDC != nil {
		c.oidc = newOIDCLogin(*cfg.OIDC, c.log)
	}
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	files := http.FileServerFS(static)
	mux.Handle("GET /static/", http.StripPrefix("/static/", cacheFor(time.Hour, files)))
	c.sessionRoutes(mux)
	c.oidcRoutes(mux)
	c.queueRoutes(mux)
	c.incidentRoutes(mux)
	c.caseRoutes(mux)
	c.searchRoutes(mux)
	c.observationRoutes(mux)
	c.ruleRoutes(mux)
	c.detectionRoutes(mux)
	c.adminRoutes(mux)
	c.auditRoutes(mux)
	mux.HandleFunc("/", c.notFound)
	// Every state-changing request must come from the console's own pages:
	// browsers say where a request comes from (Sec-Fetch-Site, Origin),
	// and a cross-site POST is refused before any handler runs. The
	// session cookie is SameSite=Strict besides.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.renderError(w, r, nil, http.StatusForbidden, "This request came from another site and was refused (cross-site request forgery protection). Reload the console and try again.")
	}))
	c.handler = securityHeaders(cop.Handler(mux))
	return c
}

// ServeHTTP implements http.Handler.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.handler.ServeHTTP(w, r) }

// Mount returns the handler of the API's address: the API at its own
// paths, the console everywhere else. A request for an unknown path that
// does not ask for HTML (a client of the API) gets the API's JSON 404.
func Mount(api http.Handler, c *Console) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case strings.HasPrefix(p, "/v1/"), strings.HasPrefix(p, "/api/"), p == "/v1", p == "/api",
			p == "/healthz", p == "/readyz", p == "/metrics":
			api.ServeHTTP(w, r)
		case c.serves(r):
			c.ServeHTTP(w, r)
		default:
			api.ServeHTTP(w, r)
		}
	})
}

// serves reports whether r is the console's: a page it has, or a
// browser's request for HTML.
func (c *Console) serves(r *http.Request) bool {
	p := r.URL.Path
	for _, prefix := range []string{"/static/", "/signin", "/signout", "/incidents", "/queue", "/search", "/observations", "/rules", "/roles", "/settings", "/nodes/", "/detections", "/audit"} {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return p == "/" || strings.Contains(r.Header.Get("Accept"), "text/html")
}

func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	c.renderError(w, r, nil, http.StatusNotFound, "There is no page at "+r.URL.Path+".")
}

// securityHeaders keeps the pages from being framed or running scripts of
// other origins.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

func cacheFor(d time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age="+itoa(int(d.Seconds())))
		next.ServeHTTP(w, r)
	})
}
