package sim

import "github.com/dpbandit/dpbandit/bandit"

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
