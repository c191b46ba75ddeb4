package mechanism

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpbandit/dpbandit/noise"
)

// mseResult is the measured mean squared error of a counter's prefix
// sums against the truth, averaged over t = 1..T and over runs.
type mseResult struct {
	mean, se float64 // over runs: the mean of the per-run MSE and its standard error
	exact    float64 // the mean of Var(t) over t: what the accounting predicts
}

// measureMSE runs R independent streams of T uniform [0, 1] inputs
// through fresh counters (rho = 1, l2 = 1).
func measureMSE(t testing.TB, kind CounterKind, T int64, R int, seed uint64) mseResult {
	var sum, sum2 float64
	var exact float64
	for run := range R {
		c := mustCounter(t, kind, 1, 1, 1, T, noise.NewFast(seed, uint64(run)))
		r := rand.New(rand.NewPCG(seed, uint64(run)))
		s, m := 0.0, 0.0
		x := []float64{0}
		for i := int64(1); i <= T; i++ {
			x[0] = r.Float64()
			s += x[0]
			out, err := c.Add(x)
			if err != nil {
				t.Fatal(err)
			}
			e := out[0] - s
			m += e * e
		}
		m /= float64(T)
		sum += m
		sum2 += m * m
		if run == 0 {
			exact, _ = meanMaxVar(c)
		}
	}
	mean := sum / float64(R)
	sd := math.Sqrt(math.Max(0, sum2/float64(R)-mean*mean) * float64(R) / float64(R-1))
	return mseResult{mean: mean, se: sd / math.Sqrt(float64(R)), exact: exact}
}

// ratioCI returns the ratio a/b of two independent measured means and its
// 95% interval, from the delta method on log(a/b).
func ratioCI(a, b mseResult) (r, lo, hi float64) {
	r = a.mean / b.mean
	s := math.Hypot(a.se/a.mean, b.se/b.mean)
	return r, r * math.Exp(-1.96*s), r * math.Exp(1.96*s)
}

// mseBound is the bound, in standard errors, on the distance between the
// measured MSE and the predicted one (the per-run MSE is an average of T
// correlated squared Gaussians: its mean over R runs is nearly normal).
const mseBound = 5

// sweepMSE measures every counter at each T (the factorisation mechanism
// up to factMax) and checks each measured MSE against the prediction.
func sweepMSE(t *testing.T, logTs []int, R int, factMax int64) {
	for _, lt := range logTs {
		T := int64(1) << lt
		res := map[CounterKind]mseResult{}
		for _, kind := range CounterKinds {
			if kind == CounterFactorisation && T > factMax {
				continue
			}
			m := measureMSE(t, kind, T, R, uint64(lt))
			res[kind] = m
			if math.Abs(m.mean-m.exact) > mseBound*m.se {
				t.Errorf("%s T=2^%d: MSE %.3f +- %.3f, predicted %.3f", kind, lt, m.mean, m.se, m.exact)
			}
		}
		for _, kind := range CounterKinds {
			m, ok := res[kind]
			if !ok {
				continue
			}
			rb, lo, hi := ratioCI(m, res[CounterBinary])
			rt, tlo, thi := ratioCI(m, res[CounterTree])
			t.Logf("T=2^%d %-13s MSE %8.3f +- %.3f (pred %8.3f) / binary %.3f [%.3f, %.3f] (pred %.3f) / tree %.3f [%.3f, %.3f] (pred %.3f)",
				lt, kind, m.mean, 1.96*m.se, m.exact, rb, lo, hi, m.exact/res[CounterBinary].exact,
				rt, tlo, thi, m.exact/res[CounterTree].exact)
		}
	}
}

// TestCounterMSEQuick: the quick version of the heavy sweep: T = 2^10,
// 60 runs per counter.
func TestCounterMSEQuick(t *testing.T) {
	sweepMSE(t, []int{10}, 60, 1<<10)
}
