package env

import (
	"math"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/internal/stattest"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
)

const alpha = 1e-3

func TestStreamConsistent(t *testing.T) {
	b, _ := NewBernoulli([]float64{0.3, 0.8})
	r := noise.Stream(1)
	for arm := range 2 {
		s := b.Stream(9, 4, arm, 1_000_000)
		for range 200 {
			x := r.Int64N(s.Capacity())
			y := x + r.Int64N(s.Capacity()-x+1)
			z := y + r.Int64N(s.Capacity()-y+1)
			fresh := b.Stream(9, 4, arm, 1_000_000)
			if got, want := s.Sum(x, y)+s.Sum(y, z), fresh.Sum(x, z); got != want {
				t.Fatalf("Sum(%d,%d)+Sum(%d,%d) = %v, fresh Sum(%d,%d) = %v", x, y, y, z, got, x, z, want)
			}
		}
		// Step by step equals batched, and Samples agree with Sum.
		u, v := b.Stream(9, 4, arm, 1_000_000), b.Stream(9, 4, arm, 1_000_000)
		step := 0.0
		for i := int64(1000); i < 1300; i++ {
			step += u.Sum(i, i+1)
		}
		smp := 0.0
		for _, x := range v.Samples(1000, 1300, nil) {
			if x != 0 && x != 1 {
				t.Fatalf("Bernoulli sample %v", x)
			}
			smp += x
		}
		if batch := v.Sum(1000, 1300); step != batch || smp != batch {
			t.Fatalf("step %v, samples %v, batch %v", step, smp, batch)
		}
	}
	if b.Stream(9, 4, 0, 1000).Sum(0, 1000) == b.Stream(9, 5, 0, 1000).Sum(0, 1000) &&
		b.Stream(9, 4, 0, 1000).Sum(0, 500) == b.Stream(9, 5, 0, 1000).Sum(0, 500) {
		t.Error("runs 4 and 5 look identical")
	}
}

// TestBernoulliStreamLaw checks that range sums of the bridge are
// Binomial: over independent runs, Sum over a range of length n straddling
// leaf and node boundaries is Binomial(n, p), single rewards are Bernoulli,
// and the sums of two adjacent ranges are uncorrelated.
func TestBernoulliStreamLaw(t *testing.T) {
	const p, runs = 0.37, 6000
	b, _ := NewBernoulli([]float64{p, 0.5})
	for _, rg := range [][2]int64{{0, 1}, {63, 64}, {1000, 1300}, {12345, 52345}, {0, 1 << 20}} {
		n := rg[1] - rg[0]
		mean, sd := float64(n)*p, math.Sqrt(float64(n)*p*(1-p))
		lo := int64(math.Max(0, math.Floor(mean-8*sd)))
		hi := int64(math.Min(float64(n), math.Ceil(mean+8*sd)))
		counts := make([]int, hi-lo+1)
		for run := range uint64(runs) {
			k := int64(b.Stream(3, run, 0, 1<<20).Sum(rg[0], rg[1]))
			counts[min(max(k, lo), hi)-lo]++
		}
		pmf := func(k int64) float64 {
			lc, _ := math.Lgamma(float64(n + 1))
			l1, _ := math.Lgamma(float64(k + 1))
			l2, _ := math.Lgamma(float64(n - k + 1))
			return math.Exp(lc - l1 - l2 + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
		}
		if pv, df := stattest.ChiSquare(counts, lo, pmf); pv < alpha {
			t.Errorf("range %v: sum not Binomial(%d, %v): p=%v df=%d", rg, n, p, pv, df)
		}
	}
	var sx, sy, sxy float64
	for run := range uint64(runs) {
		s := b.Stream(4, run, 0, 4096)
		x, y := s.Sum(0, 2048), s.Sum(2048, 4096)
		sx, sy, sxy = sx+x, sy+y, sxy+x*y
	}
	cov := sxy/runs - sx/runs*sy/runs
	corr := cov / (2048 * p * (1 - p))
	if math.Abs(corr) > 4/math.Sqrt(runs) {
		t.Errorf("adjacent halves correlated: %v", corr)
	}
}

func TestGaussianStreamLaw(t *testing.T) {
	wide := mechanism.Bounds{Lo: -1e6, Hi: 1e6}
	g, err := NewGaussian([]float64{0.2, 0.5}, 0.7, wide)
	if err != nil {
		t.Fatal(err)
	}
	const runs = 4000
	x := make([]float64, runs)
	for run := range x {
		x[run] = g.Stream(5, uint64(run), 1, 1<<16).Sum(100, 1100)
	}
	mean, sd := 1000*0.5, 0.7*math.Sqrt(1000)
	cdf := func(v float64) float64 { return 0.5 * math.Erfc(-(v-mean)/(sd*math.Sqrt2)) }
	if d, p := stattest.KSOne(x, cdf); p < alpha {
		t.Errorf("Gaussian range sum: KS D=%v p=%v", d, p)
	}
	// Clipped means match the rewards' average.
	c, _ := NewGaussian([]float64{0.2, 0.9}, 1, mechanism.Unit)
	for arm, m := range c.Means() {
		s := c.Stream(6, 0, arm, 1<<20)
		avg := s.Sum(0, 1<<20) / (1 << 20)
		// The clipped reward has variance < 1/4; 5 standard errors.
		if math.Abs(avg-m) > 5*0.5/math.Sqrt(1<<20) {
			t.Errorf("arm %d: clipped mean %v, rewards average %v", arm, m, avg)
		}
		for _, v := range s.Samples(0, 1000, nil) {
			if v < 0 || v > 1 {
				t.Fatalf("sample %v outside [0,1]", v)
			}
		}
	}
}

func TestParse(t *testing.T) {
	i, err := Parse("bernoulli:0.75,0.625,0.5,0.375,0.25")
	if err != nil || i.Arms() != 5 || i.String() != "bernoulli:0.75,0.625,0.5,0.375,0.25" {
		t.Fatalf("Parse: %v %v", i, err)
	}
	if g := Gaps(i.Means()); g[0] != 0 || g[4] != 0.5 {
		t.Errorf("gaps %v", g)
	}
	gi, err := Parse("gaussian:0.1,0.2:sigma=0.5:lo=-1:hi=2")
	if err != nil || gi.String() != "gaussian:0.1,0.2:sigma=0.5:lo=-1:hi=2" {
		t.Fatalf("Parse gaussian: %v %v", gi, err)
	}
	for _, bad := range []string{"bernoulli", "bernoulli:0.5", "bernoulli:0.5,1.5", "bernoulli:0.5,x", "bernoulli:0.5,NaN",
		"poisson:1,2", "gaussian:0,1:sigma=-1", "gaussian:0,1:lo=2:hi=1", "gaussian:0,1:foo=1", "bernoulli:0.1,0.2:sigma=1"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		} else if !strings.HasPrefix(err.Error(), "env:") && !strings.HasPrefix(err.Error(), "mechanism:") {
			t.Errorf("Parse(%q): error %q lacks its origin", bad, err)
		}
	}
}

func BenchmarkStreamStep(b *testing.B) {
	bern, _ := NewBernoulli([]float64{0.5, 0.4})
	s := bern.Stream(1, 0, 0, 1<<40)
	var i int64
	for b.Loop() {
		s.Sum(i, i+1)
		i++
	}
}

func BenchmarkStreamRange(b *testing.B) {
	bern, _ := NewBernoulli([]float64{0.5, 0.4})
	s := bern.Stream(1, 0, 0, 1<<40)
	var i int64
	for b.Loop() {
		s.Sum(i, 2*i+1)
		i = 2*i + 1
		if i > 1<<38 {
			i = 0
		}
	}
}
