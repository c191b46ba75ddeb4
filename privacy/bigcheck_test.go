package privacy

import (
	"math"
	"math/big"
	"math/rand/v2"
	"sync"
	"testing"
)

// prec is the working precision of the reference arithmetic.
const prec = 256

func bf(x float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(x) }

func bnew() *big.Float { return new(big.Float).SetPrec(prec) }

// bigExp returns e^x: x = k ln 2 + r, |r| <= ln 2 / 2, Taylor series in r.
func bigExp(x *big.Float) *big.Float {
	xf, _ := x.Float64()
	k := math.Round(xf / math.Ln2)
	r := bnew().Sub(x, bnew().Mul(bf(k), bigLn2()))
	sum, term := bf(1), bf(1)
	for n := 1; n < 200; n++ {
		term.Mul(term, r)
		term.Quo(term, bf(float64(n)))
		sum.Add(sum, term)
		if term.Sign() == 0 || term.MantExp(nil)-sum.MantExp(nil) < -prec-8 {
			break
		}
	}
	return sum.SetMantExp(sum, int(k))
}

// atanhSeries returns atanh(y) = y + y^3/3 + ... for |y| <= 1/3.
func atanhSeries(y *big.Float) *big.Float {
	y2 := bnew().Mul(y, y)
	sum, pow := bnew().Set(y), bnew().Set(y)
	for n := 3; n < 2000; n += 2 {
		pow.Mul(pow, y2)
		term := bnew().Quo(pow, bf(float64(n)))
		sum.Add(sum, term)
		if pow.Sign() == 0 || pow.MantExp(nil)-sum.MantExp(nil) < -prec-8 {
			break
		}
	}
	return sum
}

// bigLn2 returns ln 2 = 2 atanh(1/3), computed once (never modify it).
var bigLn2 = sync.OnceValue(func() *big.Float { return bnew().Mul(bf(2), atanhSeries(bnew().Quo(bf(1), bf(3)))) })

// bigLog returns ln x for x > 0: x = m 2^k with m in [0.5, 1), and
// ln m = 2 atanh((m-1)/(m+1)).
func bigLog(x *big.Float) *big.Float {
	m := bnew()
	k := x.MantExp(m)
	y := bnew().Quo(bnew().Sub(m, bf(1)), bnew().Add(m, bf(1)))
	l := bnew().Mul(bf(2), atanhSeries(y))
	return l.Add(l, bnew().Mul(bf(float64(k)), bigLn2()))
}

// bigPhi returns the standard normal distribution function at x, for
// |x| < 9: Phi(x) = 1/2 + x phi-series, erf by its Taylor series (the
// terms grow to e^(x^2/2) before they fall, which the extra precision
// absorbs).
func bigPhi(x float64) *big.Float {
	z := new(big.Float).SetPrec(p2).SetFloat64(x)
	z2 := new(big.Float).SetPrec(p2).Mul(z, z)
	// Phi(x) = 1/2 + (1/sqrt(2 pi)) sum_n (-1)^n x^(2n+1) / (2^n n! (2n+1)).
	sum := new(big.Float).SetPrec(p2)
	term := new(big.Float).SetPrec(p2).Set(z) // (-1)^n x^(2n+1)/(2^n n!)
	t, d := new(big.Float).SetPrec(p2), new(big.Float).SetPrec(p2)
	for n := 0; n < 5000; n++ {
		sum.Add(sum, t.Quo(term, d.SetInt64(int64(2*n+1))))
		term.Mul(term, z2)
		term.Quo(term, d.SetInt64(int64(-2*(n+1))))
		if n > 10 && term.Sign() != 0 && term.MantExp(nil) < -p2-16 {
			break
		}
	}
	sum.Quo(sum, sqrtTwoPi())
	return bnew().Add(bf(0.5), sum)
}

// p2 is bigPhi's precision: its terms reach e^(x^2/2) < 2^50 before
// they fall.
const p2 = prec + 64

// sqrtTwoPi returns sqrt(2 pi) at precision p2, computed once (never
// modify it).
var sqrtTwoPi = sync.OnceValue(func() *big.Float {
	twoPi := new(big.Float).SetPrec(p2).Mul(new(big.Float).SetPrec(p2).SetFloat64(2), bigPi(p2))
	return twoPi.Sqrt(twoPi)
})

// bigPi returns pi by Machin's formula, pi = 16 atan(1/5) - 4 atan(1/239).
func bigPi(p uint) *big.Float {
	atan := func(inv int64) *big.Float {
		x := new(big.Float).SetPrec(p).Quo(new(big.Float).SetPrec(p).SetInt64(1), new(big.Float).SetPrec(p).SetInt64(inv))
		x2 := new(big.Float).SetPrec(p).Mul(x, x)
		sum, pow := new(big.Float).SetPrec(p).Set(x), new(big.Float).SetPrec(p).Set(x)
		for n := int64(3); n < 10000; n += 2 {
			pow.Mul(pow, x2).Neg(pow)
			sum.Add(sum, new(big.Float).SetPrec(p).Quo(pow, new(big.Float).SetPrec(p).SetInt64(n)))
			if pow.MantExp(nil) < -int(p)-8 {
				break
			}
		}
		return sum
	}
	a := new(big.Float).SetPrec(p).Mul(new(big.Float).SetPrec(p).SetInt64(16), atan(5))
	return a.Sub(a, new(big.Float).SetPrec(p).Mul(new(big.Float).SetPrec(p).SetInt64(4), atan(239)))
}

// bigDelta is AnalyticGaussianDelta in 256-bit arithmetic.
func bigDelta(eps, sigma float64) *big.Float {
	a := bnew().Quo(bf(1), bnew().Mul(bf(2), bf(sigma)))
	b := bnew().Mul(bf(eps), bf(sigma))
	x1, _ := bnew().Sub(a, b).Float64()
	x2, _ := bnew().Neg(bnew().Add(a, b)).Float64()
	// x1 and x2 are rounded to float64 here; the difference is the
	// rounding of the two arguments, bounded below by widening them
	// outward: Phi(x1 up) - e^eps Phi(x2 down) is an upper bound.
	d := bnew().Sub(bigPhi(math.Nextafter(x1, math.Inf(1))), bnew().Mul(bigExp(bf(eps)), bigPhi(math.Nextafter(x2, math.Inf(-1)))))
	return d
}

func logUniform(r *rand.Rand, lo, hi float64) float64 {
	return math.Exp(math.Log(lo) + r.Float64()*(math.Log(hi)-math.Log(lo)))
}

// TestSafeRounding checks, on 10^4 random inputs, that every conversion
// and calibration lies on the safe side of its exact value computed in
// 256-bit arithmetic: converted budgets and noise scales are never
// smaller (rho from ApproxToZCDP never larger).
func TestSafeRounding(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	const n = 10000
	for range n {
		eps := logUniform(r, 1e-4, 50)
		rho := logUniform(r, 1e-8, 1e4)
		delta := logUniform(r, 1e-15, 0.5)
		alpha := 1 + logUniform(r, 1e-3, 1e3)
		s := logUniform(r, 1e-6, 1e6)

		if got := PureToZCDP(eps); bf(got).Cmp(bnew().Quo(bnew().Mul(bf(eps), bf(eps)), bf(2))) < 0 {
			t.Fatalf("PureToZCDP(%v) = %v below exact", eps, got)
		}
		exactApprox := func(rho float64) *big.Float {
			l := bigLog(bnew().Quo(bf(1), bf(delta)))
			return bnew().Add(bf(rho), bnew().Mul(bf(2), bnew().Sqrt(bnew().Mul(bf(rho), l))))
		}
		if got, _ := ZCDPToApprox(rho, delta); bf(got).Cmp(exactApprox(rho)) < 0 {
			t.Fatalf("ZCDPToApprox(%v, %v) = %v below exact", rho, delta, got)
		}
		if got, err := ApproxToZCDP(eps, delta); err != nil || exactApprox(got).Cmp(bf(eps)) > 0 {
			t.Fatalf("ApproxToZCDP(%v, %v) = %v, %v: converts above eps", eps, delta, got, err)
		}
		exactRenyi := bnew().Add(bf(eps), bnew().Quo(bigLog(bnew().Quo(bf(1), bf(delta))), bnew().Sub(bf(alpha), bf(1))))
		if got, _ := RenyiToApprox(alpha, eps, delta); bf(got).Cmp(exactRenyi) < 0 {
			t.Fatalf("RenyiToApprox(%v, %v, %v) = %v below exact", alpha, eps, delta, got)
		}
		z, _ := NewZCDP(rho)
		// Gaussian: sigma^2 >= s^2/(2 rho).
		if sg, _ := GaussianSigma(z, s); bnew().Mul(bf(sg), bf(sg)).Cmp(bnew().Quo(bnew().Mul(bf(s), bf(s)), bf(2*rho))) < 0 {
			if bnew().Mul(bnew().Mul(bf(sg), bf(sg)), bf(2)).Cmp(bnew().Quo(bnew().Mul(bf(s), bf(s)), bf(rho))) < 0 {
				t.Fatalf("GaussianSigma(rho=%v, %v) = %v below exact", rho, s, sg)
			}
		}
		ren, _ := NewRenyi(alpha, eps)
		if f, _ := GaussianFactor(ren); bf(f).Cmp(bnew().Quo(bf(alpha), bnew().Mul(bf(2), bf(eps)))) < 0 {
			t.Fatalf("Renyi factor %v below alpha/(2 eps)", f)
		}
		// Laplace under zCDP: (s/scale)^2/2 <= rho, and under eps-DP scale >= s/eps.
		if sc, _ := LaplaceScale(z, s); bnew().Quo(bnew().Mul(bf(s), bf(s)), bnew().Mul(bf(2), bnew().Mul(bf(sc), bf(sc)))).Cmp(bf(rho)) > 0 {
			t.Fatalf("LaplaceScale(rho=%v, %v) = %v spends more than rho", rho, s, sc)
		}
		p, _ := NewPure(eps)
		if sc, _ := LaplaceScale(p, s); bf(sc).Cmp(bnew().Quo(bf(s), bf(eps))) < 0 {
			t.Fatalf("LaplaceScale(eps=%v, %v) = %v below s/eps", eps, s, sc)
		}
	}
}

// TestSafeRoundingAnalyticGaussian: on 10^4 random (eps, delta), the
// exact delta of the analytic Gaussian at the returned sigma, in 256-bit
// arithmetic, is at most the target (deltas down to 1e-12 and eps up to
// 20 keep the normal arguments within the reference's range).
func TestSafeRoundingAnalyticGaussian(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	const n = 10000
	for range n {
		eps := logUniform(r, 1e-2, 20)
		delta := logUniform(r, 1e-12, 0.1)
		b, _ := NewApprox(eps, delta)
		sigma, err := GaussianSigma(b, 1)
		if err != nil {
			t.Fatal(err)
		}
		if d := bigDelta(eps, sigma); d.Cmp(bf(delta)) > 0 {
			t.Fatalf("analytic Gaussian eps=%v delta=%v: sigma %v gives exact delta %v", eps, delta, sigma, d)
		}
	}
}

// TestBigReference checks the reference arithmetic itself against known
// values, so that TestSafeRounding compares with the truth.
func TestBigReference(t *testing.T) {
	if v, _ := bigExp(bf(1)).Float64(); v != math.E {
		t.Errorf("e = %v", v)
	}
	if v, _ := bigLog(bf(10)).Float64(); v != math.Ln10 {
		t.Errorf("ln 10 = %v", v)
	}
	if v, _ := bigPi(prec).Float64(); v != math.Pi {
		t.Errorf("pi = %v", v)
	}
	for _, x := range []float64{-8, -3, -0.5, 0, 1, 4} {
		got, _ := bigPhi(x).Float64()
		if want := normalCDF(x); math.Abs(got-want) > 1e-13*want { // math.Erfc is within a few ulps
			t.Errorf("Phi(%v) = %v, want %v", x, got, want)
		}
	}
	// The reference would catch a sigma 1% too small.
	b, _ := NewApprox(1, 1e-6)
	s, _ := GaussianSigma(b, 1)
	if bigDelta(1, s*0.99).Cmp(bf(1e-6)) <= 0 {
		t.Error("the reference does not see a sigma 1% too small")
	}
}
