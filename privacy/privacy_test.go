package privacy

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
)

func near(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b)) }

func TestValidateNamesBadValue(t *testing.T) {
	cases := []struct {
		b    Budget
		want string
	}{
		{Budget{Notion: ZCDP, Rho: 0}, "rho"},
		{Budget{Notion: ZCDP, Rho: math.NaN()}, "rho"},
		{Budget{Notion: ZCDP, Rho: math.Inf(1)}, "rho"},
		{Budget{Notion: Pure, Eps: -1}, "eps"},
		{Budget{Notion: Approx, Eps: 1, Delta: 1}, "delta"},
		{Budget{Notion: Approx, Eps: 1, Delta: 0}, "delta"},
		{Budget{Notion: Approx, Eps: 1, Delta: math.NaN()}, "delta"},
		{Budget{Notion: Renyi, Alpha: 1, Eps: 1}, "alpha"},
		{Budget{Notion: Renyi, Alpha: 2, Eps: 0}, "eps"},
		{Budget{Notion: "bogus"}, "notion"},
	}
	for _, c := range cases {
		err := c.b.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want an error naming %q", c.b, err, c.want)
		}
	}
	for _, ok := range []Budget{None(), {Notion: Pure, Eps: 1}, {Notion: ZCDP, Rho: 1e-9}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", ok, err)
		}
	}
}

func TestGaussianFactorTheorem18(t *testing.T) {
	z, _ := NewZCDP(0.25)
	if f, _ := GaussianFactor(z); !near(f, 2, 1e-13) {
		t.Errorf("zCDP factor = %v, want 1/(2 rho) = 2", f)
	}
	r, _ := NewRenyi(3, 0.5)
	if f, _ := GaussianFactor(r); !near(f, 3, 1e-13) {
		t.Errorf("RDP factor = %v, want alpha/(2 eps) = 3", f)
	}
	// (eps,delta): the analytic Gaussian, below the classical factor
	// 2 ln(1.25/delta)/eps^2 where that one holds (eps < 1).
	a, _ := NewApprox(0.5, 1e-5)
	if f, _ := GaussianFactor(a); f >= 2*math.Log(1.25e5)/0.25 || AnalyticGaussianDelta(0.5, math.Sqrt(f)) > 1e-5 {
		t.Errorf("(eps,delta) factor = %v, classical %v", f, 2*math.Log(1.25e5)/0.25)
	}
	p, _ := NewPure(1)
	if _, err := GaussianFactor(p); err == nil {
		t.Error("Gaussian calibration to pure DP must fail")
	}
	if _, err := GaussianFactor(None()); err == nil {
		t.Error("Gaussian calibration of a non-private budget must fail")
	}
	if s, _ := GaussianSigma(z, 3); !near(s, 3*math.Sqrt2, 1e-13) || s < 3*math.Sqrt2 {
		t.Errorf("sigma = %v, want sqrt(2)*3 rounded up", s)
	}
	if _, err := GaussianSigma(z, 0); err == nil || !strings.Contains(err.Error(), "sensitivity") {
		t.Errorf("zero sensitivity: err = %v", err)
	}
}

// hockeyStick integrates max(0, p(x) - e^eps q(x)) for p = N(0, s^2) and
// q = N(1, s^2) numerically: the exact delta of the Gaussian mechanism.
func hockeyStick(eps, s float64) float64 {
	const n = 400000
	lo, hi := -12*s-1, 12*s+2
	h := (hi - lo) / n
	var sum float64
	for i := 0; i <= n; i++ {
		x := lo + float64(i)*h
		p := math.Exp(-x*x/(2*s*s)) / (s * math.Sqrt(2*math.Pi))
		q := math.Exp(-(x-1)*(x-1)/(2*s*s)) / (s * math.Sqrt(2*math.Pi))
		if d := p - math.Exp(eps)*q; d > 0 {
			sum += d * h
		}
	}
	return sum
}

func TestAnalyticGaussian(t *testing.T) {
	for _, c := range []struct{ eps, s float64 }{{1, 1}, {1, 3}, {2, 0.7}, {0.5, 2}} {
		got, want := AnalyticGaussianDelta(c.eps, c.s), hockeyStick(c.eps, c.s)
		if math.Abs(got-want) > 1e-6 {
			t.Errorf("delta(eps=%v, sigma=%v) = %v, numerical hockey stick %v", c.eps, c.s, got, want)
		}
	}
	for _, c := range []struct{ eps, delta float64 }{{1, 1e-5}, {3, 1e-6}, {8, 1e-9}} {
		b, _ := NewApprox(c.eps, c.delta)
		f, err := GaussianFactor(b)
		if err != nil {
			t.Fatal(err)
		}
		s := math.Sqrt(f)
		if AnalyticGaussianDelta(c.eps, s) > c.delta {
			t.Errorf("eps=%v: sigma=%v does not reach delta=%v", c.eps, s, c.delta)
		}
		if AnalyticGaussianDelta(c.eps, s*(1-1e-6)) <= c.delta {
			t.Errorf("eps=%v: sigma=%v is not the smallest", c.eps, s)
		}
	}
}

// TestGaussianSigmaMonotone: sigma falls as eps grows, through eps = 1
// (the classical formula below 1 and the analytic one above made it jump
// from 4.85 to 3.73 at delta = 1e-5).
func TestGaussianSigmaMonotone(t *testing.T) {
	for _, delta := range []float64{1e-3, 1e-5, 1e-9} {
		prev := math.Inf(1)
		for e := 0.05; e <= 20; e *= 1.01 {
			b, _ := NewApprox(e, delta)
			s, err := GaussianSigma(b, 1)
			if err != nil {
				t.Fatal(err)
			}
			if s >= prev {
				t.Fatalf("delta=%v: sigma(%v) = %v >= sigma at the smaller eps %v", delta, e, s, prev)
			}
			prev = s
		}
		b1, _ := NewApprox(math.Nextafter(1, 0), delta)
		b2, _ := NewApprox(1, delta)
		s1, _ := GaussianSigma(b1, 1)
		s2, _ := GaussianSigma(b2, 1)
		if s1 < s2 || s1-s2 > 1e-6 {
			t.Errorf("delta=%v: sigma jumps at eps = 1: %v -> %v", delta, s1, s2)
		}
	}
}

func TestConversions(t *testing.T) {
	if rho := PureToZCDP(0.2); rho < 0.02 || !near(rho, 0.02, 1e-13) {
		t.Errorf("PureToZCDP(0.2) = %v", rho)
	}
	eps, err := ZCDPToApprox(0.5, 1e-6)
	want := 0.5 + 2*math.Sqrt(0.5*math.Log(1e6))
	if err != nil || eps < want || !near(eps, want, 1e-13) {
		t.Errorf("ZCDPToApprox = %v, %v; want %v", eps, err, want)
	}
	if _, err := ZCDPToApprox(0.5, 2); err == nil {
		t.Error("delta=2 accepted")
	}
	eps, _ = RenyiToApprox(5, 1, 1e-5)
	if !near(eps, 1+math.Log(1e5)/4, 1e-13) {
		t.Errorf("RenyiToApprox = %v", eps)
	}
	a, _ := NewApprox(1, 1e-5)
	if _, err := a.ToApprox(1e-6); err == nil {
		t.Error("an (1,1e-5) budget claimed at delta=1e-6")
	}
	p, _ := NewPure(0.3)
	if rho, _ := p.ToZCDP(); !near(rho, 0.045, 1e-13) {
		t.Errorf("ToZCDP = %v", rho)
	}
	if _, err := a.ToZCDP(); err == nil {
		t.Error("approximate budget converted to zCDP")
	}
}

func TestApproxToZCDP(t *testing.T) {
	for _, c := range [][2]float64{{1, 1e-5}, {0.1, 1e-6}, {8, 1e-9}} {
		rho, err := ApproxToZCDP(c[0], c[1])
		if err != nil {
			t.Fatal(err)
		}
		e, _ := ZCDPToApprox(rho, c[1])
		e2, _ := ZCDPToApprox(rho*(1+1e-9), c[1])
		if e > c[0] || e2 <= c[0]*(1-1e-6) {
			t.Errorf("eps=%v delta=%v: rho=%v converts to %v", c[0], c[1], rho, e)
		}
	}
	if _, err := ApproxToZCDP(1, 2); err == nil {
		t.Error("delta=2 accepted")
	}
}

func TestLaplaceScale(t *testing.T) {
	p, _ := NewPure(0.5)
	if s, _ := LaplaceScale(p, 2); !near(s, 4, 1e-13) {
		t.Errorf("scale = %v, want 4", s)
	}
	z, _ := NewZCDP(0.5) // eps = 1
	s, _ := LaplaceScale(z, 1)
	if !near(s, 1, 1e-12) || 1/(s*s)/2 > 0.5 {
		t.Errorf("zCDP Laplace scale = %v exceeds the budget", s)
	}
	r, _ := NewRenyi(2, 1)
	if _, err := LaplaceScale(r, 1); err == nil {
		t.Error("Renyi Laplace accepted")
	}
	if _, err := LaplaceScale(p, math.NaN()); err == nil {
		t.Error("NaN sensitivity accepted")
	}
}

func TestString(t *testing.T) {
	a, _ := NewApprox(1, 1e-6)
	z, _ := NewZCDP(0.1)
	if a.String() != "eps=1,delta=1e-06" || z.String() != "rho=0.1" || None().String() != "non-private" {
		t.Errorf("got %q %q %q", a, z, None())
	}
}

// TestAnalyticGaussianLargeEps: the analytic Gaussian's delta stays
// finite and its sigma minimal at eps where e^eps overflows (Mills'
// ratio branch): sigma reaches delta, 1 - 1e-6 of it does not, and sigma
// keeps falling with eps up to 10^8 (it stopped at 1 above eps = 709).
// The Mills ratio agrees with Phi(-x)/phi(x) computed directly where both
// are representable (x = 30 ... 37), to 1e-12.
func TestAnalyticGaussianLargeEps(t *testing.T) {
	for x := 30.0; x <= 37; x += 0.5 {
		direct := normalCDF(-x) / (math.Exp(-x*x/2) / math.Sqrt(2*math.Pi))
		if got := millsRatio(x); math.Abs(got-direct) > 1e-12*direct {
			t.Errorf("Mills ratio at %v: %v, directly %v", x, got, direct)
		}
	}
	for _, delta := range []float64{1e-5, 1e-9} {
		prev := math.Inf(1)
		for e := 20.0; e <= 1e8; e *= 1.5 {
			b, _ := NewApprox(e, delta)
			f, err := GaussianFactor(b)
			if err != nil {
				t.Fatal(err)
			}
			s := math.Sqrt(f)
			if !(s < prev) {
				t.Fatalf("delta=%v: sigma(%v) = %v, not below %v at the smaller eps", delta, e, s, prev)
			}
			prev = s
			if d := AnalyticGaussianDelta(e, s); !(d <= delta) {
				t.Fatalf("eps=%v: sigma=%v gives delta %v > %v", e, s, d, delta)
			}
			if AnalyticGaussianDelta(e, s*(1-1e-6)) <= delta {
				t.Fatalf("eps=%v: sigma=%v is not the smallest", e, s)
			}
		}
	}
}

// TestPerClientRounding: the per-client guarantee stated is never below
// the composition of the reports: r Eps <= Client, whichever side was
// given, and r = 1 states no separate client guarantee.
func TestPerClientRounding(t *testing.T) {
	for _, eps := range []float64{0.1, 1, 3, 1e-3, 7.3} {
		for _, r := range []int64{1, 2, 3, 7, 63} {
			b := Budget{Notion: LDP, Eps: eps}
			c, err := PerClient(b, r)
			if err != nil {
				t.Fatal(err)
			}
			p, err := PerReport(b, r)
			if err != nil {
				t.Fatal(err)
			}
			if r == 1 {
				if c.Client != 0 || p.Client != 0 || p.Eps != eps {
					t.Errorf("r = 1: %+v, %+v", c, p)
				}
				continue
			}
			if float64(r)*c.Eps > c.Client || float64(r)*p.Eps > p.Client || p.Client != eps || c.Eps != eps {
				t.Errorf("eps %v, r %d: per client %+v, per report %+v", eps, r, c, p)
			}
		}
	}
	if _, err := PerClient(Budget{Notion: Pure, Eps: 1}, 2); err == nil {
		t.Error("a central budget given a per-client guarantee")
	}
	if err := (Budget{Notion: LDP, Eps: 2, Client: 1}).Validate(); err == nil {
		t.Error("a client guarantee below the per-report eps accepted")
	}
}

// TestPerClientExact: the rounding is to the nearest float64 on the safe
// side, checked in exact rational arithmetic.
func TestPerClientExact(t *testing.T) {
	for _, eps := range []float64{0.1, 1, 1.0 / 3, 7.3, 0.7} {
		for _, r := range []int64{2, 3, 7, 63} {
			c, _ := PerClient(Budget{Notion: LDP, Eps: eps}, r)
			p, _ := PerReport(Budget{Notion: LDP, Eps: eps}, r)
			exact := new(big.Rat).Mul(new(big.Rat).SetFloat64(eps), big.NewRat(r, 1))
			if new(big.Rat).SetFloat64(c.Client).Cmp(exact) < 0 || new(big.Rat).SetFloat64(math.Nextafter(c.Client, 0)).Cmp(exact) >= 0 {
				t.Errorf("eps %v, r %d: client %v is not r eps rounded up", eps, r, c.Client)
			}
			prod := new(big.Rat).Mul(new(big.Rat).SetFloat64(p.Eps), big.NewRat(r, 1))
			next := new(big.Rat).Mul(new(big.Rat).SetFloat64(math.Nextafter(p.Eps, math.Inf(1))), big.NewRat(r, 1))
			if prod.Cmp(new(big.Rat).SetFloat64(eps)) > 0 || next.Cmp(new(big.Rat).SetFloat64(eps)) <= 0 {
				t.Errorf("eps %v, r %d: per report %v is not eps/r rounded down", eps, r, p.Eps)
			}
		}
	}
}

// Split's parts compose (k times, exactly, in rational arithmetic) to no
// more than the budget, and lose at most one ulp per field; a
// non-private, local or malformed budget, or k < 1, is an error.
func TestSplit(t *testing.T) {
	pure, _ := NewPure(0.3)
	approx, _ := NewApprox(1.1, 1e-5)
	zcdp, _ := NewZCDP(0.1)
	renyi, _ := NewRenyi(4, 0.7)
	fields := func(b Budget) []float64 { return []float64{b.Eps, b.Delta, b.Rho} }
	for _, b := range []Budget{pure, approx, zcdp, renyi} {
		for _, k := range []int{1, 2, 3, 7, 10} {
			p, err := Split(b, k)
			if err != nil {
				t.Fatalf("%s / %d: %v", b, k, err)
			}
			if p.Notion != b.Notion || p.Alpha != b.Alpha {
				t.Fatalf("%s / %d = %s: another notion or order", b, k, p)
			}
			for i, f := range fields(p) {
				whole := fields(b)[i]
				sum := new(big.Rat).Mul(new(big.Rat).SetFloat64(f), big.NewRat(int64(k), 1))
				if sum.Cmp(new(big.Rat).SetFloat64(whole)) > 0 {
					t.Errorf("%s / %d: %d parts of %v exceed %v", b, k, k, f, whole)
				}
				if f < whole/float64(k)*(1-0x1p-52) {
					t.Errorf("%s / %d: part %v, want about %v", b, k, f, whole/float64(k))
				}
			}
		}
	}
	for _, c := range []struct {
		b Budget
		k int
	}{{None(), 2}, {Budget{Notion: LDP, Eps: 1}, 2}, {zcdp, 0}, {Budget{Notion: ZCDP, Rho: -1}, 2}} {
		if _, err := Split(c.b, c.k); err == nil {
			t.Errorf("Split(%v, %d): no error", c.b, c.k)
		}
	}
}

// TestScaleOverflowRefused: a valid but tiny budget (rho = 1e-320, a
// subnormal, for Gaussian noise) or a huge sensitivity whose noise scale
// overflows float64 is an error (ErrScaleRange), not a scale of +Inf that
// releases -Inf.
func TestScaleOverflowRefused(t *testing.T) {
	tiny, err := NewZCDP(1e-320)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := GaussianSigma(tiny, 1); !errors.Is(err, ErrScaleRange) {
		t.Errorf("sigma %v, %v", s, err)
	}
	if s, err := LaplaceScale(tiny, 1); err != nil || s < 7e159 {
		t.Errorf("Laplace scale at rho = 1e-320 (eps = sqrt(2 rho) = 1.4e-160): %v, %v", s, err)
	}
	pure, _ := NewPure(1e-10)
	if s, err := LaplaceScale(pure, 1e300); !errors.Is(err, ErrScaleRange) {
		t.Errorf("Laplace scale %v, %v", s, err)
	}
	if s, err := GaussianSigma(tiny, 0); err == nil || errors.Is(err, ErrScaleRange) {
		t.Errorf("sensitivity 0: %v, %v", s, err)
	}
	// Underflow: a scale of 0 would add no noise (found by a reviewer).
	huge, _ := NewZCDP(1e300)
	if s, err := GaussianSigma(huge, 1e-300); !errors.Is(err, ErrScaleRange) || !errors.As(err, new(*ParamError)) {
		t.Errorf("sigma %v at rho = 1e300, l2 = 1e-300: %v", s, err)
	}
	var pe *ParamError
	if _, err := GaussianSigma(tiny, 1); !errors.As(err, &pe) || pe.Param != "rho" {
		t.Errorf("the overflow's parameter: %v", err)
	}
}
