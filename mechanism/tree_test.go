package mechanism

import (
	"math"
	"math/bits"
	"testing"

	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// zeroNoise counts draws and adds nothing, to check the tree's sums and
// its accounting exactly.
type zeroNoise struct{ draws int }

func (z *zeroNoise) AddGaussian(x, _, _ float64) (float64, error) { return x, nil }
func (z *zeroNoise) AddLaplace(x, _, _ float64) (float64, error) {
	z.draws++
	return x, nil
}

// TestTreeAggExact: without noise the tree returns the exact prefix sums;
// every release carries exactly Levels() draws per coordinate; the state
// is O(N log T).
func TestTreeAggExact(t *testing.T) {
	for _, T := range []int64{1, 2, 7, 8, 100, 1024} {
		z := &zeroNoise{}
		b, _ := privacy.NewPure(1)
		a, err := NewTreeAgg(b, 2, 2, T, z)
		if err != nil {
			t.Fatal(err)
		}
		if z.draws != 2*a.Levels() {
			t.Fatalf("T=%d: %d bank draws, want 2 L", T, z.draws)
		}
		if a.Levels() != bits.Len64(uint64(T)) {
			t.Fatalf("T=%d: %d levels", T, a.Levels())
		}
		if len(a.alpha) != a.Levels() || len(a.noisy) != a.Levels() {
			t.Fatalf("T=%d: state of %d levels", T, len(a.alpha))
		}
		var s0, s1 float64
		for i := int64(1); i <= T; i++ {
			l := []float64{float64(i % 3), 1 / float64(i)}
			s0, s1 = s0+l[0], s1+l[1]
			before := z.draws
			out, err := a.Add(l)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(out[0]-s0) > 1e-9 || math.Abs(out[1]-s1) > 1e-9 {
				t.Fatalf("T=%d t=%d: sum %v, want [%v %v]", T, i, out, s0, s1)
			}
			// One node release (2 coordinates) per step; the released sum
			// carries exactly Levels() draws per coordinate.
			if a.Draws != a.Levels() || z.draws-before != 2 {
				t.Fatalf("T=%d t=%d: %d draws in the release, %d new draws", T, i, a.Draws, z.draws-before)
			}
		}
		if _, err := a.Add([]float64{0, 0}); err == nil {
			t.Errorf("T=%d: a (T+1)-th vector accepted", T)
		}
	}
}

// TestTreeAggNoise: each node's scale is levels s/eps, and the noise of a
// release is the sum of Levels() independent Laplace draws: its variance
// is Levels() * 2 scale^2, whatever the step (37 uses 3 nodes and 4
// padding draws; 64 uses 1 node and 6).
func TestTreeAggNoise(t *testing.T) {
	b, _ := privacy.NewPure(0.5)
	const T = 100 // 7 levels
	var sum, sq [2]float64
	const reps = 4000
	for r := range uint64(reps) {
		a, _ := NewTreeAgg(b, 3, 1, T, noise.NewFast(21, r))
		if math.Abs(a.Scale()-7*3/0.5) > 1e-9 {
			t.Fatalf("scale %v, want levels s/eps = 42", a.Scale())
		}
		for i := range 64 {
			out, _ := a.Add([]float64{1})
			if i == 36 || i == 63 {
				z := out[0] - float64(i+1)
				sum[i/40], sq[i/40] = sum[i/40]+z, sq[i/40]+z*z
			}
		}
	}
	want := 7 * 2 * 42.0 * 42.0
	for k := range 2 {
		v := sq[k]/reps - (sum[k]/reps)*(sum[k]/reps)
		// The sample variance of 4000 draws is within 15% with
		// overwhelming probability (Laplace sums have kurtosis 3 + 3/7).
		if math.Abs(v/want-1) > 0.15 {
			t.Errorf("step %d: noise variance %v, want %v", []int{37, 64}[k], v, want)
		}
	}
}

// TestTreeAggZCDP: under rho-zCDP each of the L levels spends rho/L.
// Laplace nodes: Lap(l1/sqrt(2 rho/L)), at T = 10^4 (L = 14), rho = 0.5
// and l1 = 1 a scale of sqrt(14) = 3.74 (the sqrt(2 rho)/L split gave 14);
// the L levels' zCDP costs, (eps_node^2/2) each, add up to at most rho.
// NewTreeAggFor picks Laplace nodes for pure budgets and Gaussian nodes
// of standard deviation l2 sqrt(L/(2 rho)) otherwise, and the Gaussian
// tree's release variance is below the Laplace tree's.
func TestTreeAggZCDP(t *testing.T) {
	z, _ := privacy.NewZCDP(0.5)
	lap, err := NewTreeAgg(z, 1, 1, 10000, &zeroNoise{})
	if err != nil {
		t.Fatal(err)
	}
	if lap.Levels() != 14 || math.Abs(lap.Scale()-math.Sqrt(14)) > 1e-9 {
		t.Fatalf("L=%d, Laplace node scale %v, want sqrt(14)", lap.Levels(), lap.Scale())
	}
	epsNode := 1 / lap.Scale()
	if cost := 14 * epsNode * epsNode / 2; cost > 0.5 {
		t.Errorf("the levels spend rho = %v > 0.5", cost)
	}
	if lap.Gaussian() || math.Abs(lap.SD()-math.Sqrt(14)*math.Sqrt(28)) > 1e-9 {
		t.Errorf("Laplace tree: gaussian=%v sd=%v", lap.Gaussian(), lap.SD())
	}
	g, err := NewTreeAggFor(z, 10, math.Sqrt(10), 10, 10000, &zeroNoise{})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Gaussian() || math.Abs(g.Scale()-math.Sqrt(10)*math.Sqrt(14)) > 1e-9 {
		t.Errorf("zCDP tree: gaussian=%v sigma=%v, want sqrt(10) sqrt(14/(2 rho))", g.Gaussian(), g.Scale())
	}
	l, _ := NewTreeAgg(z, 10, 10, 10000, &zeroNoise{})
	if g.SD() >= l.SD()/math.Sqrt(2) {
		t.Errorf("Gaussian tree sd %v not below the Laplace tree's %v / sqrt 2", g.SD(), l.SD())
	}
	p, _ := privacy.NewPure(1)
	if pt, _ := NewTreeAggFor(p, 10, math.Sqrt(10), 10, 10000, &zeroNoise{}); pt.Gaussian() || math.Abs(pt.Scale()-140) > 1e-9 {
		t.Errorf("pure tree: gaussian=%v scale=%v, want Laplace 140", pt.Gaussian(), pt.Scale())
	}
}

func TestTreeAggErrors(t *testing.T) {
	b, _ := privacy.NewPure(1)
	if _, err := NewTreeAgg(b, 1, 0, 10, &zeroNoise{}); err == nil {
		t.Error("n=0 accepted")
	}
	a, _ := privacy.NewApprox(1, 1e-5)
	if _, err := NewTreeAgg(a, 1, 1, 10, &zeroNoise{}); err == nil {
		t.Error("approximate budget accepted")
	}
	tr, _ := NewTreeAgg(b, 1, 2, 10, &zeroNoise{})
	if _, err := tr.Add([]float64{math.NaN(), 0}); err == nil {
		t.Error("NaN loss accepted")
	}
	if _, err := tr.Add([]float64{0}); err == nil {
		t.Error("wrong dimension accepted")
	}
}
