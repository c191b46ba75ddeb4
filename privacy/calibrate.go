package privacy

import (
	"math"
)

// GaussianFactor returns the factor b of the Gaussian mechanism: adding
// N(0, b s^2 I) to a statistic of L2 sensitivity s satisfies the budget.
// The zCDP and Renyi factors are those of Theorem 18 of Azize and Basu,
// "Concentrated Differential Privacy for Bandits" (seed 001):
//
//	rho-zCDP:        b = 1/(2 rho)
//	(alpha,eps)-RDP: b = alpha/(2 eps)
//	(eps,delta)-DP:  b = sigma(eps, delta)^2, the analytic Gaussian
//
// For (eps,delta)-DP, Theorem 18 gives the classical 2 ln(1.25/delta)/eps^2,
// proved only for eps < 1; b is instead the square of the smallest sigma
// of the analytic Gaussian mechanism (Balle and Wang 2018, Theorem 8),
// which is exact for every eps, never above the classical factor, and
// decreasing in eps (the classical formula below eps = 1 and the analytic
// one above it made sigma jump up at eps = 1). sigma is found by bisection
// and rounded up. Pure eps-DP cannot be reached with Gaussian noise and
// returns an error.
func GaussianFactor(b Budget) (float64, error) {
	if err := b.Validate(); err != nil {
		return 0, err
	}
	switch b.Notion {
	case ZCDP:
		return up(1 / (2 * b.Rho)), nil
	case Renyi:
		return up(b.Alpha / (2 * b.Eps)), nil
	case Approx:
		s := analyticGaussianSigma(b.Eps, b.Delta)
		return up(s * s), nil
	case Pure, LDP:
		return 0, errorf("the Gaussian mechanism cannot give pure eps-DP (eps=%v); use a Laplace mechanism or a zCDP budget", b.Eps)
	}
	return 0, ErrNotPrivate
}

// GaussianSigma returns the standard deviation of the Gaussian noise that
// makes a statistic of L2 sensitivity l2 satisfy the budget:
// sigma = sqrt(GaussianFactor(b)) * l2, rounded up. A mechanism that
// releases at many sensitivities calibrates once (CalibrateGaussian).
func GaussianSigma(b Budget, l2 float64) (float64, error) {
	c, err := CalibrateGaussian(b)
	return c.scaleOr(err, l2)
}

// Calibration is a budget's calibration of the Gaussian or the Laplace
// mechanism, computed once (for an (eps,delta) budget, the analytic
// Gaussian's bisection): the noise scale at each sensitivity is then one
// multiplication or division, rounded up, the bits GaussianSigma and
// LaplaceScale compute.
type Calibration struct {
	b Budget
	// root is sqrt(GaussianFactor(b)) for the Gaussian mechanism; eps,
	// for the Laplace mechanism (root 0), is the eps of Local(b).
	root, eps float64
}

// CalibrateGaussian returns the budget's Gaussian calibration; its errors
// are GaussianFactor's.
func CalibrateGaussian(b Budget) (Calibration, error) {
	f, err := GaussianFactor(b)
	return Calibration{b: b, root: math.Sqrt(f)}, err
}

// Scale returns the noise scale for a statistic of sensitivity s: the
// Gaussian standard deviation sqrt(GaussianFactor(b)) s for an L2
// sensitivity, or the Laplace scale s/eps for an L1 one, rounded up.
func (c Calibration) Scale(s float64) (float64, error) {
	if err := positive("sensitivity", s); err != nil {
		return 0, err
	}
	x := c.root * s
	if c.root == 0 {
		x = s / c.eps
	}
	return finiteScale(up(x), c.b, s)
}

// scaleOr is Scale(s), or err, the error of making c.
func (c Calibration) scaleOr(err error, s float64) (float64, error) {
	if err != nil {
		return 0, err
	}
	return c.Scale(s)
}

// GaussianRho returns the zCDP that Gaussian noise of standard deviation
// sigma gives a statistic of L2 sensitivity l2: rho = l2^2/(2 sigma^2)
// (Bun and Steinke 2016, Proposition 1.6), rounded up; the discrete
// Gaussian meets it too (Canonne, Kamath and Steinke 2020, Theorem 4).
// l2 and sigma must be positive and finite; it does not check them.
func GaussianRho(l2, sigma float64) float64 { return up(l2 * l2 / (2 * sigma * sigma)) }

// LaplaceScale returns the scale of the Laplace noise, Lap(scale) per
// coordinate, that makes a statistic of L1 sensitivity l1 satisfy the budget
// (Dwork et al. 2006): scale = l1/eps for eps-DP and for (eps,delta)-DP
// (pure implies approximate), and l1/sqrt(2 rho) for rho-zCDP, since
// eps-DP implies (eps^2/2)-zCDP. Renyi budgets return an error. A
// mechanism that releases at many sensitivities calibrates once
// (CalibrateLaplace).
func LaplaceScale(b Budget, l1 float64) (float64, error) {
	c, err := CalibrateLaplace(b)
	return c.scaleOr(err, l1)
}

// CalibrateLaplace returns the budget's Laplace calibration: the eps of
// Local(b), eps for a pure, (eps,delta) or local budget and sqrt(2 rho)
// rounded down for rho-zCDP, so that eps^2/2 never exceeds rho. Renyi and
// non-private budgets return Local's error.
func CalibrateLaplace(b Budget) (Calibration, error) {
	l, err := Local(b)
	return Calibration{b: b, eps: l.Eps}, err
}

// AnalyticGaussianDelta returns the exact delta at which the Gaussian
// mechanism with noise standard deviation sigma, applied to a statistic of
// L2 sensitivity 1, is (eps,delta)-DP (Balle and Wang 2018, Theorem 8):
//
//	delta = Phi(1/(2 sigma) - eps sigma) - e^eps Phi(-1/(2 sigma) - eps sigma).
//
// For large eps, e^eps overflows (eps > 709) or Phi(-a-b) underflows; as
// eps - (a+b)^2/2 = -(a-b)^2/2 (ab = eps/2), the second term is then
// computed as phi(a-b) R(a+b), R(x) = Phi(-x)/phi(x) Mills' ratio: without
// it delta came out NaN and the calibration stopped at sigma = 1 for
// every eps above 709, instead of falling like 1/sqrt(eps).
func AnalyticGaussianDelta(eps, sigma float64) float64 {
	a := 1 / (2 * sigma)
	b := eps * sigma
	var t2 float64
	if x := a + b; eps <= 700 && x <= 30 {
		t2 = math.Exp(eps) * normalCDF(-x)
	} else {
		t2 = math.Exp(-(a-b)*(a-b)/2) / math.Sqrt(2*math.Pi) * millsRatio(x)
	}
	return math.Max(normalCDF(a-b)-t2, 0)
}

// millsRatio returns Phi(-x)/phi(x) for x >= 30 (reached above: x = a + b
// >= 2 sqrt(ab) = sqrt(2 eps) > 37 when eps > 700) by Laplace's continued
// fraction 1/(x + 1/(x + 2/(x + 3/(x + ...)))), evaluated backwards from
// its 40th term, beyond which the terms change nothing in double
// precision at x >= 30.
func millsRatio(x float64) float64 {
	f := x
	for n := 40; n >= 1; n-- {
		f = x + float64(n)/f
	}
	return 1 / f
}

// normalCDF is the standard normal distribution function.
func normalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// sigmaMargin widens the analytic Gaussian's sigma: delta(eps, sigma) is
// evaluated in floating point, with a relative error far below the
// relative change of delta that a 2^-30 change of sigma makes
// (TestSafeRounding checks the result against 256-bit arithmetic).
const sigmaMargin = 0x1p-30

// analyticGaussianSigma returns (an upper bracket of) the smallest sigma at
// which AnalyticGaussianDelta(eps, sigma) <= delta, by bisection on a log
// scale, widened by sigmaMargin.
func analyticGaussianSigma(eps, delta float64) float64 {
	lo, hi := 1e-6, 1.0
	for AnalyticGaussianDelta(eps, hi) > delta {
		lo, hi = hi, 2*hi
	}
	for AnalyticGaussianDelta(eps, lo) <= delta && lo > 1e-300 {
		lo /= 2
	}
	for range 200 {
		mid := math.Sqrt(lo * hi)
		if AnalyticGaussianDelta(eps, mid) <= delta {
			hi = mid
		} else {
			lo = mid
		}
		if hi-lo <= 1e-13*hi {
			break
		}
	}
	return hi * (1 + sigmaMargin)
}
