package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/api"
	"github.com/vigil-soc/vigil/internal/auth"
	"github.com/vigil-soc/vigil/internal/console"
	"github.com/vigil-soc/vigil/internal/correlate"
	"github.com/vigil-soc/vigil/internal/datadir"
	"github.com/vigil-soc/vigil/internal/detect"
	"github.com/vigil-soc/vigil/internal/detectionrules"
	"github.com/vigil-soc/vigil/internal/enrich"
	"github.com/vigil-soc/vigil/internal/pipeline"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/queue"
	"github.com/vigil-soc/vigil/internal/rules"
	"github.com/vigil-soc/vigil/internal/sigma"
	"github.com/vigil-soc/vigil/internal/sqlite"
	"github.com/vigil-soc/vigil/internal/suppress"
	"github.com/vigil-soc/vigil/internal/syslog"
	"github.com/vigil-soc/vigil/internal/vlogs"
	"github.com/vigil-soc/vigil/internal/webhook"
)

// runServe runs the pipeline workers, and the API when withAPI, until ctx
// ends. Shutdown order: stop HTTP, drain the workers' in-flight messages,
// close the queue, close the store.
func runServe(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, withAPI bool) error {
	name := "serve"
	if !withAPI {
		name = "worker"
	}
	does := "Runs the API and the pipeline workers."
	if !withAPI {
		does = "Runs pipeline workers only (scale-out), with /metrics and /healthz on --addr."
	}
	fs := newFlagSet(name, does, stderr)
	var c config
	if withAPI {
		c.flags(fs)
		c.syslogFlag(fs)
		c.oidcFlags(fs)
	} else {
		// A worker serves only /metrics and /healthz, on a port of its own so
		// that it can run beside vigil serve.
		c.flagsAddr(fs, "127.0.0.1:9090", "listen address of the worker's /metrics and /healthz")
	}
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	c.MetricsAddrGiven = given(fs, "metrics-addr", getenv)
	if err := c.validate(); err != nil {
		return err
	}
	if !withAPI && c.Workers < 1 {
		return errors.New("--workers must be at least 1 for vigil worker")
	}
	log := newLogger(stderr, c.LogLevel)
	log.Info("starting", slog.String("command", name), slog.String("config", c.String()))
	if c.MemoryLimit > 0 && getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(c.MemoryLimit)
	}

	// The embedded store and queue live in the data dir: one process at a
	// time, or the second silently takes the queue's files over.
	if c.DatabaseURL == "" || c.NATSURL == "" {
		lock, err := datadir.Acquire(c.DataDir)
		if err != nil {
			return err
		}
		defer lock.Release() // after everything else closed (deferred first)
		warnOpenDataDir(c.DataDir, log)
		if err := datadir.KeepBallast(c.DataDir, log); err != nil {
			return err
		}
	}
	store, err := openStore(ctx, &c, log)
	if err != nil {
		return dataDirError(&c, err)
	}
	defer store.Close()

	if c.NATSURL == "" {
		if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
			return fmt.Errorf("create data dir: %w", err)
		}
	}
	// The queue name's streams carry the artifacts of one database: the
	// queue refuses a process whose database is not the one recorded.
	dbID, err := store.DeploymentID(ctx)
	if err != nil {
		return fmt.Errorf("database identity: %w", err)
	}
	dbLabel := databaseLabel(&c)
	log.Info("database", slog.String("deployment_id", dbID), slog.String("database", dbLabel))
	q, err := queue.Open(ctx, queue.Config{
		URL: c.NATSURL, Dir: filepath.Join(c.DataDir, "jetstream"), MaxBytes: c.MaxQueueBytes,
		MaxPending: c.MaxPending, MaxDeliver: c.MaxDeliver, AckWait: c.AckWait, Replicas: c.QueueReplicas, FsyncAlways: c.Fsync == "always",
		Name: c.QueueName, Owner: dbID, OwnerLabel: dbLabel,
	}, log)
	if errors.Is(err, queue.ErrOwned) {
		return fmt.Errorf("%w. Each deployment on a shared NATS needs a queue name of its own: set --queue-name (VIGIL_QUEUE_NAME) "+
			"to a name no other deployment uses there (see docs/operations.md, \"Sharing one NATS\")", err)
	}
	if err != nil {
		return dataDirError(&c, err)
	}
	defer q.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := pipeline.NewMetrics(reg)
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "vigil_queue_depth", Help: "Queue messages (batches) not yet processed.",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n, _ := q.Backlog(ctx)
		return float64(n)
	}))

	if ts, ok := store.(interface{ Tally() *correlate.Tally }); ok && ts.Tally() != nil {
		registerTally(reg, ts.Tally())
	}

	// Workers run on their own context so that HTTP stops first.
	wctx, stopWorkers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWorkers()
	policy := vigil.CorrelationPolicy{Window: c.CorrWindow, HubLimit: c.HubLimit}
	// One cache of each org's suppressions and detection settings for the
	// workers, which the API of this process invalidates on writes; other
	// processes see a write within suppress.DefaultTTL.
	screens := suppress.NewCache(store, suppress.DefaultTTL, log)
	proc := pipeline.NewProcessor(store, log, metrics).WithSuppressions(screens)
	// Each org's detection rules (Sigma), cached alike.
	detectionRules := detectionrules.NewCache(store, detectionrules.DefaultTTL, log).WithLocalSources(c.Detect.LocalSources)
	if !c.DetectionOff {
		proc.WithDetection(detect.NewEngine(detect.Default(c.Detect)...), policy).WithDetectionRules(detectionRules)
	}
	if !c.EnrichmentOff && c.Workers > 0 {
		enricher, err := enrich.New(enrich.Config{
			GeoIPCityDB: c.GeoIPCityDB, GeoIPASNDB: c.GeoIPASNDB, DataDir: c.DataDir,
			DNSServers: list(c.DNSServers), RDAPBaseURL: c.RDAPURL,
			ThreatIntelDir: c.IntelDir, ThreatIntelURLs: list(c.IntelURLs), ThreatIntelRefresh: c.IntelRefresh,
		}, store, reg, log)
		if err != nil {
			return fmt.Errorf("enrichment: %w", err)
		}
		// Closed after the workers drained (deferred calls run last-in first-out).
		defer enricher.Close()
		enricher.Start(context.WithoutCancel(ctx))
		proc.WithEnrichment(enricher)
	}
	var wg sync.WaitGroup
	for i := 0; i < c.Workers; i++ {
		w := pipeline.NewWorker(q, proc, log, metrics)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(wctx); err != nil {
				log.Error("worker stopped", slog.String("error", err.Error()))
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		pruneSignals(wctx, store, log)
	}()
	// Re-classification after rule writes, in every process: a pass
	// claimed by one is not taken by another.
	reclassify := rules.NewReclassifier(store, log)
	wg.Add(1)
	go func() {
		defer wg.Done()
		reclassify.Run(wctx)
	}()
	// Webhook deliveries, in every process: a delivery is handed to one
	// process at a time, and one queued twice is dropped by its id.
	hooks := webhook.New(webhook.Config{Store: store, Queue: q, Policy: c.webhookPolicy(), RetryBase: c.WebhookRetryBase, Log: log})
	wg.Add(1)
	go func() {
		defer wg.Done()
		hooks.Run(wctx)
	}()
	if vs, ok := store.(*vlogs.Store); ok && (c.RetentionDays > 0 || c.OrgRetentionDays != "") {
		orgs, _ := c.orgRetention() // validated
		r := vlogs.Retention{Default: time.Duration(c.RetentionDays) * 24 * time.Hour, Orgs: orgs}
		wg.Add(1)
		go func() {
			defer wg.Done()
			hourly(wctx, func() { retainOrgs(wctx, vs, r, log) })
		}()
	} else if c.RetentionDays > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hourly(wctx, func() { retain(wctx, store, time.Duration(c.RetentionDays)*24*time.Hour, log) })
		}()
	}
	if c.AuditRetentionDays > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hourly(wctx, func() { pruneAudit(wctx, store, time.Duration(c.AuditRetentionDays)*24*time.Hour, log) })
		}()
	}
	drain := func() {
		stopWorkers()
		wg.Wait()
		log.Info("workers drained")
	}

	if !withAPI {
		srv, err := workerServer(c.Addr, c.MetricsToken, reg, log, store, q, proc)
		if err != nil {
			drain()
			return err
		}
		<-ctx.Done()
		log.Info("shutting down")
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		srv.Shutdown(sctx)
		cancel()
		drain()
		return nil
	}

	secret, err := c.jwtSecret(true)
	if err != nil {
		drain()
		return err
	}
	verifier, err := auth.NewVerifier(ctx, auth.Config{HS256Secret: secret, JWKSURL: c.JWTJWKSURL,
		Issuer: c.JWTIssuer, Audience: c.JWTAudience, Logger: log})
	if err != nil {
		drain()
		return fmt.Errorf("auth: %w", err)
	}
	ready := []api.Readiness{q, proc}
	if vs, ok := store.(*vlogs.Store); ok {
		ready = append(ready, vlogs.APICheck{C: vs.Cluster()})
	}
	var listeners *syslog.Server
	if len(c.SyslogListen) > 0 {
		// Syslog has no acknowledgement to hold back: batches are
		// published as soon as they are durable.
		listeners, err = syslog.New(c.SyslogListen, pipeline.NewQueued(q, 0, metrics), reg, log)
		if err == nil {
			if err = listeners.Start(); err != nil {
				listeners.Shutdown(context.Background())
			}
		}
		if err != nil {
			drain()
			return err
		}
		ready = append(ready, listeners)
	}
	handler := api.New(api.Config{
		Store: store, Verifier: verifier, Ingester: pipeline.NewQueued(q, c.IngestWait, metrics),
		Ready: ready, Logger: log, Registry: reg,
		Correlation: policy, AccessLog: c.AccessLog, Screens: screens, DetectionRules: detectionRules,
		RequestTimeout: c.RequestTimeout, SearchTimeout: c.SearchTimeout, MaxOrgSearches: c.MaxOrgSearches,
		Reclassify: reclassify,
		BodyBudget: c.BodyBudget, ClientBodyBudget: c.ClientBodyBudget, BodyMinRate: c.BodyMinRate,
		NoMetrics: c.MetricsAddr != "api", MetricsToken: c.MetricsToken,
		Webhooks: c.webhookPolicy(),
	})
	// The console's pages at "/", calling the API in-process.
	cons := console.New(console.Config{API: handler, Logger: log, OIDC: c.oidc()})
	srv := &http.Server{
		Handler:           console.Mount(handler, cons),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	// Event streams never finish on their own: shutting down ends them,
	// and their clients resume elsewhere with Last-Event-ID.
	srv.RegisterOnShutdown(handler.StopStreams)
	// The syslog listeners stop reading with HTTP, and publish what they
	// read before the workers drain.
	stopSyslog := func(ctx context.Context) {
		if listeners != nil {
			listeners.Shutdown(ctx)
		}
	}
	msrv, err := metricsServer(c.MetricsAddr, c.MetricsAddrGiven, reg, c.MetricsToken, log)
	if err != nil {
		stopSyslog(context.Background())
		drain()
		return err
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		if msrv != nil {
			msrv.Close()
		}
		stopSyslog(context.Background())
		drain()
		return fmt.Errorf("listen: %w", err)
	}
	log.Info("listening", slog.String("addr", ln.Addr().String()))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var serveErr error
	select {
	case err := <-errc:
		serveErr = fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stopped sync.WaitGroup
	stopped.Add(1)
	go func() {
		defer stopped.Done()
		stopSyslog(sctx)
	}()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("http shutdown", slog.String("error", err.Error()))
	}
	if msrv != nil {
		msrv.Shutdown(sctx)
	}
	stopped.Wait()
	drain()
	return serveErr
}

// signalRetention is how long detection signals are kept: far longer than
// any built-in detector's window. A Sigma correlation's may span up to
// sigma.MaxTimespan: its signals (detectors named with
// detectionrules.DetectorPrefix) are kept that long and a day more.
const signalRetention = 24 * time.Hour

// retention is what the prune at now keeps.
func retention(now time.Time) vigil.SignalRetention {
	return vigil.SignalRetention{Before: now.Add(-signalRetention),
		Longer: map[string]time.Time{detectionrules.DetectorPrefix: now.Add(-sigma.MaxTimespan - signalRetention)}}
}

// pruneSignals forgets old detection signals every ten minutes until ctx
// ends. Several processes may prune at once; the deletes are idempotent.
func pruneSignals(ctx context.Context, store vigil.SignalStore, log *slog.Logger) {
	t := time.NewTicker(10 * time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := store.PruneSignals(ctx, retention(time.Now())); err != nil {
				log.Warn("prune detection signals", slog.String("error", err.Error()))
			} else if n > 0 {
				log.Info("pruned detection signals", slog.Int("signals", n))
			}
		}
	}
}

// hourly runs fn at once and then every hour until ctx ends.
func hourly(ctx context.Context, fn func()) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		fn()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// retain drops artifacts older than keep.
func retain(ctx context.Context, store vigil.ArtifactStore, keep time.Duration, log *slog.Logger) {
	if n, err := store.DropArtifactsBefore(ctx, time.Now().Add(-keep)); err != nil {
		log.Warn("retention", slog.String("error", err.Error()))
	} else if n > 0 {
		log.Info("retention dropped old artifacts", slog.Int("artifacts", n))
	}
}

// retainOrgs applies each org's retention in the VictoriaLogs cluster.
func retainOrgs(ctx context.Context, vs *vlogs.Store, r vlogs.Retention, log *slog.Logger) {
	if n, err := vs.ApplyRetention(ctx, r, time.Now()); err != nil {
		log.Warn("retention", slog.String("error", err.Error()))
	} else if n > 0 {
		log.Info("retention dropped old artifacts", slog.Int("artifacts", n))
	}
}

// pruneAudit deletes the audit entries older than keep. Several
// processes may prune at once; the deletes are idempotent.
func pruneAudit(ctx context.Context, store vigil.AuditStore, keep time.Duration, log *slog.Logger) {
	if n, err := store.PruneAudit(ctx, time.Now().Add(-keep)); err != nil {
		log.Warn("audit retention", slog.String("error", err.Error()))
	} else if n > 0 {
		log.Info("audit retention deleted old entries", slog.Int("entries", n))
	}
}

// metricsServer serves GET /metrics on addr, unless addr is "" (off) or
// "api" (the API serves it); nil then. An address that cannot be listened
// on stops the start when the operator gave it; the default one (a fixed
// port, which a second vigil serve on the host finds taken) is skipped
// with a warning, so that instances started with default flags all run.
func metricsServer(addr string, given bool, reg *prometheus.Registry, token string, log *slog.Logger) (*http.Server, error) {
	if addr == "" || addr == "api" {
		return nil, nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", api.MetricsHandler(reg, token))
	ln, err := net.Listen("tcp", addr)
	if err != nil && !given {
		log.Warn("metrics not served: the default --metrics-addr cannot be listened on (another vigil serve on this host?); "+
			"give each instance its own --metrics-addr (VIGIL_METRICS_ADDR), or api, or \"\" to turn them off",
			slog.String("addr", addr), slog.String("error", err.Error()))
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listen (--metrics-addr): %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 16 << 10, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go srv.Serve(ln)
	log.Info("metrics listening", slog.String("addr", ln.Addr().String()), slog.Bool("token", token != ""))
	return srv, nil
}

// workerServer serves /metrics, /healthz and /readyz (store and queue
// reachable, the workers' writes not failing, and with --artifacts-url
// every VictoriaLogs node answering) for a worker-only process.
func workerServer(addr, metricsToken string, reg *prometheus.Registry, log *slog.Logger, store vigil.Database, q *queue.Queue, proc *pipeline.Processor) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", api.MetricsHandler(reg, metricsToken))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"success":true,"message":"ok","data":{"status":"ok"}}`)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "application/json")
		for _, c := range []struct {
			name string
			err  error
		}{{"store", store.Ping(ctx)}, {"queue", q.Ready(ctx)}, {"store_writes", proc.Ready(ctx)}, {"artifacts", artifactsReady(ctx, store)}} {
			if c.err == nil {
				continue
			}
			// As the API's /readyz: a Vigil error's message, never a driver's.
			issue := "unreachable"
			if vigil.ErrorCode(c.err) != vigil.EINTERNAL {
				issue = vigil.ErrorMessage(c.err)
			}
			body, _ := json.Marshal(map[string]any{"success": false, "message": "not ready: " + c.name + ": " + issue,
				"error": map[string]any{"code": vigil.EUNAVAILABLE, "details": []vigil.FieldIssue{{Field: c.name, Issue: issue}}}})
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write(body)
			return
		}
		if _, ok := store.(*vlogs.Store); ok {
			io.WriteString(w, `{"success":true,"message":"ready","data":{"artifacts":"ok","queue":"ok","store":"ok","store_writes":"ok"}}`)
			return
		}
		io.WriteString(w, `{"success":true,"message":"ready","data":{"queue":"ok","store":"ok","store_writes":"ok"}}`)
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	log.Info("listening", slog.String("addr", ln.Addr().String()), slog.String("serves", "metrics, healthz, readyz"))
	return srv, nil
}

// artifactsReady checks the VictoriaLogs cluster of a store that keeps
// artifacts there (nil for any other store).
func artifactsReady(ctx context.Context, store vigil.Database) error {
	if vs, ok := store.(*vlogs.Store); ok {
		return vs.Cluster().Ready(ctx)
	}
	return nil
}

// warnOpenDataDir says when the data dir lets others in. Vigil creates it
// 0700 and its files 0600, and never changes the mode of one that exists:
// an operator may open it to a group (a backup agent) on purpose.
func warnOpenDataDir(dir string, log *slog.Logger) {
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return
	}
	log.Warn("the data dir is open to other users: it holds the database, the queue and the JWT secret; "+
		"Vigil creates its files 0600, but chmod 700 the directory unless you opened it on purpose",
		slog.String("data_dir", dir), slog.String("mode", fmt.Sprintf("%#o", fi.Mode().Perm())))
}

// dataDirError says so when err, a failure to open the store or the
// queue, comes with the data dir's disk full.
func dataDirError(c *config, err error) error {
	if c.DatabaseURL != "" && c.NATSURL != "" {
		return err
	}
	return datadir.DiskFullError(c.DataDir, err)
}

// store is what a process opens and hands to its parts: the store
// contract and the correlation transactions.
type store interface {
	vigil.Store
	correlate.Store
}

// openStore opens the configured store: PostgreSQL when a database URL is
// set, else SQLite in the data dir.
func openStore(ctx context.Context, c *config, log *slog.Logger) (store, error) {
	if c.DatabaseURL != "" {
		pg, err := postgres.Open(ctx, c.DatabaseURL, postgres.Options{MaxSearches: c.MaxSearches})
		if err != nil || c.ArtifactsURL == "" {
			return pg, err
		}
		cluster, err := vlogs.ParseURLs(c.ArtifactsURL, c.ArtifactsStorage)
		if err != nil {
			pg.Close()
			return nil, err
		}
		log.Info("artifacts in VictoriaLogs", slog.String("cluster", cluster.String()))
		return vlogs.New(pg, cluster), nil
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	return sqlite.Open(ctx, filepath.Join(c.DataDir, "vigil.db"), sqlite.Options{FsyncAlways: c.Fsync == "always", Log: log, MaxSearches: c.MaxSearches,
		DetectionMemory: c.DetectMemory})
}

// registerTally exports what the embedded store's detection Tally did
// with keys (correlate.TallyStats) and what it holds: on an
// internet-facing host, whether keys of one signal go to its spill log or
// beyond it to the database (spilled), which costs the writer a row each.
func registerTally(reg prometheus.Registerer, t *correlate.Tally) {
	fates := []struct {
		fate string
		n    func(correlate.TallyStats) int64
	}{
		{"promoted", func(s correlate.TallyStats) int64 { return s.Promoted }},
		{"spilled", func(s correlate.TallyStats) int64 { return s.Spilled }},
		{"expired", func(s correlate.TallyStats) int64 { return s.Expired }},
		{"late", func(s correlate.TallyStats) int64 { return s.Late }},
		{"logged", func(s correlate.TallyStats) int64 { return s.Logged }},
		{"unlogged", func(s correlate.TallyStats) int64 { return s.Unlogged }},
	}
	for _, f := range fates {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "vigil_detect_tally_keys_total", Help: "Detection keys the in-memory Tally promoted to the store, spilled to the store, " +
				"expired, saw late, logged to its spill log or read back from it, by fate (embedded SQLite).",
			ConstLabels: prometheus.Labels{"fate": f.fate},
		}, func() float64 { s, _, _ := t.Stats(); return float64(f.n(s)) }))
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "vigil_detect_tally_held_signals", Help: "Detection signals the in-memory Tally holds (embedded SQLite; bounded by --detect-memory).",
	}, func() float64 { _, held, _ := t.Stats(); return float64(held) }))
}
