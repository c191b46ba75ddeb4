package noise

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/dpbandit/dpbandit/internal/stattest"
)

// alpha is the significance of every distribution test in this package. The
// seeds are fixed, so each test is deterministic; alpha says how unlikely a
// correct sampler is to fail it on a fresh seed.
const alpha = 1e-3

func TestStreamDeterministicAndDistinct(t *testing.T) {
	a, b := Stream(7, 1, 2), Stream(7, 1, 2)
	for range 10 {
		if a.Uint64() != b.Uint64() {
			t.Fatal("same path, different streams")
		}
	}
	seen := map[uint64]bool{}
	for _, p := range [][]uint64{{}, {0}, {1}, {0, 0}, {0, 1}, {1, 0}, {2, 3, 4}} {
		v := Stream(7, p...).Uint64()
		if seen[v] {
			t.Fatalf("path %v collides", p)
		}
		seen[v] = true
	}
	if Stream(7).Uint64() == Stream(8).Uint64() {
		t.Fatal("seeds 7 and 8 give the same stream")
	}
}

func TestSecure(t *testing.T) {
	r, err := NewSecure()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := NewSecure()
	if r.Uint64() == s.Uint64() {
		t.Fatal("two secure sources agree")
	}
}

func TestLaplaceAndGaussianKS(t *testing.T) {
	r := Stream(1)
	const n = 20000
	x := make([]float64, n)
	for i := range x {
		x[i] = Laplace(r, 2.5)
	}
	lapCDF := func(v float64) float64 {
		if v < 0 {
			return 0.5 * math.Exp(v/2.5)
		}
		return 1 - 0.5*math.Exp(-v/2.5)
	}
	if d, p := stattest.KSOne(x, lapCDF); p < alpha {
		t.Errorf("Laplace(2.5): KS D=%v p=%v", d, p)
	}
	// The vector paths of Fast: the ziggurat (NewFast) and value by value.
	for _, f := range []Fast{NewFast(3), {R: Stream(3)}} {
		for i := range x {
			x[i] = 1
		}
		_ = f.AddLaplaceVec(x, 2.5, 1)
		for i := range x {
			x[i]--
		}
		if d, p := stattest.KSOne(x, lapCDF); p < alpha {
			t.Errorf("AddLaplaceVec(2.5), ziggurat %v: KS D=%v p=%v", f.src != nil, d, p)
		}
	}
	for i := range x {
		x[i] = Gaussian(r, 0.3)
	}
	if d, p := stattest.KSOne(x, func(v float64) float64 { return 0.5 * math.Erfc(-v/(0.3*math.Sqrt2)) }); p < alpha {
		t.Errorf("Gaussian(0.3): KS D=%v p=%v", d, p)
	}
	// A wrong scale must be caught: the test has power.
	if _, p := stattest.KSOne(x, func(v float64) float64 { return 0.5 * math.Erfc(-v/(0.33*math.Sqrt2)) }); p >= alpha {
		t.Error("KS did not notice a 10% error in sigma")
	}
	// Fast adds exactly these draws.
	f := Fast{R: Stream(5)}
	g := Stream(5)
	if v, _ := f.AddGaussian(1, 2, 1); v != 1+2*g.NormFloat64() {
		t.Error("Fast.AddGaussian is not x + sigma N")
	}
}

// pmfByRecursion builds the pmf of an integer distribution on [lo, hi] from
// the ratios f(k+1)/f(k), normalised: independent of the samplers' own
// log-factorial code.
func pmfByRecursion(lo, hi, mode int64, ratio func(k int64) float64) func(int64) float64 {
	w := make([]float64, hi-lo+1)
	w[mode-lo] = 1
	for k := mode; k < hi; k++ {
		w[k+1-lo] = w[k-lo] * ratio(k)
	}
	for k := mode; k > lo; k-- {
		w[k-1-lo] = w[k-lo] / ratio(k-1)
	}
	s := 0.0
	for _, v := range w {
		s += v
	}
	return func(k int64) float64 {
		if k < lo || k > hi {
			return 0
		}
		return w[k-lo] / s
	}
}

func window(mean, sd float64, min, max int64) (int64, int64) {
	lo := int64(math.Max(float64(min), math.Floor(mean-9*sd)))
	hi := int64(math.Min(float64(max), math.Ceil(mean+9*sd)))
	return lo, hi
}

func TestBinomialChiSquare(t *testing.T) {
	cases := []struct {
		n int64
		p float64
	}{
		{1, 0.5}, {20, 0.3}, {1000, 0.004}, {1000, 0.3}, {200, 0.95},
		{1000000, 0.7}, {1e12, 0.4}, {1e12, 3e-12}, {1e12, 1 - 1e-9},
	}
	r := Stream(2)
	for _, c := range cases {
		t.Run(fmt.Sprintf("n=%d,p=%g", c.n, c.p), func(t *testing.T) {
			mean, sd := float64(c.n)*c.p, math.Sqrt(float64(c.n)*c.p*(1-c.p))
			lo, hi := window(mean, sd, 0, c.n)
			mode := int64(math.Floor((float64(c.n) + 1) * c.p))
			if mode > c.n {
				mode = c.n
			}
			pmf := pmfByRecursion(lo, hi, mode, func(k int64) float64 {
				return float64(c.n-k) / float64(k+1) * c.p / (1 - c.p)
			})
			const draws = 40000
			counts := make([]int, hi-lo+1)
			var sum float64
			for range draws {
				k, err := Binomial(r, c.n, c.p)
				if err != nil {
					t.Fatal(err)
				}
				if k < 0 || k > c.n {
					t.Fatalf("draw %d outside [0,%d]", k, c.n)
				}
				sum += float64(k)
				counts[min(max(k, lo), hi)-lo]++
			}
			if p, df := stattest.ChiSquare(counts, lo, pmf); p < alpha {
				t.Errorf("chi-square p=%v (df=%d)", p, df)
			}
			// Mean within 4 standard errors.
			if se := sd / math.Sqrt(draws); math.Abs(sum/draws-mean) > 4*se+1e-9 {
				t.Errorf("mean %v, want %v +- %v", sum/draws, mean, 4*se)
			}
		})
	}
	if _, err := Binomial(r, -1, 0.5); err == nil {
		t.Error("n=-1 accepted")
	}
	if _, err := Binomial(r, 5, math.NaN()); err == nil {
		t.Error("p=NaN accepted")
	}
}

func TestHypergeometricChiSquare(t *testing.T) {
	cases := []struct{ total, marked, draws int64 }{
		{50, 20, 10}, {1000, 300, 400}, {1000, 700, 900}, {64, 3, 32},
		{1000000, 3, 500000}, {1 << 20, 1 << 19, 1 << 19}, {1 << 40, 1<<39 + 7, 1 << 39},
		{1 << 40, 12345678, 1 << 39},
	}
	r := Stream(3)
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d,%d,%d", c.total, c.marked, c.draws), func(t *testing.T) {
			N, K, n := float64(c.total), float64(c.marked), float64(c.draws)
			mean := n * K / N
			sd := math.Sqrt(n * K / N * (1 - K/N) * (N - n) / (N - 1))
			kmin := max(0, c.draws-(c.total-c.marked))
			kmax := min(c.draws, c.marked)
			lo, hi := window(mean, sd, kmin, kmax)
			mode := int64(math.Floor((n + 1) * (K + 1) / (N + 2)))
			mode = min(max(mode, lo), hi)
			pmf := pmfByRecursion(lo, hi, mode, func(k int64) float64 {
				return float64(c.marked-k) * float64(c.draws-k) / (float64(k+1) * float64(c.total-c.marked-c.draws+k+1))
			})
			const draws = 40000
			counts := make([]int, hi-lo+1)
			for range draws {
				k, err := Hypergeometric(r, c.total, c.marked, c.draws)
				if err != nil {
					t.Fatal(err)
				}
				if k < kmin || k > kmax {
					t.Fatalf("draw %d outside [%d,%d]", k, kmin, kmax)
				}
				counts[min(max(k, lo), hi)-lo]++
			}
			if p, df := stattest.ChiSquare(counts, lo, pmf); p < alpha {
				t.Errorf("chi-square p=%v (df=%d)", p, df)
			}
		})
	}
	if _, err := Hypergeometric(r, 10, 11, 2); err == nil {
		t.Error("marked > total accepted")
	}
}

func TestLogFactorialRatio(t *testing.T) {
	for _, c := range []struct{ a, b float64 }{{5, 3}, {100, 0}, {3e6, 3e6 - 40}, {1e12 + 25, 1e12}, {1e12, 1e12 + 7}, {4e15, 4e15 - 300}} {
		// Direct sum of ln(b+i), accurate when a and b are close.
		want := 0.0
		lo, hi, sign := c.b, c.a, 1.0
		if c.a < c.b {
			lo, hi, sign = c.a, c.b, -1
		}
		for x := lo + 1; x <= hi; x++ {
			want += math.Log(x)
		}
		want *= sign
		if got := LogFactorialRatio(c.a, c.b); math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("ln(%v!/%v!) = %v, want %v", c.a, c.b, got, want)
		}
	}
}

func BenchmarkBinomialLargeN(b *testing.B) {
	r := Stream(1)
	for b.Loop() {
		_, _ = Binomial(r, 1e12, 0.37)
	}
}

func BenchmarkHypergeometricLarge(b *testing.B) {
	r := Stream(1)
	for b.Loop() {
		_, _ = Hypergeometric(r, 1<<40, 1<<38, 1<<39)
	}
}

// TestFastAndSecureRefuseBadUse: Fast without its stream, or with a scale
// that is not positive and finite, and Secure with Bits out of [0, 64]
// return errors (Check agrees), never a panic or a NaN.
func TestFastAndSecureRefuseBadUse(t *testing.T) {
	if _, err := (Fast{}).AddGaussian(0, 1, 1); !errors.Is(err, ErrNoSource) {
		t.Errorf("Fast{}: %v", err)
	}
	if err := (Fast{}).AddLaplaceVec([]float64{0}, 1, 1); !errors.Is(err, ErrNoSource) {
		t.Errorf("Fast{} vector: %v", err)
	}
	f := NewFast(1)
	for _, scale := range []float64{math.NaN(), -1, 0, math.Inf(1)} {
		if x, err := f.AddLaplace(0, scale, 1); err == nil {
			t.Errorf("Fast scale %v: %v accepted", scale, x)
		}
	}
	for _, bits := range []int{-5, 65} {
		s := Secure{Bits: bits}
		if _, err := s.AddLaplace(0, 1, 1); err == nil || Check(s) == nil {
			t.Errorf("Secure{Bits: %d} accepted", bits)
		}
	}
	for _, n := range []Noise{f, Secure{}, Secure{Bits: 64}} {
		if err := Check(n); err != nil {
			t.Errorf("%#v: %v", n, err)
		}
	}
	if err := Check(nil); !errors.Is(err, ErrNoSource) {
		t.Errorf("nil: %v", err)
	}
}
