package service

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/dpbandit/dpbandit/service/engine"
)

// metrics are the service's Prometheus metrics, on a registry of its own.
type metrics struct {
	reg     *prometheus.Registry
	engine  *engine.Metrics // decisions, rewards, ignored, releases
	budget  *prometheus.GaugeVec
	commits prometheus.Counter
	group   prometheus.Histogram
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
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
	}
	m.reg.MustRegister(m.engine.Decisions, m.engine.Rewards, m.engine.Ignored, m.engine.Releases, m.budget, m.commits, m.group,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
