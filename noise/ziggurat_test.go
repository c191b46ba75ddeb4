package noise

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpbandit/dpbandit/internal/stattest"
	"gonum.org/v1/gonum/stat/distuv"
)

// TestZigguratTables checks the layers against their definition: the base
// layer (rectangle [0, r] x [0, f(r)] plus the tail) has area zigV, and the
// top layer closes at f = 1 (the 256 layers of area zigV cover the area
// sqrt(pi/2) under f exactly).
func TestZigguratTables(t *testing.T) {
	f := func(x float64) float64 { return math.Exp(-x * x / 2) }
	tail := math.Sqrt(math.Pi/2) * math.Erfc(zigR/math.Sqrt2)
	if got := zigR*f(zigR) + tail; math.Abs(got/zigV-1) > 1e-9 {
		t.Errorf("base layer area %v, want %v", got, zigV)
	}
	xTop := zig.w[zigN-1] * zigRes
	if top := f(xTop) + zigV/xTop; math.Abs(top-1) > 1e-9 {
		t.Errorf("top layer closes at f = %v, want 1", top)
	}
	if zig.hi[zigN-1] != 1 || zig.k[zigN-1] != 0 {
		t.Errorf("top layer: hi %v, k %v; want 1 and 0 (always the wedge test)", zig.hi[zigN-1], zig.k[zigN-1])
	}
	fast := 0.0
	for i := range zigN {
		fast += float64(zig.k[i]) / zigRes / zigN
	}
	if fast < 0.98 || fast > 0.99 {
		t.Errorf("fast-path probability %v, want about 0.986", fast)
	}
}

func normals(seed uint64, n int) []float64 {
	x := make([]float64, n)
	Normals(Reseed(rand.NewPCG(0, 0), seed), x)
	return x
}

// TestNormalsDistribution runs a KS test and a chi-square test on 0.05-wide
// bins over 10^6 draws; the KS test also rejects the same draws scaled by
// 1.02, which shows its power at this sample size.
func TestNormalsDistribution(t *testing.T) {
	x := normals(1, 1_000_000)
	cdf := distuv.UnitNormal.CDF
	if d, p := stattest.KSOne(x, cdf); p < alpha {
		t.Errorf("KS: D = %v, p = %v", d, p)
	}
	const width, lim = 0.05, 120 // bins k*width for |k| < lim, ends pooled
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
		return cdf(b) - cdf(a)
	}
	if p, df := stattest.ChiSquare(counts, -lim, pmf); p < alpha {
		t.Errorf("chi-square: p = %v (df %d)", p, df)
	}
	for i := range x {
		x[i] *= 1.02
	}
	if _, p := stattest.KSOne(x, cdf); p > alpha {
		t.Errorf("KS does not reject sd 1.02: p = %v", p)
	}
}

// TestNormalsTail checks the draws beyond r, which come from Marsaglia's
// tail algorithm: their number among 4 10^7 draws (binomial, within 4
// standard deviations) and their conditional law (KS against the normal
// tail beyond r, on about 10^4 draws; it rejects the tail's exponential
// scaled by 1.1).
func TestNormalsTail(t *testing.T) {
	const n, chunk = 40_000_000, 100_000
	src := Reseed(rand.NewPCG(0, 0), 2)
	x := make([]float64, chunk)
	var tail []float64
	for range n / chunk {
		Normals(src, x)
		for _, v := range x {
			if math.Abs(v) > zigR {
				tail = append(tail, math.Abs(v))
			}
		}
	}
	q := 2 * distuv.UnitNormal.Survival(zigR)
	if m, sd := n*q, math.Sqrt(n*q*(1-q)); math.Abs(float64(len(tail))-m) > 4*sd {
		t.Errorf("%d draws beyond r, want %v ± %v", len(tail), m, 4*sd)
	}
	s := distuv.UnitNormal.Survival(zigR)
	cond := func(v float64) float64 { return 1 - distuv.UnitNormal.Survival(v)/s }
	if d, p := stattest.KSOne(tail, cond); p < alpha {
		t.Errorf("tail KS: D = %v, p = %v", d, p)
	}
}

func TestNormalsDeterministicOddLength(t *testing.T) {
	a, b := normals(3, 7), normals(3, 8)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("draw %d: %v vs %v: a prefix must not depend on the length", i, a[i], b[i])
		}
	}
	if c := normals(4, 7); c[0] == a[0] {
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
