package stattest

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestKolmogorovQKnownValues(t *testing.T) {
	// Q(1.358) = 0.05 and Q(1.628) = 0.01 are the classical critical values.
	for _, c := range []struct{ l, q float64 }{{1.358, 0.05}, {1.628, 0.01}, {0.1, 1}} {
		if got := kolmogorovQ(c.l); math.Abs(got-c.q) > 1e-3 {
			t.Errorf("Q(%v) = %v, want %v", c.l, got, c.q)
		}
	}
}

func TestTestsAcceptAndReject(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x, y, z := make([]float64, 3000), make([]float64, 3000), make([]float64, 3000)
	for i := range x {
		x[i], y[i], z[i] = r.Float64(), r.Float64(), r.Float64()*1.1
	}
	if _, p := KSOne(x, func(v float64) float64 { return math.Min(math.Max(v, 0), 1) }); p < 1e-3 {
		t.Errorf("uniform sample rejected: p=%v", p)
	}
	if _, p := KSTwo(x, y); p < 1e-3 {
		t.Errorf("two uniform samples rejected: p=%v", p)
	}
	if _, p := KSTwo(x, z); p > 1e-3 {
		t.Errorf("U(0,1) vs U(0,1.1) accepted: p=%v", p)
	}
	// Exact expectations give p = 1; counts off by far give p ~ 0.
	pmf := func(k int64) float64 { return []float64{0.2, 0.3, 0.5}[k] }
	if p, df := ChiSquare([]int{200, 300, 500}, 0, pmf); p < 0.999 || df != 2 {
		t.Errorf("exact counts: p=%v df=%d", p, df)
	}
	if p, _ := ChiSquare([]int{300, 300, 400}, 0, pmf); p > 1e-6 {
		t.Errorf("wrong counts accepted: p=%v", p)
	}
}
