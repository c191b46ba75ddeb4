package api

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// handleMetrics serves the Prometheus metrics: every series to an
// operator (and without a token file); to a tenant's admin only the
// series of the tenant's experiments, without the unlabelled process
// metrics and request counts, which carry every tenant's traffic.
func (a *server) handleMetrics(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
	var g prometheus.Gatherer = a.cfg.Registry
	if a.cfg.Tokens != nil && t.Role != RoleOperator {
		g = tenantGatherer{a.cfg.Registry, t.Tenant + "/"}
	}
	promhttp.HandlerFor(g, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	return nil, nil
}

// tenantGatherer keeps the series whose experiment label starts with
// prefix.
type tenantGatherer struct {
	g      prometheus.Gatherer
	prefix string
}

func (tg tenantGatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := tg.g.Gather()
	var out []*dto.MetricFamily
	for _, mf := range mfs {
		var keep []*dto.Metric
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == "experiment" && strings.HasPrefix(l.GetValue(), tg.prefix) {
					keep = append(keep, m)
				}
			}
		}
		if len(keep) > 0 {
			mf.Metric = keep
			out = append(out, mf)
		}
	}
	return out, err
}

// metrics are the surface's own metrics.
type metrics struct {
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	forwarded prometheus.Counter
}

// newMetrics registers the surface's metrics on reg.
func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpbandit_http_requests_total",
			Help: "HTTP requests by route and status code."}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dpbandit_http_request_seconds",
			Help:    "HTTP request latency by route.",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}}, []string{"route"}),
		forwarded: prometheus.NewCounter(prometheus.CounterOpts{Name: "dpbandit_forwarded_total",
			Help: "Requests forwarded to the replica serving their experiment."}),
	}
	reg.MustRegister(m.requests, m.latency, m.forwarded)
	return m
}
