package mab

import (
	"math"
	"sync"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
)

// cpLower is the one-sided Clopper-Pearson lower bound, at level 1 - a,
// of a binomial proportion with k successes in n trials.
func cpLower(k, n int, a float64) float64 {
	lo, _ := sim.ClopperPearson(k, n, 2*a)
	return lo
}

// identifyErrors runs AdaP-TT with threshold th at eps and risk delta,
// runs times on the Bernoulli means, over two goroutines, and returns how
// many runs recommended another arm than the best and the mean stopping
// time.
func identifyErrors(t *testing.T, means []float64, eps, delta float64, th Threshold, runs int) (int, float64) {
	t.Helper()
	b, _ := privacy.NewPure(eps)
	best := argmax(means)
	wrong := make([]bool, runs)
	taus := make([]int64, runs)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for run := w; run < runs; run += 2 {
				st := bandit.Setting{Arms: len(means), Bounds: mechanism.Unit, Rand: noise.Stream(uint64(run), 1), Noise: noise.NewFast(uint64(run), 2)}
				p, err := NewAdaPTT(st, b, delta, 0.5, th)
				if err != nil {
					t.Error(err)
					return
				}
				arm, tau, ok := identify(t, p, means, 1e9, uint64(run))
				if !ok {
					t.Errorf("run %d did not stop", run)
				}
				wrong[run], taus[run] = arm != best, tau
			}
		})
	}
	wg.Wait()
	errs, sum := 0, 0.0
	for i := range runs {
		if wrong[i] {
			errs++
		}
		sum += float64(taus[i])
	}
	return errs, sum / float64(runs)
}

// TestAdaPTTDeltaCorrectQuick: over 1000 runs of (0.7, 0.5) at delta =
// 0.3 and eps = 1 the error rate of AdaP-TT with the threshold of the
// authors' experiments (the less conservative one) is at most delta: the one-sided 99.9%
// Clopper-Pearson lower bound of the rate must not exceed delta (a rule
// with a rate above delta fails with probability about 1 once the rate
// is a few standard errors, about 0.015 here, above it). The same check
// at delta = 0.02 (the rule still built for 0.3) must fail: the check
// has power. The 10,000-run check is TestAdaPTTDeltaCorrectHeavy.
func TestAdaPTTDeltaCorrectQuick(t *testing.T) {
	const runs, delta = 1000, 0.3
	errs, tau := identifyErrors(t, []float64{0.7, 0.5}, 1, delta, ThresholdExperiments, runs)
	lo := cpLower(errs, runs, 1e-3)
	t.Logf("%d errors in %d runs (lower bound %.4f), mean tau %.0f", errs, runs, lo, tau)
	if lo > delta {
		t.Errorf("error rate %d/%d: its 99.9%% lower bound %.4f exceeds delta = %v", errs, runs, lo, delta)
	}
	if lo <= 0.02 {
		t.Errorf("the check has no power: %d/%d errors are not above 0.02 at 99.9%%", errs, runs)
	}
}

// TestAdaPTTMatchesAuthorsCode compares AdaP-TT's stopping time, as the
// authors' code counts it (samples in completed phases, Phased), and
// TT-UCB's with the authors' own code (github.com/achraf-azize/DP-BAI,
// commit c8d8be2, run unchanged with numpy 1.24: 300 runs each of
// AdaPTopTwo and TTUCB on mu = (0, 0.25, 0.5, 0.75, 1), delta = 0.01,
// beta = 0.5, np.random.seed(1)): AdaP-TT 5524 +- 68 (standard error) at
// eps = 0.1 and 3388 +- 42 at eps = 1, TT-UCB 1276 +- 14. Each of our
// means over 300 runs must lie within 3 standard errors of the
// difference (both samples' errors combined) of the reference.
func TestAdaPTTMatchesAuthorsCode(t *testing.T) {
	means := []float64{0, 0.25, 0.5, 0.75, 1}
	cases := []struct {
		algo      string
		eps       float64
		ref, ref2 float64 // mean and standard error of the authors' code
	}{{"adap-tt", 0.1, 5524, 68}, {"adap-tt", 1, 3388, 42}, {"tt-ucb", 1, 1276, 14}}
	for _, c := range cases {
		const runs = 300
		var x []float64
		for run := range uint64(runs) {
			b, _ := privacy.NewPure(c.eps)
			st := bandit.Setting{Arms: len(means), Bounds: mechanism.Unit, Rand: noise.Stream(run, 11), Noise: noise.NewFast(run, 12)}
			var p bandit.Policy
			var err error
			if c.algo == "adap-tt" {
				p, err = NewAdaPTT(st, b, 0.01, 0.5, ThresholdExperiments)
			} else {
				p, err = NewTTUCB(st, 0.01, 0.5)
			}
			if err != nil {
				t.Fatal(err)
			}
			arm, tau, ok := identify(t, p, means, 1e8, run+1000)
			if !ok || arm != 4 {
				t.Fatalf("%s run %d: stopped %v on arm %d", c.algo, run, ok, arm)
			}
			if a, isA := p.(*AdaPTT); isA {
				tau, _ = a.Phased()
			}
			x = append(x, float64(tau))
		}
		m, se := meanSE(x)
		z := (m - c.ref) / math.Hypot(se, c.ref2)
		t.Logf("%s eps=%v: %.0f +- %.0f, the authors' code %.0f +- %.0f (z = %.2f)", c.algo, c.eps, m, se, c.ref, c.ref2, z)
		if math.Abs(z) > 3 {
			t.Errorf("%s eps=%v: mean stopping time %.0f +- %.0f, the authors' code %.0f +- %.0f: %.1f standard errors apart", c.algo, c.eps, m, se, c.ref, c.ref2, z)
		}
	}
}

// meanSE returns the mean of x and its standard error.
func meanSE(x []float64) (float64, float64) {
	m, s := 0.0, 0.0
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return m, math.Sqrt(s / float64(len(x)-1) / float64(len(x)))
}
