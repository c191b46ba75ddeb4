package privacy

import (
	"errors"
	"math"
	"testing"
)

// TestThompsonRhoClosedForm: the accounting D/(2 c (max(b,1)+1)),
// D = T - max(K b, 1), on values worked by hand: a wrong constant (b
// for b+1, T for T - K b, a lost factor 2, b = 0 counted as b = 1)
// changes each of them.
func TestThompsonRhoClosedForm(t *testing.T) {
	for _, tc := range []struct {
		T    int64
		k    int
		b    int64
		c    float64
		want float64
	}{
		{1000, 2, 10, 1, 980.0 / 22},   // D = 1000 - 20, 2 c (b+1) = 22
		{1000, 2, 10, 4, 980.0 / 88},   // c divides
		{1000, 2, 0, 1, 999.0 / 4},     // no pre-pulls: every step but the first, k >= 1
		{1000, 2, 1, 1, 998.0 / 4},     // one pre-pull each
		{1000, 5, 100, 3, 500.0 / 606}, // D = 1000 - 500
		{1000, 5, 200, 1, 0},           // all pre-pulls: no draw
		{1000, 5, 1 << 62, 1, 0},       // K b overflows: no draw
	} {
		got, err := ThompsonRho(tc.T, tc.k, tc.b, tc.c)
		if err != nil || !near(got, tc.want, 1e-12) {
			t.Errorf("ThompsonRho(T=%d, K=%d, b=%d, c=%v) = %v, %v; want %v", tc.T, tc.k, tc.b, tc.c, got, err, tc.want)
		}
	}
}

// TestThompsonFactorMeetsRho: the calibrated c meets rho, the next
// smaller float64 (and a variance smaller by a relative 1e-9) does not,
// and c is D/(2 rho (max(b,1)+1)) (or 1 when that is below 1).
func TestThompsonFactorMeetsRho(t *testing.T) {
	if c, err := ThompsonFactor(0.5, 1000, 2, 10); err != nil || !near(c, 980.0/11, 1e-12) {
		t.Errorf("ThompsonFactor(0.5, 1000, 2, 10) = %v, %v; want 980/11", c, err)
	}
	for _, rho := range []float64{1e-4, 0.01, 0.1, 0.5, 3, 100} {
		for _, T := range []int64{10, 1000, 1 << 20, 1 << 40} {
			for _, k := range []int{2, 5, 10} {
				for _, b := range []int64{0, 1, 7, 1000} {
					c, err := ThompsonFactor(rho, T, k, b)
					if err != nil {
						t.Fatal(err)
					}
					got, _ := ThompsonRho(T, k, b, c)
					if got > rho {
						t.Errorf("rho=%v T=%d K=%d b=%d: c=%v spends %v", rho, T, k, b, c, got)
					}
					d := float64(max(T-max(int64(k)*b, 1), 0))
					want := max(d/(2*rho*float64(max(b, 1)+1)), 1)
					if !near(c, want, 1e-12) {
						t.Errorf("rho=%v T=%d K=%d b=%d: c=%v, want %v", rho, T, k, b, c, want)
					}
					if c == 1 {
						continue
					}
					for _, smaller := range []float64{math.Nextafter(c, 0), c * (1 - 1e-9)} {
						if r, _ := ThompsonRho(T, k, b, smaller); r <= rho {
							t.Errorf("rho=%v T=%d K=%d b=%d: the smaller factor %v meets rho too (%v)", rho, T, k, b, smaller, r)
						}
					}
				}
			}
		}
	}
}

// TestThompsonPrepullsMinimises: the chosen b minimises b + 2 c(b) ln T
// over every b in [1, (T-1)/K], c(b) from the closed form, found here by
// exhaustive search.
func TestThompsonPrepullsMinimises(t *testing.T) {
	for _, tc := range []struct {
		rho float64
		T   int64
		k   int
	}{{0.5, 10000, 2}, {0.1, 4096, 10}, {1, 100000, 5}, {0.01, 100000, 5}, {100, 1000, 3}, {0.1, 50, 10}} {
		b, err := ThompsonPrepulls(tc.rho, tc.T, tc.k)
		if err != nil {
			t.Fatal(err)
		}
		lnT := math.Log(float64(tc.T))
		f := func(b int64) float64 {
			d := float64(tc.T - int64(tc.k)*b)
			return float64(b) + 2*max(d/(2*tc.rho*float64(b+1)), 1)*lnT
		}
		best := math.Inf(1)
		for x := int64(1); x <= (tc.T-1)/int64(tc.k); x++ {
			best = min(best, f(x))
		}
		if b < 1 || b > (tc.T-1)/int64(tc.k) || f(b) > best*(1+1e-9) {
			t.Errorf("rho=%v T=%d K=%d: b=%d with f=%v, the minimum is %v", tc.rho, tc.T, tc.k, b, f(b), best)
		}
	}
	if b, err := ThompsonPrepulls(0.1, 10, 10); err != nil || b != 0 {
		t.Errorf("T = K: b = %d, %v; want 0 (no room for a pre-pull and a draw)", b, err)
	}
}

// TestThompsonDrawBudget: one draw at count k under factor c is
// 1/(2 c (k+1))-zCDP, rounded down, so that the Gaussian mechanism at
// sensitivity 1/(k+1) draws with standard deviation at least
// sqrt(c/(k+1)).
func TestThompsonDrawBudget(t *testing.T) {
	for _, c := range []float64{1, 2.5, 89.0909} {
		for _, k := range []int64{0, 1, 9, 1000} {
			b, err := ThompsonDraw(c, k)
			if err != nil {
				t.Fatal(err)
			}
			want := 1 / (2 * c * float64(k+1))
			if b.Notion != ZCDP || b.Rho > want || !near(b.Rho, want, 1e-12) {
				t.Errorf("c=%v k=%d: %+v, want rho %v rounded down", c, k, b, want)
			}
			sigma, _ := GaussianSigma(b, 1/float64(k+1))
			if s := math.Sqrt(c / float64(k+1)); sigma < s || !near(sigma, s, 1e-12) {
				t.Errorf("c=%v k=%d: sigma %v, want sqrt(c/(k+1)) = %v rounded up", c, k, sigma, s)
			}
		}
	}
}

// TestThompsonErrors: parameters outside their domain are typed errors.
func TestThompsonErrors(t *testing.T) {
	if _, err := ThompsonRho(0, 2, 1, 1); !errors.Is(err, ErrThompson) {
		t.Errorf("T = 0: %v", err)
	}
	if _, err := ThompsonRho(10, 2, -1, 1); !errors.Is(err, ErrThompson) {
		t.Errorf("b = -1: %v", err)
	}
	for _, c := range []float64{0.5, math.NaN(), math.Inf(1)} {
		if _, err := ThompsonRho(10, 2, 1, c); !errors.Is(err, ErrThompson) {
			t.Errorf("c = %v: %v", c, err)
		}
		if _, err := ThompsonDraw(c, 1); !errors.Is(err, ErrThompson) {
			t.Errorf("draw at c = %v: %v", c, err)
		}
	}
	var pe *ParamError
	if _, err := ThompsonFactor(math.NaN(), 10, 2, 1); !errors.As(err, &pe) {
		t.Errorf("rho = NaN: %v", err)
	}
	if _, err := ThompsonFactor(1e-320, 1<<40, 2, 0); !errors.Is(err, ErrThompson) {
		t.Errorf("a factor beyond float64: %v", err)
	}
}

// TestComposedRho: the rho a composition of Gaussian mechanisms must meet
// for each notion.
func TestComposedRho(t *testing.T) {
	z, _ := NewZCDP(0.3)
	a, _ := NewApprox(1, 1e-6)
	r, _ := NewRenyi(4, 2)
	p, _ := NewPure(1)
	if rho, err := ComposedRho(z); err != nil || rho != 0.3 {
		t.Errorf("zCDP: %v, %v", rho, err)
	}
	want, _ := ApproxToZCDP(1, 1e-6)
	if rho, err := ComposedRho(a); err != nil || rho != want {
		t.Errorf("(eps, delta): %v, %v; want %v", rho, err, want)
	}
	if rho, err := ComposedRho(r); err != nil || rho > 0.5 || !near(rho, 0.5, 1e-12) {
		t.Errorf("Renyi (4, 2): %v, %v; want 2/4 rounded down", rho, err)
	}
	if _, err := ComposedRho(p); err == nil {
		t.Error("pure eps-DP accepted")
	}
	if _, err := ComposedRho(None()); !errors.Is(err, ErrNotPrivate) {
		t.Errorf("none: %v", err)
	}
}
