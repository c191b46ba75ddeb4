package noise

import (
	crand "crypto/rand"
	"io"
	"math"
	"math/big"
)

// Secure is the deployment Noise. It resists the floating-point attacks on
// textbook samplers (Mironov 2012 on the Laplace mechanism; Jin, McMurtry,
// Rubinstein and Ohrimenko 2022 on the Gaussian), in which the low-order
// bits of a released float reveal the input: the set of floats reachable
// from x + noise differs from the set reachable from x + sensitivity +
// noise.
//
// It snaps x to the grid of multiples of L = 2^(floor(log2 sensitivity) -
// Bits) exactly (the statistic may be given as a rational: AddLaplaceRat,
// AddGaussianRat), adds integer noise times L drawn exactly (discrete Laplace or
// discrete Gaussian, Canonne, Kamath and Steinke, "The Discrete Gaussian
// for Differential Privacy", 2020, Algorithms 1-3, in exact rational
// arithmetic on uniform integers read from Rand), and returns the lattice
// point, an exact multiple of L computed in big integers, rounded to the
// nearest float64 (post-processing). Every finite value fits: no release
// fails because of the value released. Snapping moves a value by at most L/2, so neighbouring inputs differ
// by at most sensitivity + L after it; the noise scale is multiplied by
// (sensitivity + L)/sensitivity to cover that, which keeps the ratio of
// scale to sensitivity, and hence the budget, of the caller's calibration:
// the discrete Laplace with scale b is eps-DP for integer shifts up to
// b eps, and the discrete Gaussian with variance sigma^2 is
// (Delta^2/(2 sigma^2))-zCDP for integer shifts up to Delta (CKS Theorem
// 4), exactly as their continuous counterparts.
//
// Threat model: the adversary sees every released value exactly and
// knows the algorithm; the entropy source is the operating system's
// (crypto/rand) and its failures are returned as errors. Timing and other
// side channels are out of scope: the rejection samplers take a
// data-independent but random number of steps, and big-integer arithmetic
// takes time that grows with the magnitude of the noise.
//
// The discrete Gaussian meets zCDP (and hence Renyi DP) budgets exactly,
// but not always the tight (eps, delta) calibrations of the continuous
// Gaussian: the mechanism package therefore meets (eps, delta) budgets on
// a Discrete noise through zCDP (privacy.ApproxToZCDP).
type Secure struct {
	// Rand is the entropy source; nil means crypto/rand.Reader.
	Rand io.Reader
	// Bits sets the grid relative to the sensitivity, in [0, 64]; 0
	// means 20, a grid a million times finer than the sensitivity.
	Bits int
}

// maxBits bounds Secure.Bits: a grid 2^64 times finer than the
// sensitivity is far below float64's resolution of any statistic.
const maxBits = 64

// checkBits reports an error for a Bits outside [0, maxBits] (a negative
// one would make the grid coarser than the sensitivity, and the noise
// larger, silently).
func (s Secure) checkBits() error {
	if s.Bits < 0 || s.Bits > maxBits {
		return errorf("Secure.Bits must lie in [0, %d] (0: 20), got %d", maxBits, s.Bits)
	}
	return nil
}

// Discrete reports that Secure draws lattice noise (see the type's comment).
func (Secure) Discrete() bool { return true }

// grid returns L, the grid step for a sensitivity, a power of two 2^k.
func (s Secure) grid(sensitivity float64) float64 { return math.Ldexp(1, s.gridExp(sensitivity)) }

// gridExp returns k with L = 2^k.
func (s Secure) gridExp(sensitivity float64) int {
	bits := s.Bits
	if bits == 0 {
		bits = 20
	}
	return math.Ilogb(sensitivity) - bits
}

func (s Secure) reader() io.Reader {
	if s.Rand == nil {
		return crand.Reader
	}
	return s.Rand
}

// Exact is implemented by noise sources that release a statistic given
// exactly, as a rational, rather than as a float64 computed with
// rounding errors: package mechanism passes exact statistics
// (mechanism.Sum) to it, so that the sensitivity the calibration assumed
// holds for the value actually released.
type Exact interface {
	// AddGaussianRat returns x + N(0, sigma^2) for a statistic of the
	// given L2 sensitivity.
	AddGaussianRat(x *big.Rat, sigma, sensitivity float64) (float64, error)
	// AddLaplaceRat returns x + Lap(scale) for a statistic of the given
	// L1 sensitivity.
	AddLaplaceRat(x *big.Rat, scale, sensitivity float64) (float64, error)
}

// check reports an error unless scale and sensitivity are positive and
// finite: they are public parameters, never data.
func check(scale, sensitivity float64) error {
	for i, v := range []float64{scale, sensitivity} {
		if !(v > 0) || math.IsInf(v, 0) {
			return errorf("%s must be positive and finite, got %v", []string{"scale", "sensitivity"}[i], v)
		}
	}
	return nil
}

// units snaps x to the grid of L = 2^k exactly: it returns round(x/L)
// (half to even) as an integer, k, and the noise scale in grid units
// inflated by (sensitivity + L)/sensitivity, as an exact rational. Every
// rational is representable, so no value of x, however large, makes it
// fail: whether a release fails never depends on the data.
func (s Secure) units(x *big.Rat, scale, sensitivity float64) (*big.Int, int, *big.Rat, error) {
	if err := check(scale, sensitivity); err != nil {
		return nil, 0, nil, err
	}
	if err := s.checkBits(); err != nil {
		return nil, 0, nil, err
	}
	k := s.gridExp(sensitivity)
	// x / 2^k = num 2^-k / den, and L = 2^k as a rational.
	num, den := new(big.Int).Set(x.Num()), new(big.Int).Set(x.Denom())
	l := new(big.Rat)
	if k >= 0 {
		den.Lsh(den, uint(k))
		l.SetInt(new(big.Int).Lsh(big.NewInt(1), uint(k)))
	} else {
		num.Lsh(num, uint(-k))
		l.SetFrac(big.NewInt(1), new(big.Int).Lsh(big.NewInt(1), uint(-k)))
	}
	xu := roundDiv(num, den)
	// scale (sensitivity + L) / (sensitivity L), exactly.
	sens := new(big.Rat).SetFloat64(sensitivity)
	r := new(big.Rat).SetFloat64(scale)
	r.Mul(r, new(big.Rat).Add(sens, l))
	r.Quo(r, new(big.Rat).Mul(sens, l))
	return xu, k, r, nil
}

// roundDiv returns num/den (den > 0) rounded to the nearest integer, half
// to even.
func roundDiv(num, den *big.Int) *big.Int {
	q, m := new(big.Int).DivMod(num, den, new(big.Int)) // num = q den + m, 0 <= m < den
	c := new(big.Int).Lsh(m, 1).Cmp(den)
	if c > 0 || (c == 0 && q.Bit(0) == 1) {
		q.Add(q, big.NewInt(1))
	}
	return q
}

// release returns (xu + y) 2^k rounded to the nearest float64: the exact
// lattice point is the private output, and its rounding to a float is a
// fixed function of it (post-processing).
func release(xu *big.Int, k int, y *big.Int) float64 {
	v := new(big.Float).SetInt(new(big.Int).Add(xu, y))
	v.SetMantExp(v, k)
	f, _ := v.Float64()
	return f
}

// ratOf returns x as an exact rational, or an error if it is not finite.
func ratOf(x float64) (*big.Rat, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil, errorf("value %v is not finite", x)
	}
	return new(big.Rat).SetFloat64(x), nil
}

// AddLaplace returns x snapped to the grid plus discrete Laplace noise of
// scale scale (sensitivity + L)/sensitivity, on the grid.
func (s Secure) AddLaplace(x, scale, sensitivity float64) (float64, error) {
	r, err := ratOf(x)
	if err != nil {
		return 0, err
	}
	return s.AddLaplaceRat(r, scale, sensitivity)
}

// AddGaussian returns x snapped to the grid plus discrete Gaussian noise of
// standard deviation sigma (sensitivity + L)/sensitivity, on the grid.
func (s Secure) AddGaussian(x, sigma, sensitivity float64) (float64, error) {
	r, err := ratOf(x)
	if err != nil {
		return 0, err
	}
	return s.AddGaussianRat(r, sigma, sensitivity)
}

// AddLaplaceRat is AddLaplace for an exact statistic.
func (s Secure) AddLaplaceRat(x *big.Rat, scale, sensitivity float64) (float64, error) {
	xu, k, b, err := s.units(x, scale, sensitivity)
	if err != nil {
		return 0, err
	}
	y, err := DiscreteLaplace(s.reader(), b)
	if err != nil {
		return 0, err
	}
	return release(xu, k, y), nil
}

// AddGaussianRat is AddGaussian for an exact statistic.
func (s Secure) AddGaussianRat(x *big.Rat, sigma, sensitivity float64) (float64, error) {
	xu, k, sd, err := s.units(x, sigma, sensitivity)
	if err != nil {
		return 0, err
	}
	y, err := DiscreteGaussian(s.reader(), new(big.Rat).Mul(sd, sd))
	if err != nil {
		return 0, err
	}
	return release(xu, k, y), nil
}

// uniform returns a uniform integer in [0, n).
func uniform(r io.Reader, n *big.Int) (*big.Int, error) {
	v, err := crand.Int(r, n)
	if err != nil {
		return nil, errorf("reading entropy: %w", err)
	}
	return v, nil
}

// bernoulliRat returns true with probability p = num/den in [0, 1].
func bernoulliRat(r io.Reader, p *big.Rat) (bool, error) {
	u, err := uniform(r, p.Denom())
	if err != nil {
		return false, err
	}
	return u.Cmp(p.Num()) < 0, nil
}

var ratOne = big.NewRat(1, 1)

// BernoulliExp returns true with probability exp(-gamma), gamma >= 0,
// exactly (Canonne, Kamath and Steinke 2020, Algorithm 1): for gamma <= 1,
// draw A_k ~ Bernoulli(gamma/k) for k = 1, 2, ... until one is 0 and
// return whether that k is odd; for gamma > 1, require floor(gamma)
// successes of Bernoulli(exp(-1)) and one of Bernoulli(exp(-frac(gamma))).
func BernoulliExp(r io.Reader, gamma *big.Rat) (bool, error) {
	if gamma.Sign() < 0 {
		return false, errorf("BernoulliExp needs gamma >= 0, got %v", gamma)
	}
	if gamma.Cmp(ratOne) <= 0 {
		k := int64(1)
		for {
			a, err := bernoulliRat(r, new(big.Rat).Quo(gamma, big.NewRat(k, 1)))
			if err != nil {
				return false, err
			}
			if !a {
				return k%2 == 1, nil
			}
			k++
		}
	}
	whole := new(big.Int).Quo(gamma.Num(), gamma.Denom())
	for i := new(big.Int); i.Cmp(whole) < 0; i.Add(i, big.NewInt(1)) {
		b, err := BernoulliExp(r, ratOne)
		if err != nil || !b {
			return false, err
		}
	}
	return BernoulliExp(r, new(big.Rat).Sub(gamma, new(big.Rat).SetInt(whole)))
}

// DiscreteLaplace returns Y with P(Y = y) proportional to exp(-|y|/scale),
// scale > 0 rational, exactly (Canonne, Kamath and Steinke 2020,
// Algorithm 2, with scale = t/s).
func DiscreteLaplace(r io.Reader, scale *big.Rat) (*big.Int, error) {
	if scale.Sign() <= 0 {
		return nil, errorf("discrete Laplace needs a positive scale, got %v", scale)
	}
	t, s := scale.Num(), scale.Denom()
	for {
		u, err := uniform(r, t)
		if err != nil {
			return nil, err
		}
		d, err := BernoulliExp(r, new(big.Rat).SetFrac(u, t))
		if err != nil {
			return nil, err
		}
		if !d {
			continue
		}
		v := new(big.Int)
		for {
			a, err := BernoulliExp(r, ratOne)
			if err != nil {
				return nil, err
			}
			if !a {
				break
			}
			v.Add(v, big.NewInt(1))
		}
		x := v.Mul(v, t).Add(v, u)
		y := x.Quo(x, s)
		half, err := uniform(r, big.NewInt(2))
		if err != nil {
			return nil, err
		}
		if half.Sign() == 1 {
			if y.Sign() == 0 {
				continue
			}
			y.Neg(y)
		}
		return y, nil
	}
}

// DiscreteGaussian returns Y with P(Y = y) proportional to
// exp(-y^2/(2 sigma2)), sigma2 > 0 rational, exactly (Canonne, Kamath and
// Steinke 2020, Algorithm 3): propose Y from the discrete Laplace of scale
// t = floor(sigma) + 1 and accept with probability
// exp(-(|Y| - sigma2/t)^2/(2 sigma2)).
func DiscreteGaussian(r io.Reader, sigma2 *big.Rat) (*big.Int, error) {
	if sigma2.Sign() <= 0 {
		return nil, errorf("discrete Gaussian needs a positive variance, got %v", sigma2)
	}
	// t = floor(sqrt(sigma2)) + 1, computed exactly on integers.
	q := new(big.Int).Quo(sigma2.Num(), sigma2.Denom()) // floor(sigma2)
	t := new(big.Int).Sqrt(q)                           // floor(sqrt(floor(sigma2))) = floor(sigma)
	t.Add(t, big.NewInt(1))
	tr := new(big.Rat).SetInt(t)
	twoS2 := new(big.Rat).Mul(sigma2, big.NewRat(2, 1))
	for {
		y, err := DiscreteLaplace(r, tr)
		if err != nil {
			return nil, err
		}
		d := new(big.Rat).SetInt(new(big.Int).Abs(y))
		d.Sub(d, new(big.Rat).Quo(sigma2, tr))
		d.Mul(d, d).Quo(d, twoS2)
		c, err := BernoulliExp(r, d)
		if err != nil {
			return nil, err
		}
		if c {
			return y, nil
		}
	}
}
