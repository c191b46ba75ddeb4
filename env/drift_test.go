package env

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// TestDriftingMeans: the means of each kind at chosen steps, against the
// spec's numbers worked out by hand.
func TestDriftingMeans(t *testing.T) {
	for _, c := range []struct {
		spec string
		at   map[int64][]float64
	}{
		{"piecewise-bernoulli:0.5,0.3,0.4/0.5,0.3,0.9@3000/0.5,0.3,0.4@5000", map[int64][]float64{
			0: {0.5, 0.3, 0.4}, 2999: {0.5, 0.3, 0.4}, 3000: {0.5, 0.3, 0.9}, 4999: {0.5, 0.3, 0.9}, 5000: {0.5, 0.3, 0.4}, 1e9: {0.5, 0.3, 0.4}}},
		{"drift-bernoulli:linear:0.2,0.8/0.8,0.2@1000", map[int64][]float64{
			0: {0.2, 0.8}, 500: {0.5, 0.5}, 750: {0.65, 0.35}, 1000: {0.8, 0.2}, 5000: {0.8, 0.2}}},
		{"drift-bernoulli:sine:0.5,0.5/0.3,-0.3@400", map[int64][]float64{
			0: {0.5, 0.5}, 100: {0.8, 0.2}, 300: {0.2, 0.8}, 500: {0.8, 0.2}}},
		// clipped to [0, 1] with sigma tiny: the means are the raw ones.
		{"piecewise-gaussian:0.2,0.6/0.7,0.1@10:sigma=1e-9", map[int64][]float64{0: {0.2, 0.6}, 10: {0.7, 0.1}}},
	} {
		inst, err := Parse(c.spec, 0)
		if err != nil {
			t.Fatal(err)
		}
		d := inst.(*Drifting)
		if d.String() != c.spec {
			t.Errorf("%s: String %q", c.spec, d.String())
		}
		for step, want := range c.at {
			got := d.MeansAt(step)
			for a := range want {
				if math.Abs(got[a]-want[a]) > 1e-12 {
					t.Errorf("%s at %d: means %v, want %v", c.spec, step, got, want)
					break
				}
			}
		}
	}
	p, _ := Parse("piecewise-bernoulli:0.1,0.2/0.3,0.4@7/0.5,0.6@9", 0)
	if got := p.(*Drifting).Breakpoints(); !slices.Equal(got, []int64{7, 9}) {
		t.Errorf("breakpoints %v", got)
	}
}

// TestDriftingRefused: malformed or impossible specs are typed errors.
func TestDriftingRefused(t *testing.T) {
	for _, spec := range []string{
		"piecewise-bernoulli:0.5",                           // one arm
		"piecewise-bernoulli:0.5,0.3/0.5,0.9",               // no breakpoint
		"piecewise-bernoulli:0.5,0.3@4/0.5,0.9@8",           // a start on the first segment
		"piecewise-bernoulli:0.5,0.3/0.5,0.9@8/0.1,0.2@8",   // not increasing
		"piecewise-bernoulli:0.5,0.3/0.5,0.9,0.1@8",         // arms differ
		"piecewise-bernoulli:0.5,1.3",                       // not a probability
		"drift-bernoulli:sine:0.5,0.5/0.6,0.1@100",          // 0.5 + 0.6 > 1
		"drift-bernoulli:linear:0.5,0.5/0.6,0.1",            // no T
		"drift-bernoulli:wave:0.5,0.5/0.1,0.1@100",          // unknown shape
		"piecewise-bernoulli:0.5,0.3:sigma=2",               // Bernoulli takes no option
		"piecewise-gaussian:0.5,0.3:sigma=0",                // sigma 0
		"drift-gaussian:sine:0.5,0.5/0.1,0.1@100:lo=1:hi=0", // empty range
	} {
		_, err := Parse(spec, 0)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: %v, want an env error", spec, err)
		}
	}
}

// TestDriftingSampleDistribution: at a step of each segment, 40,000
// rewards of each arm have the mean of MeansAt within 5 standard errors
// (sqrt(p(1-p)/n) for Bernoulli arms, sigma/sqrt(n) bounding the clipped
// Gaussian's; a false alarm has probability below 6e-7 per check);
// each draw uses one variate whatever the arm, so two streams of the same
// seed stay in step; the same seed gives the same rewards, another run
// others.
func TestDriftingSampleDistribution(t *testing.T) {
	const n = 40000
	for _, spec := range []string{
		"piecewise-bernoulli:0.5,0.3,0.4/0.5,0.3,0.9@3000/0.5,0.3,0.4@5000",
		"drift-gaussian:sine:0.5,0.2/0.4,0.3@1000:sigma=0.5",
	} {
		inst, _ := Parse(spec, 0)
		d := inst.(*Drifting)
		for _, step := range []int64{10, 250, 3500, 6000} {
			mu := d.MeansAt(step)
			for a := range d.Arms() {
				r := DriftStream(1, uint64(step))
				sum := 0.0
				for range n {
					sum += d.Sample(r, a, step)
				}
				se := math.Sqrt(mu[a] * (1 - mu[a]) / n)
				if d.gauss {
					se = d.sigma / math.Sqrt(n)
				}
				if got := sum / n; math.Abs(got-mu[a]) > 5*se {
					t.Errorf("%s step %d arm %d: mean %.4f, want %.4f +- %.4f", spec, step, a, got, mu[a], 5*se)
				}
			}
		}
		r1, r2 := DriftStream(3, 0), DriftStream(3, 0)
		d.Sample(r1, 0, 5)
		d.Sample(r2, d.Arms()-1, 5)
		if r1.Uint64() != r2.Uint64() {
			t.Errorf("%s: two arms' draws use different numbers of variates", spec)
		}
		if DriftStream(3, 0).Uint64() == DriftStream(3, 1).Uint64() {
			t.Error("two runs share their rewards")
		}
	}
}
