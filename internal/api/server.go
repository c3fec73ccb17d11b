// Package api serves Vigil's JSON API over net/http: routes, middleware
// (request id, recovery, metrics, authentication, permissions), one file
// per resource, and the single map from error code to HTTP status.
package api

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/auth"
	"github.com/vigil-soc/vigil/internal/correlate"
	"github.com/vigil-soc/vigil/internal/rules"
	"github.com/vigil-soc/vigil/internal/webhook"
)

// Ingester takes accepted artifacts. A nil error means they are durable.
type Ingester interface {
	Ingest(ctx context.Context, org string, arts []*vigil.Artifact) error
}

// Readiness reports whether a dependency (the queue) is reachable. One
// that also has Name() string is reported under that name, and one with
// Status() string reports that in place of "ok" when ready.
type Readiness interface {
	Ready(ctx context.Context) error
}

// Store is what the API reads and writes: every record of the store
// contract, and the correlation transactions that its observation
// endpoints run through correlate.Engine.
type Store interface {
	vigil.Store
	correlate.Store
}

// Screens caches what each org's detection counts (suppress.Cache).
type Screens interface {
	// Invalidate forgets org's cached screen.
	Invalidate(org string)
}

// Config wires a Server.
type Config struct {
	Store    Store
	Verifier *auth.Verifier
	Ingester Ingester
	// Ready lists extra dependencies checked by /readyz besides the store.
	Ready       []Readiness
	Logger      *slog.Logger
	Registry    *prometheus.Registry
	Correlation vigil.CorrelationPolicy
	// Screens is told when an org's suppressions or settings change, so
	// that the workers of this process screen its signals by the new
	// ones at once (a suppress.Cache they share); nil when none run here.
	Screens Screens
	// DetectionRules is told when an org's detection rules change, so
	// that this process's workers run the new ones at once (a
	// detectionrules.Cache they share); nil when none run here.
	DetectionRules Screens
	// AccessLog logs one line per request at info level (method, path,
	// status, duration, org, request id; never the token or the body).
	AccessLog bool
	// Now returns the current time; tests may fix it.
	Now func() time.Time
	// NoMetrics leaves GET /metrics out of the API's routes (404): vigil
	// serve serves it on a listener of its own unless asked otherwise.
	NoMetrics bool
	// MetricsToken, when set, is the bearer token /metrics requires.
	MetricsToken string

	// Bounds on the work of one request (0: the Default… values).
	// RequestTimeout is the deadline of every request but ingest (whose
	// waits the queue bounds) and searches, which have SearchTimeout;
	// MaxOrgSearches is how many searches one org may run at once in this
	// process (more are 429).
	RequestTimeout time.Duration
	SearchTimeout  time.Duration
	MaxOrgSearches int

	// Bounds on request bodies (0: the Default… values): BodyBudget is
	// how many bytes of bodies the server holds at once (more: 503),
	// ClientBodyBudget how many of them one remote address, or one org,
	// may hold (more: 429); a body must arrive within BodyGrace plus its
	// size at BodyMinRate bytes per second (else 408).
	BodyBudget       int64
	ClientBodyBudget int64
	BodyMinRate      int64
	BodyGrace        time.Duration

	// KeyTTL is how long this process trusts what it read of an API key
	// (0: auth.DefaultKeyTTL): a revoked key stops working within it.
	KeyTTL time.Duration

	// Reclassify is told when a rule write left an org's open incidents
	// to re-classify (rules.Reclassifier, which every serve and worker
	// process runs); nil: the background loops find the marks by polling.
	Reclassify interface{ Notify() }

	// The live stream (GET /v1/events; 0: the Default… values): how
	// often each stream reads the store, how many one org may hold open.
	EventPoll     time.Duration
	MaxOrgStreams int

	// Webhooks says where webhook subscriptions may send (the operator's
	// --webhook-allow-… flags); the zero Policy: https:// to public
	// addresses only.
	Webhooks webhook.Policy
}

// Server is the HTTP handler of the API.
type Server struct {
	store    vigil.Store
	engine   *correlate.Engine // records, updates and deletes observations, and classifies
	verifier *auth.Verifier
	keys     *auth.KeyVerifier
	ingest   Ingester
	screens  Screens
	// detectionRules is told of rule writes (Config.DetectionRules).
	detectionRules Screens
	ready          []Readiness
	log            *slog.Logger
	accessLevel    slog.Level // of the per-request log line
	now            func() time.Time
	mux            *http.ServeMux
	handler        http.Handler

	requestTimeout time.Duration
	searchTimeout  time.Duration
	searches       *orgSlots // searches in flight per org
	reclassify     interface{ Notify() }
	bodies         *bodyBudget
	eventPoll      time.Duration
	streams        *orgSlots // event streams open per org
	stopStreams    chan struct{}
	stopOnce       sync.Once
	webhooks       webhook.Policy

	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	rejected prometheus.Counter
}

// policies is where the API's correlations read each org's roll-up and
// risk settings: the workers' cache when this process runs them, else the
// store.
func policies(cfg Config) correlate.Policies {
	if p, ok := cfg.Screens.(correlate.Policies); ok {
		return p
	}
	return correlate.StoredPolicies(cfg.Store)
}

// New returns a Server with every route registered.
func New(cfg Config) *Server {
	s := &Server{
		store:          cfg.Store,
		engine:         correlate.NewEngine(cfg.Store, rules.NewClassifier(cfg.Store), cfg.Correlation).WithPolicies(policies(cfg)),
		verifier:       cfg.Verifier,
		ingest:         cfg.Ingester,
		screens:        cfg.Screens,
		detectionRules: cfg.DetectionRules,
		ready:          cfg.Ready,
		log:            cfg.Logger,
		accessLevel:    slog.LevelDebug,
		now:            cfg.Now,
		mux:            http.NewServeMux(),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = vigil.Now
	}
	if cfg.AccessLog {
		s.accessLevel = slog.LevelInfo
	}
	s.requestTimeout = cmp.Or(cfg.RequestTimeout, DefaultRequestTimeout)
	s.searchTimeout = cmp.Or(cfg.SearchTimeout, DefaultSearchTimeout)
	s.searches = newOrgSlots(cmp.Or(cfg.MaxOrgSearches, DefaultMaxOrgSearches))
	s.reclassify = cfg.Reclassify
	s.keys = auth.NewKeyVerifier(cfg.Store, cfg.KeyTTL, nil, s.log)
	s.eventPoll = cmp.Or(cfg.EventPoll, DefaultEventPoll)
	s.streams = newOrgSlots(cmp.Or(cfg.MaxOrgStreams, DefaultMaxOrgStreams))
	s.stopStreams = make(chan struct{})
	s.webhooks = cfg.Webhooks
	s.bodies = newBodyBudget(cmp.Or(cfg.BodyBudget, DefaultBodyBudget), cmp.Or(cfg.ClientBodyBudget, DefaultClientBodyBudget),
		cmp.Or(cfg.BodyMinRate, DefaultBodyMinRate), cmp.Or(cfg.BodyGrace, DefaultBodyGrace))
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vigil_http_requests_total", Help: "HTTP requests by route, method and status.",
	}, []string{"route", "method", "status"})
	s.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "vigil_http_request_duration_seconds", Help: "HTTP request latency by route and method.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"route", "method"})
	s.rejected = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "vigil_artifacts_rejected_total", Help: "Artifacts rejected by validation at the API.",
	})
	reg.MustRegister(s.requests, s.latency, s.rejected)
	var metrics http.Handler
	if !cfg.NoMetrics {
		metrics = MetricsHandler(reg, cfg.MetricsToken)
	}
	s.routes(metrics)
	s.handler = s.observe(s.mux)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// route is one endpoint: method, path under /v1, required permission.
type route struct {
	method, path, perm string
	h                  http.HandlerFunc
}

// ingestRoutes are the routes an API key may call: those that take
// artifacts.
var ingestRoutes = map[string]bool{"POST /artifacts": true}

// routes registers every route; metrics is nil when /metrics is served
// elsewhere.
func (s *Server) routes(metrics http.Handler) {
	rs := s.routeTable()
	allowed := map[string][]string{}
	for _, prefix := range []string{"/v1", "/api/v1"} {
		for _, rt := range rs {
			p := prefix + rt.path
			s.mux.Handle(rt.method+" "+p, s.bound(rt, s.authorize(rt.perm, ingestRoutes[rt.method+" "+rt.path], s.limitBody(s.fail, rt.h))))
			if prefix == "/v1" {
				allowed[rt.path] = append(allowed[rt.path], rt.method)
			}
		}
		s.mux.HandleFunc("GET "+prefix+"/openapi.json", s.openAPI)
		allowed["/openapi.json"] = []string{"GET"}
		// The caller itself: any valid token may read what it grants.
		s.mux.Handle("GET "+prefix+"/me", withDeadline(s.requestTimeout, s.me))
		allowed["/me"] = []string{"GET"}
	}
	// Any other method on a known path: 405 in the error envelope.
	// The preview's path is also a rule's ({id}): that route's 405 serves
	// it, as a second pattern for it would conflict with GET {id}.
	delete(allowed, "/classification-rules/preview")
	delete(allowed, "/detection-rules/test")
	for path, methods := range allowed {
		allow := strings.Join(methods, ", ")
		if strings.Contains(allow, "GET") {
			allow += ", HEAD"
		}
		h := s.methodNotAllowed(allow)
		s.mux.HandleFunc("/v1"+path, h)
		s.mux.HandleFunc("/api/v1"+path, h)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		s.mux.HandleFunc(p, s.methodNotAllowed("GET, HEAD"))
	}
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		ok(w, http.StatusOK, "ok", map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("GET /readyz", s.readyz)
	if metrics != nil { // else a 404, as any unknown path
		s.mux.HandleFunc("/metrics", s.methodNotAllowed("GET, HEAD"))
		s.mux.Handle("GET /metrics", metrics)
	}
	s.elasticRoutes()
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, vigil.Errorf(vigil.ENOTFOUND, "no route for %s %s", r.Method, r.URL.Path))
	})
}

// routeTable is every route under /v1 (and its /api/v1 alias) but the
// Elasticsearch-compatible endpoint's.
func (s *Server) routeTable() []route {
	return []route{
		{"GET", "/observations", vigil.PermObservationsRead, s.listObservations},
		{"POST", "/observations", vigil.PermObservationsWrite, s.createObservation},
		{"GET", "/observations/{id}", vigil.PermObservationsRead, s.getObservation},
		{"PUT", "/observations/{id}", vigil.PermObservationsWrite, s.updateObservation},
		{"DELETE", "/observations/{id}", vigil.PermObservationsWrite, s.deleteObservation},

		// Nodes: an addition to the contract, to find the ids that
		// observations name; read with the observations they belong to.
		{"GET", "/nodes", vigil.PermObservationsRead, s.listNodes},
		{"GET", "/nodes/{id}", vigil.PermObservationsRead, s.getNode},

		{"GET", "/incidents", vigil.PermIncidentsRead, s.listIncidents},
		{"GET", "/incidents/{id}", vigil.PermIncidentsRead, s.getIncident},
		{"PUT", "/incidents/{id}/status", vigil.PermIncidentsWrite, s.setIncidentStatus},
		// An incident's parts a page at a time: additions to the contract,
		// each read with the permission of what it lists.
		{"GET", "/incidents/{id}/observations", vigil.PermObservationsRead, s.incidentObservations},
		{"GET", "/incidents/{id}/nodes", vigil.PermIncidentsRead, s.incidentNodes},
		{"GET", "/incidents/{id}/artifacts", vigil.PermSignalsRead, s.incidentArtifacts},
		// Case work: additions to the contract (docs/api.md, Case work).
		{"GET", "/incidents/{id}/history", vigil.PermIncidentsRead, s.incidentHistory},
		{"GET", "/incidents/{id}/sources", vigil.PermIncidentsRead, s.rollupSources},
		{"PUT", "/incidents/{id}", vigil.PermIncidentsWrite, s.updateIncidentCase},
		{"GET", "/incidents/{id}/comments", vigil.PermIncidentsRead, s.listComments},
		{"POST", "/incidents/{id}/comments", vigil.PermIncidentsWrite, s.createComment},
		{"PUT", "/incidents/{id}/comments/{comment}", vigil.PermIncidentsWrite, s.updateComment},
		{"DELETE", "/incidents/{id}/comments/{comment}", vigil.PermIncidentsWrite, s.deleteComment},
		// The live stream of incident events (docs/events.md).
		{"GET", "/events", vigil.PermIncidentsRead, s.streamEvents},

		{"POST", "/artifacts", vigil.PermSignalsWrite, s.postArtifacts},
		{"GET", "/artifacts", vigil.PermSignalsRead, s.searchArtifacts},
		// An addition to the contract: one artifact whole, where lists
		// show previews of large ones.
		{"GET", "/artifacts/{id}", vigil.PermSignalsRead, s.getArtifact},

		{"GET", "/classification-rules", vigil.PermSignalsRead, s.listRules},
		{"POST", "/classification-rules", vigil.PermSignalsWrite, s.createRule},
		{"GET", "/classification-rules/{id}", vigil.PermSignalsRead, s.getRule},
		{"PUT", "/classification-rules/{id}", vigil.PermSignalsWrite, s.updateRule},
		{"DELETE", "/classification-rules/{id}", vigil.PermSignalsManage, s.deleteRule},
		// An addition to the contract: which open incidents a rule would
		// match, before it is saved; it lists incidents, hence their
		// permission.
		{"POST", "/classification-rules/preview", vigil.PermIncidentsRead, s.previewRule},

		// Suppressions: an addition to the contract, the org's
		// exceptions to detection; written with signals:manage, as the
		// settings that decide what detection counts.
		{"GET", "/suppressions", vigil.PermSignalsRead, s.listSuppressions},
		{"POST", "/suppressions", vigil.PermSignalsManage, s.createSuppression},
		{"GET", "/suppressions/{id}", vigil.PermSignalsRead, s.getSuppression},
		{"PUT", "/suppressions/{id}", vigil.PermSignalsManage, s.updateSuppression},
		{"DELETE", "/suppressions/{id}", vigil.PermSignalsManage, s.deleteSuppression},

		// Detection rules: an addition to the contract, the org's own
		// detections as Sigma rules; deleted with signals:manage as
		// classification rules are. A test reads the org's artifacts.
		{"GET", "/detection-rules", vigil.PermSignalsRead, s.listDetectionRules},
		{"POST", "/detection-rules", vigil.PermSignalsWrite, s.createDetectionRule},
		{"GET", "/detection-rules/{id}", vigil.PermSignalsRead, s.getDetectionRule},
		{"PUT", "/detection-rules/{id}", vigil.PermSignalsWrite, s.updateDetectionRule},
		{"DELETE", "/detection-rules/{id}", vigil.PermSignalsManage, s.deleteDetectionRule},
		{"POST", "/detection-rules/{id}/enable", vigil.PermSignalsWrite, s.enableDetectionRule},
		{"POST", "/detection-rules/{id}/disable", vigil.PermSignalsWrite, s.disableDetectionRule},
		{"POST", "/detection-rules/test", vigil.PermSignalsRead, s.testDetectionRule},
		// The starter rules every org has (docs/sigma.md, Starter set):
		// switched on and off per org, as an org's own rules are.
		{"GET", "/starter-rules", vigil.PermSignalsRead, s.listStarterRules},
		{"GET", "/starter-rules/{id}", vigil.PermSignalsRead, s.getStarterRule},
		{"POST", "/starter-rules/{id}/enable", vigil.PermSignalsWrite, s.enableStarterRule},
		{"POST", "/starter-rules/{id}/disable", vigil.PermSignalsWrite, s.disableStarterRule},

		{"GET", "/roles", vigil.PermAdmin, s.listRoles},
		{"POST", "/roles", vigil.PermAdmin, s.createRole},
		{"GET", "/roles/{id}", vigil.PermAdmin, s.getRole},
		{"PUT", "/roles/{id}", vigil.PermAdmin, s.updateRole},
		{"DELETE", "/roles/{id}", vigil.PermAdmin, s.deleteRole},

		// API keys: an addition to the contract, the credentials of
		// shippers and listeners, which may only ingest.
		{"GET", "/api-keys", vigil.PermAdmin, s.listAPIKeys},
		{"POST", "/api-keys", vigil.PermAdmin, s.createAPIKey},
		{"GET", "/api-keys/{id}", vigil.PermAdmin, s.getAPIKey},
		{"DELETE", "/api-keys/{id}", vigil.PermAdmin, s.revokeAPIKey},

		// Webhooks: an addition to the contract, the org's
		// subscriptions to its incident events (docs/events.md).
		{"GET", "/webhooks", vigil.PermAdmin, s.listWebhooks},
		{"POST", "/webhooks", vigil.PermAdmin, s.createWebhook},
		{"GET", "/webhooks/{id}", vigil.PermAdmin, s.getWebhook},
		{"PUT", "/webhooks/{id}", vigil.PermAdmin, s.updateWebhook},
		{"DELETE", "/webhooks/{id}", vigil.PermAdmin, s.deleteWebhook},
		{"GET", "/webhooks/{id}/deliveries", vigil.PermAdmin, s.listWebhookDeliveries},

		{"GET", "/enrichment-settings", vigil.PermSignalsRead, s.getSettings},
		{"PUT", "/enrichment-settings", vigil.PermSignalsManage, s.putSettings},

		// The audit log: an addition to the contract (docs/security.md).
		{"GET", "/audit", vigil.PermAdmin, s.listAudit},
	}
}

// bound gives a route's requests their deadline: ingest none (the queue
// bounds its waits, and a batch cut off mid-publish would leave the
// client unsure whether it was kept), searches SearchTimeout (set by the
// handler, which says what to do about it), others RequestTimeout.
func (s *Server) bound(rt route, h http.Handler) http.Handler {
	switch {
	case rt.method == "POST" && rt.path == "/artifacts":
		return h
	case rt.method == "GET" && rt.path == "/artifacts":
		return withDeadline(s.searchTimeout, h.ServeHTTP)
	case rt.path == "/events":
		return h // a stream lasts as long as its client reads it
	}
	return withDeadline(s.requestTimeout, h.ServeHTTP)
}

// methodNotAllowed answers 405 in the error envelope, naming the methods
// the path allows.
func (s *Server) methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		s.fail(w, r, &vigil.Error{Code: "method_not_allowed", Message: "method " + r.Method + " not allowed; allowed: " + allow})
	}
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	checks := map[string]string{"store": "ok"}
	var failed []vigil.FieldIssue
	if err := s.store.Ping(ctx); err != nil {
		checks["store"] = unready(err)
		failed = append(failed, vigil.FieldIssue{Field: "store", Issue: checks["store"]})
	}
	for i, d := range s.ready {
		name := fmt.Sprintf("dependency_%d", i)
		if n, ok := d.(interface{ Name() string }); ok {
			name = n.Name()
		}
		checks[name] = "ok"
		if st, ok := d.(interface{ Status() string }); ok {
			// Ready, with something to report (the syslog listeners' drops).
			checks[name] = st.Status()
		}
		if err := d.Ready(ctx); err != nil {
			checks[name] = unready(err)
			failed = append(failed, vigil.FieldIssue{Field: name, Issue: checks[name]})
		}
	}
	if len(failed) > 0 {
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Message: "not ready: " + failed[0].Field + ": " + failed[0].Issue,
			Error: errorInfo{Code: vigil.EUNAVAILABLE, Details: failed}})
		return
	}
	ok(w, http.StatusOK, "ready", checks)
}

// unready says why a dependency is not ready: the message of a Vigil
// error (a full disk, a failing store), else only "unreachable", since
// the endpoint needs no token and a driver's error may name hosts and
// users.
func unready(err error) string {
	if vigil.ErrorCode(err) != vigil.EINTERNAL {
		return vigil.ErrorMessage(err)
	}
	return "unreachable"
}

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyPrincipal
	keyAccess
)

// access is what the access log line learns during a request: the
// authenticated caller, set by authorize.
type access struct {
	org, sub string
}

// Principal is the authenticated caller of a request.
type Principal struct {
	Subject string
	OrgID   string
	// APIKey is set when the caller is an API key (Subject "api-key:<id>").
	APIKey bool
	perms  []string // granted by the token (or key) and its roles
}

// allowed reports whether the principal holds perm.
func (p Principal) allowed(perm string) bool { return auth.Allowed(p.perms, perm) }

// actorName is how a token's sub is recorded in histories: it comes from
// a verified token but is still outside text, so it is kept printable and
// bounded, and never empty (nor "system", which Vigil's own changes are).
func actorName(sub string) string {
	actor := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, sub)
	if len(actor) > 256 {
		actor = strings.ToValidUTF8(actor[:256], "")
	}
	if actor == "" || actor == vigil.ActorSystem {
		actor = "unknown"
	}
	return actor
}

func requestID(ctx context.Context) string { s, _ := ctx.Value(keyRequestID).(string); return s }

func principal(ctx context.Context) Principal { p, _ := ctx.Value(keyPrincipal).(Principal); return p }

// statusWriter records the status written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe assigns a request id, recovers panics, and records metrics and
// a log line per request.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-ID")
		if id == "" || len(id) > 64 {
			var b [8]byte
			rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-ID", id)
		acc := &access{}
		ctx := context.WithValue(context.WithValue(r.Context(), keyRequestID, id), keyAccess, acc)
		r = r.WithContext(ctx)
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.fail(sw, r, fmt.Errorf("panic: %v", v))
			}
			route := r.Pattern
			if route == "" {
				route = "unmatched"
			}
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			d := time.Since(start)
			s.requests.WithLabelValues(route, r.Method, fmt.Sprint(status)).Inc()
			s.latency.WithLabelValues(route, r.Method).Observe(d.Seconds())
			// The path, not the query string: a search's terms stay out of logs.
			s.log.LogAttrs(ctx, s.accessLevel, "request", slog.String("request_id", id), slog.String("method", r.Method),
				slog.String("path", r.URL.Path), slog.String("route", route), slog.Int("status", status),
				slog.Float64("duration_ms", float64(d.Microseconds())/1000), slog.String("org", acc.org), slog.String("sub", acc.sub),
				slog.String("remote", r.RemoteAddr))
		}()
		next.ServeHTTP(sw, r)
	})
}

// authenticate verifies the request's bearer token; on failure it has
// answered 401 and returns nil.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) *auth.Claims {
	h := r.Header.Get("Authorization")
	scheme, token, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="vigil"`)
		s.fail(w, r, vigil.Errorf(vigil.EUNAUTHORIZED, "missing bearer token"))
		return nil
	}
	claims, err := s.verifier.Verify(r.Context(), strings.TrimSpace(token))
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="vigil", error="invalid_token"`)
		s.fail(w, r, err)
		return nil
	}
	return claims
}

// asCaller returns r with claims as its authenticated caller.
func asCaller(r *http.Request, claims *auth.Claims) *http.Request {
	if acc, _ := r.Context().Value(keyAccess).(*access); acc != nil {
		acc.org, acc.sub = claims.OrgID, claims.Subject
	}
	ctx := context.WithValue(r.Context(), keyPrincipal, Principal{Subject: claims.Subject, OrgID: claims.OrgID})
	return r.WithContext(vigil.WithActor(ctx, actorName(claims.Subject)))
}

// authorize authenticates the caller and requires perm: a JWT bearer
// token, whose effective permissions are its claims ∪ the caller's org
// roles (read per request so a changed role applies at once), or, on
// ingest routes only, an API key, which grants vigil.APIKeyPermission.
func (s *Server) authorize(perm string, ingest bool, next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, perms, err := s.caller(r, perm)
		if err != nil {
			if vigil.ErrorCode(err) == vigil.EUNAUTHORIZED {
				challenge(w, ingest, vigil.ErrorMessage(err) != "missing bearer token")
			}
			s.fail(w, r, err)
			return
		}
		if p.APIKey && !ingest {
			s.fail(w, r, vigil.Errorf(vigil.EFORBIDDEN, "an API key may only send artifacts (POST /v1/artifacts, the Elasticsearch bulk endpoint); use a token for %s", r.URL.Path))
			return
		}
		if !auth.Allowed(perms, perm) {
			s.fail(w, r, vigil.Errorf(vigil.EFORBIDDEN, "permission %s required", perm))
			return
		}
		if acc, _ := r.Context().Value(keyAccess).(*access); acc != nil {
			acc.org, acc.sub = p.OrgID, p.Subject
		}
		p.perms = perms
		ctx := context.WithValue(r.Context(), keyPrincipal, p)
		// What the request changes is recorded as done by the caller's sub,
		// in the incidents' histories and in the audit log.
		ctx = vigil.WithActor(ctx, actorName(p.Subject))
		next(w, s.withAudit(r.WithContext(ctx), p))
	})
}

// challenge sets the WWW-Authenticate headers of a 401: Bearer, and on
// ingest routes also Basic and ApiKey, the schemes shippers use (a client
// that sends Basic credentials only when challenged finds it offered).
func challenge(w http.ResponseWriter, ingest, invalid bool) {
	bearer := `Bearer realm="vigil"`
	if invalid {
		bearer += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", bearer)
	if ingest {
		w.Header().Add("WWW-Authenticate", `Basic realm="vigil", charset="UTF-8"`)
		w.Header().Add("WWW-Authenticate", `ApiKey`)
	}
}

// caller returns the caller of r and its effective permissions (its
// roles' read only when its claims do not grant perm already).
func (s *Server) caller(r *http.Request, perm string) (Principal, []string, error) {
	h := r.Header.Get("Authorization")
	if secret, isKey := auth.APIKeyCredential(h); isKey {
		if secret == "" {
			return Principal{}, nil, vigil.Errorf(vigil.EUNAUTHORIZED, "malformed API key credentials")
		}
		k, err := s.keys.Verify(r.Context(), secret)
		if err != nil {
			return Principal{}, nil, err
		}
		return Principal{Subject: "api-key:" + k.ID, OrgID: k.OrgID, APIKey: true}, k.Permissions, nil
	}
	scheme, token, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return Principal{}, nil, vigil.Errorf(vigil.EUNAUTHORIZED, "missing bearer token")
	}
	claims, err := s.verifier.Verify(r.Context(), strings.TrimSpace(token))
	if err != nil {
		return Principal{}, nil, err
	}
	perms := claims.Permissions
	if !auth.Allowed(perms, perm) && len(claims.Roles) > 0 {
		rolePerms, err := s.store.RolePermissions(r.Context(), claims.OrgID, claims.Roles)
		if err != nil {
			return Principal{}, nil, err
		}
		perms = append(append([]string{}, perms...), rolePerms...)
	}
	return Principal{Subject: claims.Subject, OrgID: claims.OrgID}, perms, nil
}
