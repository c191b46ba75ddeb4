//go:build heavy

package sparse

import (
	"testing"

	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/env"
)

// TestScalingNeedsTheSupport is the measurement behind the README's
// reading of 002's scaling claim on sparse-gauss (the preset's instances,
// T = 10^4, 4 runs): from d = 100 to d = 1000 the regret of the LASSO
// bandit, which must find the support, grows more than twice as much as
// that of its least squares on the true support (given, never
// re-estimated), which grows too (contexts of norm 1 make each
// coordinate's signal fall like 1/d). About 5 s: it runs with the build
// tag heavy only (the README's test command, which CI runs).
func TestScalingNeedsTheSupport(t *testing.T) {
	t.Parallel()
	// regrets returns the mean regret at d of the LASSO bandit with the
	// support given and of the LASSO bandit, over 4 runs.
	regrets := func(d string) (oracle, lasso float64) {
		c, err := env.ParseContextual("sparse-gauss:k=10,d="+d+",s=5,instance=7", 1)
		if err != nil {
			t.Fatal(err)
		}
		for run := range uint64(4) {
			var ps []contextual.Policy
			for _, given := range []bool{true, false} {
				p, err := NewLassoBandit(contextual.Setting{Dim: c.D, Horizon: 10000, Bounds: c.Range}, Config{Lambda0: 0.05, CTheta: 1, Ridge: 1e-3})
				if err != nil {
					t.Fatal(err)
				}
				if given {
					p.reestimate = func(int64) error { p.setSupport(c.Support()); return nil }
				}
				ps = append(ps, p)
			}
			reg := playRuns(t, ps, c, 10000, run)
			oracle += reg[0] / 4
			lasso += reg[1] / 4
		}
		return oracle, lasso
	}
	o100, l100 := regrets("100")
	o1000, l1000 := regrets("1000")
	t.Logf("true support: %.1f at d = 100, %.1f at d = 1000 (x%.2f); LASSO bandit: %.1f, %.1f (x%.2f)", o100, o1000, o1000/o100, l100, l1000, l1000/l100)
	if l1000/l100 < 2*o1000/o100 {
		t.Errorf("the LASSO bandit's regret grows %.2f times, not twice as much as with the support given (%.2f)", l1000/l100, o1000/o100)
	}
}
