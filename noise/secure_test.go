package noise

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/dpbandit/dpbandit/internal/stattest"
)

// seeded returns a deterministic entropy source for tests.
func seeded(s byte) *rand.ChaCha8 { return rand.NewChaCha8([32]byte{s}) }

func TestBernoulliExp(t *testing.T) {
	r := seeded(1)
	for _, g := range []*big.Rat{big.NewRat(0, 1), big.NewRat(3, 10), big.NewRat(1, 1), big.NewRat(27, 10)} {
		const n = 20000
		hits := 0
		for range n {
			b, err := BernoulliExp(r, g)
			if err != nil {
				t.Fatal(err)
			}
			if b {
				hits++
			}
		}
		gf, _ := g.Float64()
		p := math.Exp(-gf)
		if se := math.Sqrt(p*(1-p)/n) + 1e-9; math.Abs(float64(hits)/n-p) > 4*se {
			t.Errorf("gamma=%v: frequency %v, want %v", g, float64(hits)/n, p)
		}
	}
	if _, err := BernoulliExp(r, big.NewRat(-1, 2)); err == nil {
		t.Error("negative gamma accepted")
	}
}

// chiDiscrete returns the chi-square p-value of 20000 draws against the
// pmf proportional to w(y), cells |y| <= m (the tails pooled at the ends).
func chiDiscrete(t *testing.T, draw func() (*big.Int, error), w func(y float64) float64, m int64) float64 {
	t.Helper()
	const n = 20000
	counts := make([]int, 2*m+1)
	for range n {
		y, err := draw()
		if err != nil {
			t.Fatal(err)
		}
		v := min(max(y.Int64(), -m), m)
		counts[v+m]++
	}
	z := 0.0
	for y := -10 * m; y <= 10*m; y++ {
		z += w(float64(y))
	}
	p, _ := stattest.ChiSquare(counts, -m, func(k int64) float64 { return w(float64(k)) / z })
	return p
}

func TestDiscreteSamplers(t *testing.T) {
	r := seeded(2)
	lap := func(s *big.Rat) func() (*big.Int, error) {
		return func() (*big.Int, error) { return DiscreteLaplace(r, s) }
	}
	gau := func(s *big.Rat) func() (*big.Int, error) {
		return func() (*big.Int, error) { return DiscreteGaussian(r, s) }
	}
	for _, c := range []struct {
		name string
		draw func() (*big.Int, error)
		w    func(float64) float64
		m    int64
	}{
		{"discrete Laplace 5/2", lap(big.NewRat(5, 2)), func(y float64) float64 { return math.Exp(-math.Abs(y) / 2.5) }, 20},
		{"discrete Laplace 1/3", lap(big.NewRat(1, 3)), func(y float64) float64 { return math.Exp(-3 * math.Abs(y)) }, 5},
		{"discrete Gaussian 9/2", gau(big.NewRat(9, 2)), func(y float64) float64 { return math.Exp(-y * y / 9) }, 12},
		{"discrete Gaussian 1/5", gau(big.NewRat(1, 5)), func(y float64) float64 { return math.Exp(-y * y / 0.4) }, 4},
	} {
		if p := chiDiscrete(t, c.draw, c.w, c.m); p < 1e-3 {
			t.Errorf("%s: chi-square p=%v", c.name, p)
		}
	}
	// Power: a Gaussian of variance 4.5 is told apart from one of 3.5.
	if p := chiDiscrete(t, gau(big.NewRat(9, 2)), func(y float64) float64 { return math.Exp(-y * y / 7) }, 12); p >= 1e-3 {
		t.Errorf("chi-square did not notice a variance 3.5 instead of 4.5 (p=%v)", p)
	}
}

// TestSecureMatchesTextbook: the secure Laplace and Gaussian releases agree
// in distribution with the continuous ones (the grid is 2^-20 of the
// sensitivity) and their noise scale is inflated by (1 + L/sensitivity)
// only.
func TestSecureMatchesTextbook(t *testing.T) {
	s := Secure{Rand: seeded(3)}
	const n = 5000
	x := make([]float64, n)
	for i := range x {
		v, err := s.AddLaplace(0.3, 2, 1)
		if err != nil {
			t.Fatal(err)
		}
		x[i] = v - 0.3
	}
	lap := func(v float64) float64 {
		if v < 0 {
			return 0.5 * math.Exp(v/2)
		}
		return 1 - 0.5*math.Exp(-v/2)
	}
	if d, p := stattest.KSOne(x, lap); p < 1e-3 {
		t.Errorf("secure Laplace vs Lap(2): D=%v p=%v", d, p)
	}
	for i := range x {
		v, err := s.AddGaussian(-1.7, 0.5, 0.25)
		if err != nil {
			t.Fatal(err)
		}
		x[i] = v + 1.7
	}
	if d, p := stattest.KSOne(x, func(v float64) float64 { return 0.5 * math.Erfc(-v/(0.5*math.Sqrt2)) }); p < 1e-3 {
		t.Errorf("secure Gaussian vs N(0, 0.25): D=%v p=%v", d, p)
	}
}

// TestSecureSupport: the outputs for x and x + sensitivity lie on the same
// grid, so no output tells them apart; the textbook sampler's outputs
// from x = 0 include floats that x = 1 can never produce (Mironov 2012).
func TestSecureSupport(t *testing.T) {
	s := Secure{Rand: seeded(4)}
	l := s.grid(1)
	onGrid := func(v, step float64) bool { return math.Mod(v, step) == 0 }
	for _, x := range []float64{0.123456789, 1.123456789} {
		for range 2000 {
			v, err := s.AddLaplace(x, 0.5, 1)
			if err != nil {
				t.Fatal(err)
			}
			if !onGrid(v, l) {
				t.Fatalf("secure output %v from x=%v is off the grid %v", v, x, l)
			}
		}
	}
	f := Fast{R: Stream(5)}
	fine := func(x float64) int { // outputs not on the 2^-53 grid
		c := 0
		for range 2000 {
			v, _ := f.AddLaplace(x, 0.5, 1)
			if !onGrid(v, math.Ldexp(1, -53)) {
				c++
			}
		}
		return c
	}
	if a, b := fine(0), fine(1); a == 0 || b != 0 {
		t.Errorf("textbook sampler: %d fine outputs from x=0, %d from x=1; the attack's premise fails", a, b)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("entropy exhausted") }

func TestSecureErrors(t *testing.T) {
	s := Secure{Rand: failingReader{}}
	if _, err := s.AddLaplace(0, 1, 1); err == nil {
		t.Error("entropy failure not reported")
	}
	if _, err := s.AddGaussian(0, 1, 1); err == nil {
		t.Error("entropy failure not reported")
	}
	ok := Secure{Rand: seeded(6)}
	for _, c := range [][3]float64{{math.NaN(), 1, 1}, {0, 0, 1}, {0, 1, -1}, {1e300, 1, 1}} {
		if _, err := ok.AddLaplace(c[0], c[1], c[2]); err == nil {
			t.Errorf("AddLaplace%v accepted", c)
		}
	}
	// The default source works.
	if v, err := (Secure{}).AddGaussian(0, 1, 1); err != nil || math.IsNaN(v) {
		t.Errorf("crypto/rand: %v %v", v, err)
	}
}

// deltaDiscrete returns the exact delta at eps of the secure Gaussian with
// standard deviation sigma for sensitivity 1 on a grid of 2^-bits, at the
// largest integer shift the grid allows.
func deltaDiscrete(eps, sigma float64, bits int) float64 {
	s := Secure{Bits: bits}
	l := s.grid(1)
	_, _, sd, _ := s.units(0, sigma, 1)
	sdf, _ := sd.Float64()
	mu := math.Floor(1/l + 1)
	w := func(y float64) float64 { return math.Exp(-y * y / (2 * sdf * sdf)) }
	z := 0.0
	m := math.Ceil(40 * sdf)
	for y := -m; y <= m; y++ {
		z += w(y)
	}
	delta := 0.0
	for y := -m; y <= m+mu; y++ {
		if d := w(y)/z - math.Exp(eps)*w(y-mu)/z; d > 0 {
			delta += d
		}
	}
	return delta
}

// TestDiscreteGaussianApproxDP computes the exact (eps, delta) curve of the
// discrete Gaussian on a coarse grid (bits = 4, so the lattice can be
// summed). At the tight analytic calibration of the continuous Gaussian
// it exceeds delta, which is why the mechanism meets (eps, delta) budgets
// on discrete noise through zCDP; with sigma from that conversion
// (1/sqrt(2 rho), rho = privacy.ApproxToZCDP, here by its formula) delta
// is met.
func TestDiscreteGaussianApproxDP(t *testing.T) {
	if d := deltaDiscrete(2, analyticSigmaForTest(2, 1e-6), 4); d <= 1e-6 {
		t.Logf("the discrete Gaussian met the analytic calibration (delta %v)", d)
	}
	for _, c := range [][2]float64{{0.5, 1e-5}, {2, 1e-6}, {1, 1e-3}} {
		l := math.Log(1 / c[1])
		r := math.Sqrt(l+c[0]) - math.Sqrt(l)
		sigma := 1 / math.Sqrt(2*r*r)
		if d := deltaDiscrete(c[0], sigma, 4); d > c[1] {
			t.Errorf("eps=%v: discrete Gaussian delta %v exceeds %v", c[0], d, c[1])
		}
	}
}

// analyticSigmaForTest finds the analytic Gaussian sigma by bisection on
// the Balle-Wang formula, independently of package privacy.
func analyticSigmaForTest(eps, delta float64) float64 {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	d := func(s float64) float64 { return phi(1/(2*s)-eps*s) - math.Exp(eps)*phi(-1/(2*s)-eps*s) }
	lo, hi := 0.01, 100.0
	for range 200 {
		mid := (lo + hi) / 2
		if d(mid) <= delta {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}
