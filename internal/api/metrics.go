package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vigil-soc/vigil"
)

// MinMetricsTokenLen is the shortest bearer token /metrics may require.
const MinMetricsTokenLen = 16

// MetricsHandler serves reg's metrics in the Prometheus formats. The
// metrics count the work of every org (artifacts by source, requests by
// route): they are the operator's, not any tenant's, so no JWT grants
// them. When token is not empty, a request must carry it as
// "Authorization: Bearer <token>" (else 401 in the error envelope), as
// Prometheus sends it (authorization.credentials of a scrape config).
func MetricsHandler(reg *prometheus.Registry, token string) http.Handler {
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
	if token == "" {
		return h
	}
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		// Compared as digests: in constant time, whatever the lengths.
		sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="vigil-metrics"`)
			writeJSON(w, http.StatusUnauthorized, errorBody{Message: "/metrics needs the metrics bearer token (--metrics-token)",
				Error: errorInfo{Code: vigil.EUNAUTHORIZED, Details: []vigil.FieldIssue{}}})
			return
		}
		h.ServeHTTP(w, r)
	})
}
