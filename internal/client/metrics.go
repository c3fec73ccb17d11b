package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is one scrape of /metrics: the metric families by name.
type Metrics map[string]*dto.MetricFamily

// Labels are the labels of one series, name → value.
type Labels map[string]string

// Metrics scrapes GET /metrics (Prometheus text format) at the API's
// address, or where WithMetrics says, with the metrics token (never the
// API token: the metrics are the operator's, not an org's).
func (c *Client) Metrics(ctx context.Context) (Metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.MetricsURL(), nil)
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: %w", err)
	}
	req.Header.Set("Accept", string(expfmt.FmtText))
	if c.metricsToken != "" {
		req.Header.Set("Authorization", "Bearer "+c.metricsToken)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err // a *url.Error: it names the method and the URL
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, bodyStart))
		return nil, &Error{Method: http.MethodGet, Path: "/metrics", Status: resp.StatusCode, Body: string(body)}
	}
	m, err := ParseMetrics(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: %w", err)
	}
	return m, nil
}

// ParseMetrics reads the Prometheus text exposition format.
func ParseMetrics(r io.Reader) (Metrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return Metrics(fams), nil
}

// Has reports whether the scrape has a series named name (see Sum).
func (m Metrics) Has(name string) bool {
	_, series, _ := m.lookup(name)
	return len(series) > 0
}

// Sum adds the values of every series named name. The name is a family's
// (a counter, gauge or untyped metric) or, as in the text format, a
// histogram's or summary's with _sum or _count for the sum or the count
// of its observations. 0 when there is none.
func (m Metrics) Sum(name string) float64 {
	return m.SumWhere(name, nil)
}

// SumWhere is Sum of the series whose labels satisfy keep.
func (m Metrics) SumWhere(name string, keep func(Labels) bool) float64 {
	fam, series, part := m.lookup(name)
	var sum float64
	for _, s := range series {
		if keep != nil && !keep(labels(s)) {
			continue
		}
		sum += value(fam.GetType(), s, part)
	}
	return sum
}

// LabelValues lists, sorted, the values label takes among the series
// named name (see Sum).
func (m Metrics) LabelValues(name, label string) []string {
	_, series, _ := m.lookup(name)
	var out []string
	for _, s := range series {
		for _, l := range s.GetLabel() {
			if l.GetName() == label && !slices.Contains(out, l.GetValue()) {
				out = append(out, l.GetValue())
			}
		}
	}
	slices.Sort(out)
	return out
}

// lookup finds the family of a series name and which part of a histogram
// or summary it names ("sum", "count"; "" for the value itself).
func (m Metrics) lookup(name string) (*dto.MetricFamily, []*dto.Metric, string) {
	if f := m[name]; f != nil && !observations(f) {
		return f, f.GetMetric(), ""
	}
	for _, part := range []string{"sum", "count"} {
		base, ok := strings.CutSuffix(name, "_"+part)
		if f := m[base]; ok && f != nil && observations(f) {
			return f, f.GetMetric(), part
		}
	}
	return nil, nil, ""
}

// observations reports whether f is a histogram or a summary, whose
// series are named by the family's name with _sum or _count.
func observations(f *dto.MetricFamily) bool {
	switch f.GetType() {
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM, dto.MetricType_SUMMARY:
		return true
	}
	return false
}

func labels(s *dto.Metric) Labels {
	l := make(Labels, len(s.GetLabel()))
	for _, p := range s.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// value is the number of a series: a counter's, gauge's or untyped
// metric's value, or the sum or count of a histogram or summary.
func value(t dto.MetricType, s *dto.Metric, part string) float64 {
	switch t {
	case dto.MetricType_COUNTER:
		return s.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return s.GetGauge().GetValue()
	case dto.MetricType_UNTYPED:
		return s.GetUntyped().GetValue()
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		h := s.GetHistogram()
		if part == "count" {
			return float64(h.GetSampleCount())
		}
		return h.GetSampleSum()
	case dto.MetricType_SUMMARY:
		sm := s.GetSummary()
		if part == "count" {
			return float64(sm.GetSampleCount())
		}
		return sm.GetSampleSum()
	}
	return 0
}
