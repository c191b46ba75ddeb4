package sparse

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpbandit/dpbandit/noise"
)

// scaled divides every Laplace scale by f: a deliberately broken noise.
type scaled struct {
	noise.Noise
	f float64
}

func (s scaled) AddLaplace(x, scale, sens float64) (float64, error) {
	return s.Noise.AddLaplace(x, scale/s.f, sens)
}

// TestPrivateScreenNoiseAndPrivacy runs one round of the screen on two
// neighbouring one-row datasets in d = 2: A = ((0, 1), r = 1), c = (0, 1);
// B = ((1, 0), r = 1), c = (1, 0). With R = 1 and n = 1, Delta = 2 and
// b = 2 Delta/eps = 4/eps, so P_A(0) = P(L0 - L1 > 1) = q and P_B(0) =
// 1 - q with q = e^{-1/b} (1 + 1/(2b))/2 (the difference of two Lap(b)).
// The test checks q (a wrong noise constant moves it) and the eps-DP
// ratio; the broken variant (noise / 10) must break the ratio.
func TestPrivateScreenNoiseAndPrivacy(t *testing.T) {
	const eps, n = 1.0, 40000
	run := func(nz noise.Noise, x []float64) float64 {
		hits := 0
		for range n {
			s, err := PrivateScreen([][]float64{x}, []float64{1}, 1, eps, 1, nz)
			if err != nil {
				t.Fatal(err)
			}
			if s[0] == 0 {
				hits++
			}
		}
		return float64(hits) / n
	}
	b := 4 / eps
	q := math.Exp(-1/b) * (1 + 1/(2*b)) / 2
	sd := math.Sqrt(q * (1 - q) / n)
	pa, pb := run(noise.NewFast(1), []float64{0, 1}), run(noise.NewFast(2), []float64{1, 0})
	if math.Abs(pa-q) > 5*sd || math.Abs(pb-(1-q)) > 5*sd {
		t.Fatalf("P_A(0) = %v, P_B(0) = %v; want %v and %v (sd %v)", pa, pb, q, 1-q, sd)
	}
	if pb/pa > math.Exp(eps) || (1-pa)/(1-pb) > math.Exp(eps) {
		t.Fatalf("ratios %v and %v exceed e^eps", pb/pa, (1-pa)/(1-pb))
	}
	ba, bb := run(scaled{noise.NewFast(3), 10}, []float64{0, 1}), run(scaled{noise.NewFast(4), 10}, []float64{1, 0})
	if bb/ba <= math.Exp(eps) {
		t.Fatalf("the broken screen (noise / 10) passes: ratio %v", bb/ba)
	}
}

// TestPrivateScreenRecovers: isotropic contexts in d = 200 rescaled to
// norm 1, theta* with 5 coefficients of 0.45, n = 20000: E c_j = theta_j
// / d = 2.2e-3 on the support, the sampling sd of c_j about 2e-4 and the
// Laplace scale 2 k Delta/eps = 2e-5 at eps = 50: the screen returns the
// support. At eps = 10^-3 (scale 1) it is noise: recall near 5/200.
func TestPrivateScreenRecovers(t *testing.T) {
	const d, n, k = 200, 20000, 5
	r := rand.New(rand.NewPCG(3, 3))
	theta := make([]float64, d)
	supp := []int{3, 50, 77, 120, 199}
	for _, j := range supp {
		theta[j] = 0.45
	}
	x, y := make([][]float64, n), make([]float64, n)
	for s := range x {
		x[s] = make([]float64, d)
		var nn float64
		for j := range d {
			x[s][j] = r.NormFloat64()
			nn += x[s][j] * x[s][j]
		}
		m := 0.0
		for j := range d {
			x[s][j] /= math.Sqrt(nn)
			m += theta[j] * x[s][j]
		}
		y[s] = math.Max(-1, math.Min(1, m+0.1*r.NormFloat64()))
	}
	got, err := PrivateScreen(x, y, k, 50, 1, noise.NewFast(5))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, supp) {
		t.Fatalf("support %v, want %v", got, supp)
	}
	found := 0
	for trial := range 20 {
		got, _ := PrivateScreen(x, y, k, 1e-3, 1, noise.NewFast(uint64(10+trial)))
		for _, j := range got {
			if slices.Contains(supp, j) {
				found++
			}
		}
	}
	// 100 draws of 5 from 200 with 5 marked: about 2.5 hits expected.
	if found > 12 {
		t.Fatalf("at eps = 1e-3 the screen found %d of 100 support coordinates: its noise is too small", found)
	}
}
