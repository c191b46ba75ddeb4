package noise

import (
	"math"
	"math/rand/v2"
)

// Laplace draws from the Laplace distribution with location 0 and the given
// scale b: density exp(-|x|/b)/(2b).
func Laplace(r *rand.Rand, b float64) float64 {
	e := r.ExpFloat64() * b
	if r.Uint64()&1 == 0 {
		return -e
	}
	return e
}

// Gaussian draws from N(0, sigma^2).
func Gaussian(r *rand.Rand, sigma float64) float64 { return r.NormFloat64() * sigma }

// Bernoulli draws true with probability p.
func Bernoulli(r *rand.Rand, p float64) bool { return r.Float64() < p }

// checkProb reports an error unless p is a probability.
func checkProb(p float64) error {
	if !(p >= 0 && p <= 1) {
		return errorf("probability must lie in [0,1], got %v", p)
	}
	return nil
}

// Binomial draws from Binomial(n, p) exactly, in O(1) expected time for any
// n up to 2^53. For n*min(p,1-p) < 10 it inverts the distribution function
// sequentially from 0; otherwise it uses BTRD, the transformed rejection
// with decomposition of Hormann ("The generation of binomial random
// variates", J. Statist. Comput. Simul. 46, 1993), with the final acceptance
// test evaluated through LogFactorialRatio so that it stays accurate for
// n around 10^12.
func Binomial(r *rand.Rand, n int64, p float64) (int64, error) {
	if err := checkProb(p); err != nil {
		return 0, err
	}
	if n < 0 || n > 1<<53 {
		return 0, errorf("binomial n must lie in [0, 2^53], got %d", n)
	}
	switch {
	case n == 0 || p == 0:
		return 0, nil
	case p == 1:
		return n, nil
	case p > 0.5:
		k, err := Binomial(r, n, 1-p)
		return n - k, err
	}
	if float64(n)*p < 10 {
		return binomialInversion(r, n, p), nil
	}
	return btrd(r, n, p), nil
}

// binomialInversion searches the distribution function from 0 (n p < 10,
// p <= 1/2). The pmf recursion f(k+1) = f(k) ((n+1)/(k+1) - 1) p/q is used;
// a search that runs off the support because of rounding restarts.
func binomialInversion(r *rand.Rand, n int64, p float64) int64 {
	q := 1 - p
	s := p / q
	a := (float64(n) + 1) * s
	f0 := math.Exp(float64(n) * math.Log1p(-p))
	for {
		u := r.Float64()
		f := f0
		var k int64
		for u > f {
			u -= f
			k++
			if k > n {
				break
			}
			f *= a/float64(k) - s
		}
		if k <= n {
			return k
		}
	}
}

// btrd is Hormann's BTRD for n p >= 10 and p <= 1/2.
func btrd(r *rand.Rand, n int64, p float64) int64 {
	nf := float64(n)
	q := 1 - p
	m := math.Floor((nf + 1) * p)
	rr := p / q
	nr := (nf + 1) * rr
	npq := nf * p * q
	spq := math.Sqrt(npq)
	b := 1.15 + 2.53*spq
	a := -0.0873 + 0.0248*b + 0.01*p
	c := nf*p + 0.5
	alpha := (2.83 + 5.1/b) * spq
	vr := 0.92 - 4.2/b
	urvr := 0.86 * vr
	logRatio := math.Log(rr)
	for {
		v := r.Float64()
		var u float64
		if v <= urvr {
			u = v/vr - 0.43
			return int64(math.Floor((2*a/(0.5-math.Abs(u))+b)*u + c))
		}
		if v >= vr {
			u = r.Float64() - 0.5
		} else {
			u = v/vr - 0.93
			u = math.Copysign(0.5, u) - u
			v = r.Float64() * vr
		}
		us := 0.5 - math.Abs(u)
		k := math.Floor((2*a/us+b)*u + c)
		if k < 0 || k > nf {
			continue
		}
		v *= alpha / (a/(us*us) + b)
		km := math.Abs(k - m)
		if km <= 15 {
			// f(k)/f(m) by the recursion f(i)/f(i-1) = nr/i - rr.
			f := 1.0
			if m < k {
				for i := m + 1; i <= k; i++ {
					f *= nr/i - rr
				}
			} else {
				for i := k + 1; i <= m; i++ {
					v *= nr/i - rr
				}
			}
			if v <= f {
				return int64(k)
			}
			continue
		}
		v = math.Log(v)
		rho := (km / npq) * (((km/3+0.625)*km+1.0/6)/npq + 0.5)
		t := -km * km / (2 * npq)
		if v < t-rho {
			return int64(k)
		}
		if v > t+rho {
			continue
		}
		// log f(k)/f(m) = ln m!/k! + ln (n-m)!/(n-k)! + (k-m) ln(p/q).
		lf := LogFactorialRatio(m, k) + LogFactorialRatio(nf-m, nf-k) + (k-m)*logRatio
		if v <= lf {
			return int64(k)
		}
	}
}

// Hypergeometric draws the number of marked items in a uniformly random
// sample of size draws, taken without replacement from total items of which
// marked are marked. It is exact and runs in O(1) expected time for any
// total up to 2^53: samples of at most 15 items are drawn one by one, larger
// ones by the ratio-of-uniforms method H2PE/HRUA of Stadlober ("Sampling
// from Poisson, binomial and hypergeometric distributions: ratio of uniforms
// as a simple and fast alternative", 1989), with the table-mountain hat
// centred at the mean + 1/2 and the squeezes 2 ln u <= u(4-u)-3 and
// 2 ln u >= u - 1/u.
func Hypergeometric(r *rand.Rand, total, marked, draws int64) (int64, error) {
	if total < 0 || total > 1<<53 || marked < 0 || marked > total || draws < 0 || draws > total {
		return 0, errorf("hypergeometric needs 0 <= marked, draws <= total <= 2^53, got total=%d marked=%d draws=%d", total, marked, draws)
	}
	// Reduce to good = min(marked, unmarked) and m = min(draws, total-draws).
	good, flipGood := marked, false
	if marked > total-marked {
		good, flipGood = total-marked, true
	}
	m, flipDraws := draws, false
	if draws > total-draws {
		m, flipDraws = total-draws, true
	}
	var k int64
	switch {
	case good == 0 || m == 0:
		k = 0
	case m <= 15:
		k = hypergeometricSequential(r, total, good, m)
	default:
		k = hrua(r, total, good, m)
	}
	if flipGood {
		k = m - k
	}
	if flipDraws {
		k = marked - k
	}
	return k, nil
}

// hypergeometricSequential draws the m items one at a time.
func hypergeometricSequential(r *rand.Rand, total, good, m int64) int64 {
	var k int64
	for i := int64(0); i < m; i++ {
		if r.Int64N(total-i) < good-k {
			k++
		}
	}
	return k
}

// Stadlober's constants: 2 sqrt(2/e) and 3 - 2 sqrt(3/e).
const (
	hruaD1 = 1.7155277699214135
	hruaD2 = 0.8989161620588988
)

// hrua is the ratio-of-uniforms sampler for good <= total/2, m <= total/2.
func hrua(r *rand.Rand, total, good, m int64) int64 {
	N, M, n := float64(total), float64(good), float64(m)
	bad := N - M
	pg := M / N
	mean := n * pg
	variance := n * pg * (1 - pg) * (N - n) / (N - 1)
	center := mean + 0.5
	width := hruaD1*math.Sqrt(variance+0.5) + hruaD2
	mode := math.Floor((n + 1) * (M + 1) / (N + 2))
	// Support is [0, min(n, M)]; mass beyond 16 standard deviations above
	// the mean is below 1e-55 and is cut, as in Stadlober's algorithm.
	limit := math.Min(math.Min(n, M)+1, math.Floor(center+16*math.Sqrt(variance+0.5)))
	for {
		u := r.Float64()
		if u == 0 {
			continue
		}
		v := r.Float64()
		x := center + width*(v-0.5)/u
		if x < 0 || x >= limit {
			continue
		}
		k := math.Floor(x)
		// t = ln f(k)/f(mode) with f(k) = C(M,k) C(bad, n-k).
		t := LogFactorialRatio(mode, k) + LogFactorialRatio(M-mode, M-k) +
			LogFactorialRatio(n-mode, n-k) + LogFactorialRatio(bad-n+mode, bad-n+k)
		if u*(4-u)-3 <= t {
			return int64(k)
		}
		if u-1/u > t {
			continue
		}
		if 2*math.Log(u) <= t {
			return int64(k)
		}
	}
}

// stirlingTail holds fc(k) = ln k! - [(k+1/2) ln(k+1) - (k+1) + ln(2 pi)/2]
// for k = 0..9, computed from math.Lgamma, which is exact to an ulp there.
var stirlingTail = func() (t [10]float64) {
	for k := range t {
		x := float64(k)
		lg, _ := math.Lgamma(x + 1)
		t[k] = lg - ((x+0.5)*math.Log(x+1) - (x + 1) + 0.5*math.Log(2*math.Pi))
	}
	return t
}()

// fc is the Stirling correction of ln k!, by table for k < 10 and by its
// asymptotic series 1/(12(k+1)) - 1/(360(k+1)^3) + 1/(1260(k+1)^5) above.
func fc(k float64) float64 {
	if k < 10 {
		return stirlingTail[int(k)]
	}
	x := 1 / (k + 1)
	x2 := x * x
	return (1.0/12 - (1.0/360-x2/1260)*x2) * x
}

// LogFactorialRatio returns ln(a!/b!) for non-negative integers a and b
// given as floats. It stays accurate when a and b are huge (10^12) and
// close, where a difference of math.Lgamma values would lose every digit:
// with Stirling's form ln n! = (n+1/2) ln(n+1) - (n+1) + ln(2 pi)/2 + fc(n),
// the difference is written with log1p of the relative gap.
func LogFactorialRatio(a, b float64) float64 {
	if a == b {
		return 0
	}
	if a < 1e6 && b < 1e6 {
		la, _ := math.Lgamma(a + 1)
		lb, _ := math.Lgamma(b + 1)
		return la - lb
	}
	d := a - b
	return d*math.Log(b+1) + (a+0.5)*math.Log1p(d/(b+1)) - d + fc(a) - fc(b)
}
