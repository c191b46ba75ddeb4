package noise

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpbandit/dpbandit/internal/stattest"
)

// zigCase is one density of the ziggurat with its law: the area of its
// tail beyond r (under the unnormalised f), and the CDF and survival
// function of the signed draws.
type zigCase struct {
	name     string
	z        *ziggurat
	tailArea float64
	cdf, sf  func(float64) float64
	draw     func(src *rand.PCG, dst []float64)
}

func zigCases() []zigCase {
	lap := distuv.Laplace{Mu: 0, Scale: 1}
	return []zigCase{
		{"normal", zigNormal, math.Sqrt(math.Pi/2) * math.Erfc(zigNormal.r/math.Sqrt2),
			distuv.UnitNormal.CDF, distuv.UnitNormal.Survival, Normals},
		{"laplace", zigExp, math.Exp(-zigExp.r), lap.CDF, lap.Survival,
			func(src *rand.PCG, dst []float64) { clear(dst); zigExp.add(src, dst, 1) }},
	}
}

// TestZigguratTables checks the layers against their definition: the base
// layer (rectangle [0, r] x [0, f(r)] plus the tail) has area v, and the
// top layer closes at f = 1 (the 256 layers of area v cover the area under
// f exactly).
func TestZigguratTables(t *testing.T) {
	for _, c := range zigCases() {
		z := c.z
		if got := z.r*z.f(z.r) + c.tailArea; math.Abs(got/z.v-1) > 1e-9 {
			t.Errorf("%s: base layer area %v, want %v", c.name, got, z.v)
		}
		xTop := z.w[zigN-1] * zigRes
		if top := z.f(xTop) + z.v/xTop; math.Abs(top-1) > 1e-9 {
			t.Errorf("%s: top layer closes at f = %v, want 1", c.name, top)
		}
		if z.hi[zigN-1] != 1 || z.k[zigN-1] != 0 {
			t.Errorf("%s: top layer: hi %v, k %v; want 1 and 0 (always the wedge test)", c.name, z.hi[zigN-1], z.k[zigN-1])
		}
		fast := 0.0
		for i := range zigN {
			fast += float64(z.k[i]) / zigRes / zigN
		}
		if fast < 0.97 || fast > 0.995 {
			t.Errorf("%s: fast-path probability %v, want about 0.98-0.99", c.name, fast)
		}
	}
}

func draws(c zigCase, seed uint64, n int) []float64 {
	x := make([]float64, n)
	c.draw(Reseed(rand.NewPCG(0, 0), seed), x)
	return x
}

// TestZigguratDistribution runs a KS test and a chi-square test on
// 0.05-wide bins over 10^6 draws of each law; the KS test also rejects
// the same draws scaled by 1.02, which shows its power at this size.
func TestZigguratDistribution(t *testing.T) {
	for _, c := range zigCases() {
		x := draws(c, 1, 1_000_000)
		if d, p := stattest.KSOne(x, c.cdf); p < alpha {
			t.Errorf("%s: KS: D = %v, p = %v", c.name, d, p)
		}
		const width, lim = 0.05, 160 // bins k*width for |k| < lim, ends pooled
		counts := make([]int, 2*lim)
		for _, v := range x {
			k := int(math.Floor(v/width)) + lim
			counts[min(max(k, 0), 2*lim-1)]++
		}
		pmf := func(k int64) float64 {
			a, b := float64(k)*width, float64(k+1)*width
			if k == -lim {
				a = math.Inf(-1)
			}
			if k == lim-1 {
				b = math.Inf(1)
			}
			return c.cdf(b) - c.cdf(a)
		}
		if p, df := stattest.ChiSquare(counts, -lim, pmf); p < alpha {
			t.Errorf("%s: chi-square: p = %v (df %d)", c.name, p, df)
		}
		for i := range x {
			x[i] *= 1.02
		}
		if _, p := stattest.KSOne(x, c.cdf); p > alpha {
			t.Errorf("%s: KS does not reject scale 1.02: p = %v", c.name, p)
		}
	}
}

// TestZigguratTail checks the draws beyond r, which come from the tail
// samplers: their number (binomial, within 4 standard deviations) and
// their conditional law (KS against the tail of the law beyond r, on about
// 10^4 draws, which rejects the tail's exponential scaled by 1.1).
func TestZigguratTail(t *testing.T) {
	for _, c := range zigCases() {
		q := 2 * c.sf(c.z.r)
		n := int(1e4 / q)
		chunk := 100_000
		n -= n % chunk
		src := Reseed(rand.NewPCG(0, 0), 2)
		x := make([]float64, chunk)
		var tail []float64
		for range n / chunk {
			c.draw(src, x)
			for _, v := range x {
				if math.Abs(v) > c.z.r {
					tail = append(tail, math.Abs(v))
				}
			}
		}
		if m, sd := float64(n)*q, math.Sqrt(float64(n)*q*(1-q)); math.Abs(float64(len(tail))-m) > 4*sd {
			t.Errorf("%s: %d draws beyond r, want %v ± %v", c.name, len(tail), m, 4*sd)
		}
		s := c.sf(c.z.r)
		cond := func(v float64) float64 { return 1 - c.sf(v)/s }
		if d, p := stattest.KSOne(tail, cond); p < alpha {
			t.Errorf("%s: tail KS: D = %v, p = %v", c.name, d, p)
		}
	}
}

func TestNormalsDeterministicOddLength(t *testing.T) {
	c := zigCases()[0]
	a, b := draws(c, 3, 7), draws(c, 3, 8)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("draw %d: %v vs %v: a prefix must not depend on the length", i, a[i], b[i])
		}
	}
	if c := draws(c, 4, 7); c[0] == a[0] {
		t.Error("seeds 3 and 4 give the same draws")
	}
}

func BenchmarkNormals(b *testing.B) {
	src := rand.NewPCG(1, 2)
	x := make([]float64, 30)
	for b.Loop() {
		Normals(src, x)
	}
}

func BenchmarkNormFloat64(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, 30)
	for b.Loop() {
		for i := range x {
			x[i] = r.NormFloat64()
		}
	}
}
