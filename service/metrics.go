package service

import (
	"net/http"
	"strings"

	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// metrics are the service's Prometheus metrics, on a registry of its own.
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	engine    *engine.Metrics // decisions, rewards, ignored, releases
	budget    *prometheus.GaugeVec
	commits   prometheus.Counter
	group     prometheus.Histogram
	forwarded prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpbandit_http_requests_total",
			Help: "HTTP requests by route and status code."}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dpbandit_http_request_seconds",
			Help:    "HTTP request latency by route.",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}}, []string{"route"}),
		engine: &engine.Metrics{
			Decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpbandit_decisions_total",
				Help: "Decisions taken (retries not counted)."}, []string{"experiment"}),
			Rewards: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpbandit_rewards_total",
				Help: "Rewards settled, by status: learned, ignored, defaulted, expired."}, []string{"experiment", "status"}),
			Ignored: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpbandit_rewards_dropped_total",
				Help: "Rewards acknowledged but not learned, by reason: overflow, contribution_limit, unit_budget."}, []string{"experiment", "reason"}),
			Releases: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpbandit_releases_total",
				Help: "Noisy values released (each drawn once and persisted)."}, []string{"experiment"}),
		},
		budget: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dpbandit_budget_rho",
			Help: "zCDP one learned reward costs its unit in the experiment (event-level rho)."}, []string{"experiment"}),
		commits: prometheus.NewCounter(prometheus.CounterOpts{Name: "dpbandit_store_commits_total",
			Help: "Transactions committed by the writer."}),
		group: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "dpbandit_store_group_size",
			Help: "Changes per committed transaction (group commit).", Buckets: prometheus.ExponentialBuckets(1, 4, 7)}),
		forwarded: prometheus.NewCounter(prometheus.CounterOpts{Name: "dpbandit_forwarded_total",
			Help: "Requests forwarded to the replica serving their experiment."}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.engine.Decisions, m.engine.Rewards, m.engine.Ignored, m.engine.Releases, m.budget, m.commits, m.group, m.forwarded,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// handleMetrics serves the Prometheus metrics: every series to an
// operator (and without a token file); to a tenant's admin only the
// series of the tenant's experiments, without the unlabelled process
// metrics and request counts, which carry every tenant's traffic.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
	var g prometheus.Gatherer = s.m.reg
	if s.cfg.Tokens != nil && t.Role != RoleOperator {
		g = tenantGatherer{s.m.reg, t.Tenant + "/"}
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
