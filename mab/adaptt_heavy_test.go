//go:build heavy

package mab

import "testing"

// TestAdaPTTDeltaCorrectHeavy: over 10,000 runs of the hard two-armed
// instance (0.6, 0.5) at eps = 1 and delta = 0.1, then 0.01, AdaP-TT's
// error rate is at most delta: the one-sided 99.9% Clopper-Pearson lower
// bound of the rate must not exceed delta. The 95% two-sided interval is
// logged.
func TestAdaPTTDeltaCorrectHeavy(t *testing.T) {
	for _, delta := range []float64{0.1, 0.01} {
		deltaCorrect(t, []float64{0.6, 0.5}, delta)
	}
}

func deltaCorrect(t *testing.T, means []float64, delta float64) {
	const runs = 10_000
	errs, tau := identifyErrors(t, means, delta, runs)
	lo := cpLower(errs, runs, 1e-3)
	t.Logf("delta %v: %d errors in %d runs (rate %.4f, 95%% interval [%.4f, %.4f]), mean tau %.0f",
		delta, errs, runs, float64(errs)/runs, cpLower(errs, runs, 0.025), 1-cpLower(runs-errs, runs, 0.025), tau)
	if lo > delta {
		t.Errorf("error rate %d/%d: its 99.9%% lower bound %.4f exceeds delta = %v", errs, runs, lo, delta)
	}
}
