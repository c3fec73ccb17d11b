package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vigil-soc/vigil/internal/client"
)

// TestMetrics scrapes what a Prometheus registry serves, as the server's
// /metrics does, and reads counters, gauges, labels and the sums and
// counts of histograms and summaries from it.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	depth := prometheus.NewGauge(prometheus.GaugeOpts{Name: "vigil_queue_depth", Help: "h"})
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vigil_http_requests_total", Help: "h"}, []string{"route", "status"})
	stage := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "vigil_pipeline_stage_seconds", Help: "h"}, []string{"stage"})
	gc := prometheus.NewSummary(prometheus.SummaryOpts{Name: "pause_seconds", Help: "h"})
	reg.MustRegister(depth, reqs, stage, gc)
	depth.Set(3)
	reqs.WithLabelValues("/v1/artifacts", "202").Add(10)
	reqs.WithLabelValues("/v1/artifacts", "503").Add(2)
	reqs.WithLabelValues("/v1/incidents", "500").Add(1)
	stage.WithLabelValues("store").Observe(0.5)
	stage.WithLabelValues("store").Observe(0.25)
	stage.WithLabelValues("parse").Observe(0.125)
	gc.Observe(2)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	m, err := client.New(srv.URL, "", nil).Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	is5xx := func(l client.Labels) bool { return strings.HasPrefix(l["status"], "5") }
	isStore := func(l client.Labels) bool { return l["stage"] == "store" }
	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"gauge", m.Sum("vigil_queue_depth"), 3},
		{"counter, every series", m.Sum("vigil_http_requests_total"), 13},
		{"counter, 5xx", m.SumWhere("vigil_http_requests_total", is5xx), 3},
		{"histogram sum", m.Sum("vigil_pipeline_stage_seconds_sum"), 0.875},
		{"histogram sum of a label", m.SumWhere("vigil_pipeline_stage_seconds_sum", isStore), 0.75},
		{"histogram count of a label", m.SumWhere("vigil_pipeline_stage_seconds_count", isStore), 2},
		{"histogram by its family name", m.Sum("vigil_pipeline_stage_seconds"), 0},
		{"summary count", m.Sum("pause_seconds_count"), 1},
		{"summary sum", m.Sum("pause_seconds_sum"), 2},
		{"absent", m.Sum("vigil_absent_total"), 0},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if !m.Has("vigil_queue_depth") || !m.Has("vigil_pipeline_stage_seconds_count") || m.Has("vigil_absent_total") || m.Has("vigil_queue_depth_sum") {
		t.Error("Has is wrong")
	}
	if got, want := m.LabelValues("vigil_pipeline_stage_seconds_sum", "stage"), []string{"parse", "store"}; !reflect.DeepEqual(got, want) {
		t.Errorf("stages %v, want %v", got, want)
	}
	if got := m.LabelValues("vigil_http_requests_total", "nope"); got != nil {
		t.Errorf("values of a missing label: %v", got)
	}
}

func TestParseMetricsError(t *testing.T) {
	if _, err := client.ParseMetrics(strings.NewReader("vigil_queue_depth not-a-number\n")); err == nil {
		t.Error("a malformed line parsed")
	}
	m, err := client.ParseMetrics(strings.NewReader("# HELP x h\n# TYPE x untyped\nx{a=\"1\"} 2\nx{a=\"2\"} 3\n"))
	if err != nil || m.Sum("x") != 5 {
		t.Errorf("untyped: %v, %v", m.Sum("x"), err)
	}
}

// TestMetricsElsewhere: WithMetrics scrapes another address with the
// metrics token, never the API token.
func TestMetricsElsewhere(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "vigil_queue_depth", Help: "h"}))
	var auth string
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := client.New("http://127.0.0.1:1", "api-token", nil).WithMetrics(srv.URL+"/", "metrics-token")
	if c.MetricsURL() != srv.URL+"/metrics" {
		t.Errorf("MetricsURL = %s", c.MetricsURL())
	}
	if _, err := c.Metrics(context.Background()); err != nil {
		t.Fatal(err)
	}
	if auth != "Bearer metrics-token" {
		t.Errorf("Authorization %q, want the metrics token", auth)
	}
	if _, err := client.New(srv.URL, "api-token", nil).Metrics(context.Background()); err != nil || auth != "" {
		t.Errorf("without WithMetrics: %v, Authorization %q (the API token must not be sent)", err, auth)
	}
}
