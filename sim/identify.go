package sim

import (
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpbandit/dpbandit/bandit"
)

// The metrics of a best-arm identification (a bandit.Identifier) in a
// Record: the stopping time tau (pulls made when the stopping rule fired;
// the horizon for a run that had not stopped by then, a censored value),
// whether the rule fired, and whether the recommended arm was not a best
// arm (0 for a run that did not stop).
const (
	MetricTau     = "tau"
	MetricStopped = "stopped"
	MetricError   = "error"
)

// IdentifyMetrics returns the identification metrics of p after a run of
// horizon T on an instance of the given means, or nil when p is not a
// bandit.Identifier.
func IdentifyMetrics(p bandit.Policy, means []float64, T int64) map[string]float64 {
	id, ok := p.(bandit.Identifier)
	if !ok {
		return nil
	}
	arm, tau, stopped := id.Decision()
	if !stopped {
		return map[string]float64{MetricTau: float64(T), MetricStopped: 0, MetricError: 0}
	}
	best := means[0]
	for _, m := range means {
		best = max(best, m)
	}
	wrong := 0.0
	if means[arm] < best {
		wrong = 1
	}
	return map[string]float64{MetricTau: float64(tau), MetricStopped: 1, MetricError: wrong}
}

// ClopperPearson returns the two-sided Clopper-Pearson interval, at level
// 1 - alpha, of a binomial proportion with k successes in n trials (each
// side holds with probability at least 1 - alpha/2): the interval of an
// identification's error rate over n runs.
func ClopperPearson(k, n int, alpha float64) (lo, hi float64) {
	if k > 0 {
		lo = distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(alpha / 2)
	}
	hi = 1
	if k < n {
		hi = distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}.Quantile(1 - alpha/2)
	}
	return lo, hi
}
