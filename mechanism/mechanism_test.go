package mechanism

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/dpbandit/dpbandit/internal/stattest"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

const alpha = 1e-3

func TestBoundsClipAndReject(t *testing.T) {
	b, err := NewBounds(-1, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want float64 }{{0.5, 0.5}, {-3, -1}, {7, 2}, {2, 2}} {
		if got, err := b.Clip(c.in); err != nil || got != c.want {
			t.Errorf("Clip(%v) = %v, %v", c.in, got, err)
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := b.Clip(bad); err == nil {
			t.Errorf("Clip(%v) accepted", bad)
		}
	}
	for _, bad := range []Bounds{{1, 1}, {2, 1}, {math.NaN(), 1}, {0, math.Inf(1)}} {
		if bad.Validate() == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestBoundsSum(t *testing.T) {
	u := Unit
	if s, err := u.Sum(3, 0, []float64{-1, 0.5, 4}); err != nil || s != 1.5 {
		t.Errorf("samples clipped to %v, %v; want 1.5", s, err)
	}
	if s, err := u.Sum(1, 3.2, nil); err != nil || s != 1 {
		t.Errorf("single reward clipped to %v, %v", s, err)
	}
	if s, err := u.Sum(10, 7, nil); err != nil || s != 7 {
		t.Errorf("feasible sum: %v, %v", s, err)
	}
	for _, c := range []struct {
		n   int64
		sum float64
		smp []float64
	}{{10, 10.5, nil}, {10, -0.1, nil}, {2, math.NaN(), nil}, {1, math.Inf(1), nil}, {0, 0, nil}, {2, 0, []float64{1}}, {1, 0, []float64{math.NaN()}}} {
		if _, err := u.Sum(c.n, c.sum, c.smp); err == nil {
			t.Errorf("Sum(%d, %v, %v) accepted", c.n, c.sum, c.smp)
		}
	}
}

// noiseOf releases 0 many times and returns the added noise.
func noiseOf(release func(float64) (float64, error), n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i], _ = release(0)
	}
	return x
}

func normalCDF(sigma float64) func(float64) float64 {
	return func(v float64) float64 { return 0.5 * math.Erfc(-v/(sigma*math.Sqrt2)) }
}

// TestGaussianMeanScale checks the noise of a released mean of n rewards in
// [0,1] against the variance that Appendix D of seed 001 states for
// AdaC-UCB: 1/(2 rho n^2). A mechanism with the noise divided by 10, the
// broken variant, must be flagged by the same test.
func TestGaussianMeanScale(t *testing.T) {
	nz := noise.Fast{R: noise.Stream(11)}
	for _, c := range []struct {
		rho float64
		n   int64
	}{{0.01, 1}, {0.5, 4}, {10, 1000}} {
		b, _ := privacy.NewZCDP(c.rho)
		g, err := NewGaussian(b, Unit.MeanSensitivity(c.n), nz)
		if err != nil {
			t.Fatal(err)
		}
		want := math.Sqrt(1 / (2 * c.rho * float64(c.n*c.n)))
		if math.Abs(g.Sigma()-want) > 1e-12*want {
			t.Errorf("rho=%v n=%d: sigma %v, want %v", c.rho, c.n, g.Sigma(), want)
		}
		x := noiseOf(g.Release, 20000)
		if d, p := stattest.KSOne(x, normalCDF(want)); p < alpha {
			t.Errorf("rho=%v n=%d: noise not N(0,%v^2): D=%v p=%v", c.rho, c.n, want, d, p)
		}
		broken := Gaussian{sigma: g.Sigma() / 10, nz: nz}
		if _, p := stattest.KSOne(noiseOf(broken.Release, 20000), normalCDF(want)); p >= alpha {
			t.Errorf("rho=%v: the test did not flag noise divided by 10", c.rho)
		}
	}
	if _, err := (Gaussian{sigma: 1, l2: 1, nz: nz}).Release(math.NaN()); err == nil {
		t.Error("NaN statistic released")
	}
}

func TestLaplaceScale(t *testing.T) {
	nz := noise.Fast{R: noise.Stream(12)}
	b, _ := privacy.NewPure(0.5)
	l, err := NewLaplace(b, Unit.MeanSensitivity(8), nz)
	if err != nil {
		t.Fatal(err)
	}
	want := 1 / (0.5 * 8) // Lap(1/(eps n))
	if math.Abs(l.Scale()-want) > 1e-12 {
		t.Errorf("scale %v, want %v", l.Scale(), want)
	}
	cdf := func(v float64) float64 {
		if v < 0 {
			return 0.5 * math.Exp(v/want)
		}
		return 1 - 0.5*math.Exp(-v/want)
	}
	if d, p := stattest.KSOne(noiseOf(l.Release, 20000), cdf); p < alpha {
		t.Errorf("noise not Lap(%v): D=%v p=%v", want, d, p)
	}
	broken := Laplace{scale: want / 10, nz: nz}
	if _, p := stattest.KSOne(noiseOf(broken.Release, 20000), cdf); p >= alpha {
		t.Error("the test did not flag a Laplace scale divided by 10")
	}
	if _, err := NewLaplace(b, 0, nz); err == nil {
		t.Error("zero sensitivity accepted")
	}
}

// TestLocalRandomisers: M1's scale is w/eps, M2's w/(n eps); rewards are
// clipped; a batch of the wrong size, NaN, and a non-private budget are
// errors.
func TestLocalRandomisers(t *testing.T) {
	e, _ := privacy.NewPure(0.5)
	b := Bounds{Lo: -1, Hi: 1}
	m1, err := NewLocalReward(e, b, &zeroNoise{})
	if err != nil || math.Abs(m1.Scale()-4) > 1e-12 {
		t.Fatalf("M1 scale %v, want w/eps = 4 (%v)", m1.Scale(), err)
	}
	m2, _ := NewLocalBatchMean(e, b, 8, &zeroNoise{})
	if math.Abs(m2.Scale()-0.5) > 1e-12 {
		t.Errorf("M2 scale %v, want w/(n eps) = 0.5", m2.Scale())
	}
	if v, err := m1.Report(7); err != nil || v != 1 {
		t.Errorf("M1 report of 7 in [-1, 1]: %v %v, want clipped to 1", v, err)
	}
	if v, _ := m2.Report(1, 1, 1, 1, -1, -1, -1, 5); v != 0.25 {
		t.Errorf("M2 mean %v, want 0.25", v)
	}
	for _, bad := range [][]float64{{}, {math.NaN()}, {1, 2}} {
		if _, err := m1.Report(bad...); err == nil {
			t.Errorf("M1 report of %v accepted", bad)
		}
	}
	if _, err := NewLocalReward(privacy.None(), b, &zeroNoise{}); err == nil {
		t.Error("a non-private local randomiser accepted")
	}
	if _, err := NewLocalBatchMean(e, b, 0, &zeroNoise{}); err == nil {
		t.Error("a batch of 0 rewards accepted")
	}
}

// TestSparseVectorCutoff: with a cutoff c the threshold noise has scale
// 3 Delta/eps and the query noise 3 c Delta/eps (eps/3 and 2 eps/3 of the
// budget, Lyu et al. Algorithm 1); after c positive answers the budget is
// spent; c < 1 and non-pure budgets are errors.
func TestSparseVectorCutoff(t *testing.T) {
	e, _ := privacy.NewPure(0.5)
	sv, err := NewSparseVector(e, 2, 4, &zeroNoise{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(sv.ThresholdScale()-12) > 1e-9 || math.Abs(sv.QueryScale()-48) > 1e-9 {
		t.Errorf("scales %v, %v; want 3 Delta/eps = 12 and 3 c Delta/eps = 48", sv.ThresholdScale(), sv.QueryScale())
	}
	for i := range 4 {
		if above, err := sv.Above(1, 0); !above || err != nil || sv.Left() != 3-i {
			t.Fatalf("answer %d: %v %v, %d left", i, above, err, sv.Left())
		}
	}
	if _, err := sv.Above(1, 0); err == nil {
		t.Error("a fifth positive answer past the cutoff")
	}
	if _, err := NewSparseVector(e, 1, 0, &zeroNoise{}); err == nil {
		t.Error("cutoff 0 accepted")
	}
	z, _ := privacy.NewZCDP(1)
	if _, err := NewSparseVector(z, 1, 1, &zeroNoise{}); err == nil {
		t.Error("a zCDP budget accepted")
	}
}

// TestUnitBallExact: the bound ||a|| <= 1 of the linear privacy proofs is
// checked exactly, with no slack: an action whose computed squared norm
// is one ulp above 1 is refused, by CheckActions and InUnitBall alike, and
// IntoUnitBall brings any finite vector (random directions at every
// dimension from 1 to 40, scaled to norms near 1) inside, changing it by
// at most a few ulps when it was on the sphere.
func TestUnitBallExact(t *testing.T) {
	above := []float64{1, 0x1p-26} // squared norm 1 + 2^-52
	if InUnitBall(above) {
		t.Error("a vector of squared norm 1 + 2^-52 is in the unit ball")
	}
	if err := CheckActions([][]float64{{1, 0}, above}, 2); err == nil {
		t.Error("CheckActions accepted squared norm 1 + 2^-52")
	}
	if err := CheckActions([][]float64{{1, 0}, {0.6, 0.8}}, 2); err != nil {
		t.Error(err)
	}
	for _, v := range [][]float64{{math.NaN(), 0}, {math.Inf(1), 0}} {
		IntoUnitBall(v) // returns: no loop on non-finite input
		if InUnitBall(v) {
			t.Errorf("%v is in the unit ball", v)
		}
	}
	// A vector inside is left as it is, bit for bit (signed zeros and
	// subnormals included).
	for _, v := range [][]float64{{0.6, 0.8}, {1, math.Copysign(0, -1)}, {5e-324, -0.5}, {0, 0, 0}, {}} {
		w := slices.Clone(v)
		IntoUnitBall(w)
		for i := range v {
			if math.Float64bits(w[i]) != math.Float64bits(v[i]) {
				t.Errorf("IntoUnitBall moved %v, inside, to %v", v, w)
			}
		}
	}
	big := []float64{1e200, 1e200}
	if IntoUnitBall(big); !InUnitBall(big) || big[0] < 0.7 {
		t.Errorf("a vector whose squared norm overflows became %v", big)
	}
	r := rand.New(rand.NewPCG(3, 3))
	for d := 1; d <= 40; d++ {
		for range 200 {
			v := make([]float64, d)
			for i := range v {
				v[i] = r.NormFloat64()
			}
			scale := 1 / math.Sqrt(floats.Dot(v, v)) * (1 + (r.Float64()-0.5)*1e-12)
			floats.Scale(scale, v)
			w := slices.Clone(v)
			IntoUnitBall(w)
			if !InUnitBall(w) {
				t.Fatalf("d = %d: %v is outside after IntoUnitBall", d, w)
			}
			for i := range v {
				if math.Abs(w[i]-v[i]) > 1e-11*math.Abs(v[i]) {
					t.Fatalf("d = %d: coordinate %d moved from %v to %v", d, i, v[i], w[i])
				}
			}
		}
	}
}

// NewFor: Laplace calibrated to l1 for pure eps-DP, Gaussian to l2 for
// zCDP and (eps, delta); an invalid budget is an error.
func TestNewFor(t *testing.T) {
	pure, _ := privacy.NewPure(0.5)
	z, _ := privacy.NewZCDP(0.1)
	ap, _ := privacy.NewApprox(1, 1e-6)
	for _, c := range []struct {
		b    privacy.Budget
		name string
		sens float64
	}{{pure, "laplace", 3}, {z, "gaussian", 2}, {ap, "gaussian", 2}} {
		m, err := NewFor(c.b, 3, 2, noise.NewFast(1))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := privacy.GaussianSigma(c.b, 2)
		if c.name == "laplace" {
			want, _ = privacy.LaplaceScale(c.b, 3)
		}
		if m.Name != c.name || m.Sensitivity != c.sens || m.Scale != want {
			t.Errorf("%s: %+v, want %s of scale %v for %v", c.b, m, c.name, want, c.sens)
		}
		x := []float64{1, 2}
		if err := m.AddTo(x); err != nil || x[0] == 1 || x[1] == 2 {
			t.Errorf("%s: AddTo gave %v, %v", c.b, x, err)
		}
	}
	if _, err := NewFor(privacy.Budget{Notion: privacy.ZCDP, Rho: -1}, 1, 1, noise.NewFast(1)); err == nil {
		t.Error("an invalid budget: no error")
	}
}

// TestUnusableNoiseRefused: every constructor that takes a noise source
// refuses one that cannot draw (nil, a Fast without its stream) or a
// Secure with Bits out of range, with an error (ErrNoSource for the
// first two), instead of panicking at the first release.
func TestUnusableNoiseRefused(t *testing.T) {
	z, _ := privacy.NewZCDP(1)
	pure, _ := privacy.NewPure(1)
	w, err := NewWishart(1, 1e-6, 1, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	build := map[string]func(noise.Noise) error{
		"Gaussian":     func(n noise.Noise) error { _, err := NewGaussian(z, 1, n); return err },
		"Laplace":      func(n noise.Noise) error { _, err := NewLaplace(pure, 1, n); return err },
		"For":          func(n noise.Noise) error { _, err := NewFor(z, 1, 1, n); return err },
		"LocalReward":  func(n noise.Noise) error { _, err := NewLocalReward(pure, Unit, n); return err },
		"LocalBatch":   func(n noise.Noise) error { _, err := NewLocalBatchMean(pure, Unit, 4, n); return err },
		"AboveThresh":  func(n noise.Noise) error { _, err := NewAboveThreshold(pure, 1, n); return err },
		"SparseVector": func(n noise.Noise) error { _, err := NewSparseVector(pure, 1, 2, n); return err },
		"TreeAgg":      func(n noise.Noise) error { _, err := NewTreeAgg(pure, 1, 2, 16, n); return err },
		"TreeAggGauss": func(n noise.Noise) error { _, err := NewTreeAggGaussian(z, 1, 0, 2, 16, n); return err },
		"TreeAggFor":   func(n noise.Noise) error { _, err := NewTreeAggFor(z, 1, 1, 2, 16, n); return err },
		"WishartTree": func(n noise.Noise) error {
			_, err := NewWishartTree(w, 2, 16, func(int64) []float64 { return []float64{0, 0} }, n)
			return err
		},
	}
	for name, f := range build {
		for _, n := range []noise.Noise{nil, noise.Fast{}} {
			if err := f(n); !errors.Is(err, noise.ErrNoSource) {
				t.Errorf("%s on %#v: %v, want ErrNoSource", name, n, err)
			}
		}
		if err := f(noise.Secure{Bits: -5}); err == nil {
			t.Errorf("%s on Secure{Bits: -5}: accepted", name)
		}
		if err := f(noise.NewFast(1)); err != nil {
			t.Errorf("%s on a Fast: %v", name, err)
		}
	}
}

// TestIntoUnitBallSetIsIntoUnitBall: the set version gives every vector
// the bits IntoUnitBall gives it, on random sets of every size around its
// chunk of 16, of vectors of 1 to 5 and 16 to 55 coordinates, inside, outside, on the sphere, a rounding
// above it (which needs the ulp steps), huge (a norm that overflows) and
// with NaN or infinite coordinates.
func TestIntoUnitBallSetIsIntoUnitBall(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	special := [][]float64{
		{1, 0, 0}, {0.6, 0.8, 0}, {1e300, 1e300, 1}, {math.NaN(), 0, 0}, {math.Inf(1), 1, 0},
		{1 / math.Sqrt(3), 1 / math.Sqrt(3), 1 / math.Sqrt(3)}, {0, 0, 0}, {-3, 4, 0},
	}
	for trial := range 2000 {
		k := 1 + trial%40
		set := make([][]float64, k)
		for i := range set {
			if r.IntN(4) == 0 {
				set[i] = slices.Clone(special[r.IntN(len(special))])
				continue
			}
			set[i] = make([]float64, []int{1 + r.IntN(5), 16 + r.IntN(40)}[r.IntN(2)]) // short, and long (the one-pass scaling)
			for j := range set[i] {
				set[i][j] = r.NormFloat64() * math.Pow(10, float64(r.IntN(7)-3))
			}
		}
		want := make([][]float64, k)
		for i, a := range set {
			want[i] = slices.Clone(a)
			IntoUnitBall(want[i])
		}
		IntoUnitBallSet(set)
		for i := range set {
			for j := range set[i] {
				if math.Float64bits(set[i][j]) != math.Float64bits(want[i][j]) {
					t.Fatalf("trial %d, vector %d: %v, IntoUnitBall gives %v", trial, i, set[i], want[i])
				}
			}
		}
	}
}
