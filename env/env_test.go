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
	i, err := Parse("bernoulli:0.75,0.625,0.5,0.375,0.25", 0)
	if err != nil || i.Arms() != 5 || i.String() != "bernoulli:0.75,0.625,0.5,0.375,0.25" {
		t.Fatalf("Parse: %v %v", i, err)
	}
	if g := Gaps(i.Means()); g[0] != 0 || g[4] != 0.5 {
		t.Errorf("gaps %v", g)
	}
	gi, err := Parse("gaussian:0.1,0.2:sigma=0.5:lo=-1:hi=2", 0)
	if err != nil || gi.String() != "gaussian:0.1,0.2:sigma=0.5:lo=-1:hi=2" {
		t.Fatalf("Parse gaussian: %v %v", gi, err)
	}
	for _, bad := range []string{"bernoulli", "bernoulli:0.5", "bernoulli:0.5,1.5", "bernoulli:0.5,x", "bernoulli:0.5,NaN",
		"poisson:1,2", "gaussian:0,1:sigma=-1", "gaussian:0,1:lo=2:hi=1", "gaussian:0,1:foo=1", "bernoulli:0.1,0.2:sigma=1"} {
		if _, err := Parse(bad, 0); err == nil {
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

func TestLinearSpec(t *testing.T) {
	a, err := Parse("linear-sphere:k=10,d=3", 42)
	if err != nil {
		t.Fatal(err)
	}
	l := a.(*Linear)
	if l.Arms() != 10 || len(l.Theta) != 3 || l.Bounds() != (mechanism.Bounds{Lo: -1, Hi: 1}) {
		t.Fatalf("%+v", l)
	}
	norm := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x * x
		}
		return math.Sqrt(s)
	}
	for _, x := range append(l.Actions(), l.Theta) {
		if math.Abs(norm(x)-1) > 1e-12 {
			t.Errorf("norm %v", norm(x))
		}
	}
	// The instance comes from the seed, or from instance=; the spec says which.
	b, _ := Parse("linear-sphere:k=10,d=3", 42)
	c, _ := Parse("linear-sphere:k=10,d=3", 43)
	d, _ := Parse(a.String(), 7)
	if b.Means()[0] != a.Means()[0] || c.Means()[0] == a.Means()[0] || d.Means()[0] != a.Means()[0] {
		t.Error("instances are not determined by their seed")
	}
	if a.String() != "linear-sphere:d=3,instance=42,k=10" {
		t.Errorf("canonical spec %q", a.String())
	}
	for _, bad := range []string{"linear-sphere:k=0", "linear-sphere:d=x", "linear-sphere:noise=foo", "linear-sphere:q=1",
		"linear-sphere:sigma=-1", "linear-sphere:lo=1,hi=0", "linear-net:set=cube", "linear-net:d=10,zeta=0.001"} {
		if _, err := Parse(bad, 1); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := NewLinear([][]float64{{1, 0}, {1, 1}}, []float64{1, 0}, 1, false, mechanism.Bounds{Lo: -1, Hi: 1}, ""); err == nil {
		t.Error("an action of norm sqrt(2) accepted")
	}
	n, err := Parse("linear-net:set=ball,d=2,zeta=0.2", 1)
	if err != nil || n.Arms() < 50 {
		t.Fatalf("net: %v %v", n, err)
	}
}

// TestLinearMeans: the clipped means match the average of the rewards, for
// Gaussian and bounded noise.
func TestLinearMeans(t *testing.T) {
	for _, spec := range []string{"linear-sphere:k=4,d=3,sigma=1", "linear-sphere:k=4,d=3,noise=bounded,sigma=0.8,lo=-0.5,hi=0.7"} {
		inst, err := Parse(spec, 3)
		if err != nil {
			t.Fatal(err)
		}
		for arm, m := range inst.Means() {
			s := inst.Stream(1, 0, arm, 1<<20)
			avg := s.Sum(0, 1<<20) / (1 << 20)
			if math.Abs(avg-m) > 5*1/math.Sqrt(1<<20) {
				t.Errorf("%s arm %d: mean %v, average %v", spec, arm, m, avg)
			}
			b := inst.Bounds()
			for _, x := range s.Samples(0, 500, nil) {
				if x < b.Lo || x > b.Hi {
					t.Fatalf("reward %v outside %v", x, b)
				}
			}
		}
	}
}

func BenchmarkGaussianClippedSum(b *testing.B) {
	g, _ := NewGaussian([]float64{0.2, 0.5}, 1, mechanism.Bounds{Lo: -1, Hi: 1})
	s := g.Stream(1, 0, 0, 1<<30)
	var i int64
	for b.Loop() {
		s.Sum(i, i+1<<16)
		i += 1 << 16
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(1<<16), "ns/reward")
}

// BenchmarkContextStep draws one decision set of the paper's contextual
// instance (K = 10, d = 3) and its reward noise.
func BenchmarkContextStep(b *testing.B) {
	c, _ := ParseContextual("contextual-gauss:k=10,d=3", 1)
	r := c.NewRun(1, 0)
	for b.Loop() {
		r.Next()
	}
}
