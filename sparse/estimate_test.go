package sparse

import (
	"math"
	"slices"
	"testing"

	"github.com/dpbandit/dpbandit/noise"
)

func estimationConfig(eps float64) EstimationConfig {
	return EstimationConfig{Lambda: 0.01, S0: 3, SBar: 1, CTheta: 1, Eps1: eps, Delta1: 1e-6, D: 100, T: 10000}
}

// TestSparseEstimationNoiselessLimit: at an enormous eps_1 the noise and
// Gamma vanish, so S_1 is the coordinates of magnitude above 4 lambda_t
// (002's screen, negative coefficients included) cut after c = s0 +
// sqrt(sbar) = 4 coordinates.
func TestSparseEstimationNoiselessLimit(t *testing.T) {
	theta := make([]float64, 100)
	theta[3], theta[10], theta[42] = 0.5, -0.4, 0.03
	theta[50] = 0.039 // below the screen at 4 lambda = 0.04
	c := estimationConfig(1e12)
	if g := c.Gamma(); g != 0 {
		t.Fatalf("Gamma %v at eps 1e12, want 0 (clamped)", g)
	}
	s, err := SparseEstimation(theta, c, noise.NewFast(1))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s, []int{3, 10}) {
		t.Errorf("S_1 = %v, want [3 10]: magnitudes above the screen", s)
	}
	for i := range 20 {
		theta[60+i] = 0.2
	}
	s, _ = SparseEstimation(theta, c, noise.NewFast(1))
	if !slices.Equal(s, []int{3, 10, 60, 61}) {
		t.Errorf("S_1 = %v, want the first c = 4 screened coordinates", s)
	}
}

// TestSparseEstimationGamma: 002's Gamma at eps_1 = 1, delta_1 = 10^-6,
// sbar = 1: xi = 16 ln(10^6) = 221.04, Gamma = (xi ln((1 - 10^-6)/10^-6)
// - 1)/sqrt(ln 100 ln 10^4) - 1, computed here independently.
func TestSparseEstimationGamma(t *testing.T) {
	c := estimationConfig(1)
	l := math.Log(1e6)
	xi := 16 * l
	want := (xi*math.Log((1-1e-6)/1e-6)-1)/math.Sqrt(math.Log(100)*math.Log(10000)) - 1
	if got := c.Gamma(); math.Abs(got-want) > 1e-9*want {
		t.Errorf("Gamma %v, want %v", got, want)
	}
}

func TestSparseEstimationBadInput(t *testing.T) {
	theta := []float64{0.5, math.NaN()}
	if _, err := SparseEstimation(theta, estimationConfig(1), noise.NewFast(1)); err == nil {
		t.Error("a NaN coordinate accepted")
	}
	for _, c := range []EstimationConfig{
		{Lambda: 0, S0: 3, SBar: 1, CTheta: 1, Eps1: 1, Delta1: 1e-6, D: 100, T: 100},
		{Lambda: 0.1, S0: 3, SBar: 1, CTheta: 1, Eps1: 1, Delta1: 0, D: 100, T: 100},
		{Lambda: 0.1, S0: 3, SBar: 1, CTheta: 1, Eps1: 0, Delta1: 0.1, D: 100, T: 100},
		{Lambda: 0.1, S0: 0, SBar: 1, CTheta: 1, Eps1: 1, Delta1: 0.1, D: 100, T: 100},
	} {
		if _, err := SparseEstimation([]float64{0.5, 0.2}, c, noise.NewFast(1)); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
}
