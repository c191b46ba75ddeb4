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
	for _, c := range [][3]float64{{math.NaN(), 1, 1}, {math.Inf(-1), 1, 1}, {0, 0, 1}, {0, 1, -1}, {0, math.Inf(1), 1}} {
		if _, err := ok.AddLaplace(c[0], c[1], c[2]); err == nil {
			t.Errorf("AddLaplace%v accepted", c)
		}
	}
	// The default source works.
	if v, err := (Secure{}).AddGaussian(0, 1, 1); err != nil || math.IsNaN(v) {
		t.Errorf("crypto/rand: %v %v", v, err)
	}
}

// TestSecureNoDataDependentFailure: whether a release fails never depends
// on the value released. The mean of 2^33 rewards in [0, 1] (sensitivity
// 2^-33) is released for 0.4 and 0.6 alike (0.6 / L exceeded 2^52 and
// failed before), as are means over 2^50 rewards (the largest horizon of
// the command line) and values far larger than the sensitivity; every
// output is on the grid and within a few noise scales of the input.
func TestSecureNoDataDependentFailure(t *testing.T) {
	s := Secure{Rand: seeded(9)}
	for _, c := range []struct{ x, sens float64 }{
		{0.4, 0x1p-33}, {0.6, 0x1p-33}, {1, 0x1p-33}, {0.6, 0x1p-50}, {0.999999, 0x1p-50},
		{1e300, 1e-300}, {-1e300, 1e-300}, {3e15, 0.5},
	} {
		l := s.grid(c.sens)
		for _, add := range []func(x, scale, sens float64) (float64, error){s.AddLaplace, s.AddGaussian} {
			v, err := add(c.x, 3*c.sens, c.sens)
			if err != nil {
				t.Fatalf("x=%v sensitivity=%v: %v", c.x, c.sens, err)
			}
			// On the grid (as a float, exactly where the float can say).
			if q := v / l; math.Abs(q) < 1<<53 && q != math.Trunc(q) {
				t.Errorf("x=%v: output %v off the grid %v", c.x, v, l)
			}
			if math.Abs(v-c.x) > 200*c.sens+math.Abs(c.x)*0x1p-52 {
				t.Errorf("x=%v sensitivity=%v: output %v too far", c.x, c.sens, v)
			}
		}
	}
}

// TestSecureExactSnap: a rational statistic is snapped exactly (half to
// even), not through a float: 1/3 and values just around grid midpoints.
func TestSecureExactSnap(t *testing.T) {
	s := Secure{Bits: 4}
	for _, c := range []struct {
		x    *big.Rat
		want int64
	}{
		{big.NewRat(1, 3), 5},           // 16/3 = 5.33
		{big.NewRat(11, 32), 6},         // 5.5: half to even
		{big.NewRat(13, 32), 6},         // 6.5: half to even
		{big.NewRat(13000001, 32e6), 7}, // 6.5000005
		{big.NewRat(-1, 3), -5},
	} {
		xu, k, _, err := s.units(c.x, 1, 1)
		if err != nil || k != -4 || xu.Int64() != c.want {
			t.Errorf("snap(%v) = %v (k=%d, %v), want %d", c.x, xu, k, err, c.want)
		}
	}
}

// deltaDiscrete returns the exact delta at eps of the secure Gaussian with
// standard deviation sigma for sensitivity 1 on a grid of 2^-bits, at the
// largest integer shift the grid allows.
func deltaDiscrete(eps, sigma float64, bits int) float64 {
	s := Secure{Bits: bits}
	l := s.grid(1)
	_, _, sd, _ := s.units(new(big.Rat), sigma, 1)
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

// TestSecureVectorRounding: snapping each coordinate of a d-vector moves
// neighbouring vectors (L2 distance s) apart by up to sqrt(d) L more. The
// release covers that when each coordinate is told the share s/sqrt(d) of
// the sensitivity (as package mechanism does): the scale is inflated by
// (share + L)/share, at least (s + sqrt(d) L)/s. Told the whole s, the
// inflation (s + L)/s falls short of the worst case for d > 1.
func TestSecureVectorRounding(t *testing.T) {
	s := Secure{Bits: 6}
	for _, d := range []int{1, 3, 100} {
		// Each coordinate differs by c, just above a multiple of every
		// grid step below, so that x_i rounds down by almost L/2 and
		// x'_i up by almost L/2: the worst case. sens = sqrt(d) c.
		c := 80.02 / 128
		sens := math.Sqrt(float64(d)) * c
		for _, whole := range []bool{false, true} {
			sh := sens / math.Sqrt(float64(d)) * (1 - 0x1p-50)
			if whole {
				sh = sens
			}
			l := s.grid(sh)
			x := (0.5 - 0.001) * l
			xu, _, _, _ := s.units(new(big.Rat).SetFloat64(x), 1, sh)
			yu, _, _, _ := s.units(new(big.Rat).SetFloat64(x+c), 1, sh)
			g := float64(new(big.Int).Sub(yu, xu).Int64()) * l
			gap := math.Sqrt(float64(d)) * g
			covered := sens * (sh + l) / sh
			if ok := gap <= covered; ok != (!whole || d == 1) {
				t.Errorf("d=%d whole=%v: snapped gap %v, the inflated scale covers %v", d, whole, gap, covered)
			}
		}
	}
}
