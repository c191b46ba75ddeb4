package theory

import (
	"math"
	"testing"
)

func TestAdaCUCBHandEvaluated(t *testing.T) {
	// Two suboptimal arms with gaps 0.5 and 0.25, T = e^4, rho = 1, beta = 4:
	// (8*4/0.5*4 + 8*2*2 + 8) + (8*4/0.25*4 + 8*2*2 + 8) = 296 + 552 = 848.
	got, err := AdaCUCB([]float64{0, 0.5, 0.25}, int64(math.Round(math.Exp(4))), 1, 4)
	want := 8*4/0.5*math.Log(55) + 8*2*math.Sqrt(math.Log(55)) + 8 + 8*4/0.25*math.Log(55) + 8*2*math.Sqrt(math.Log(55)) + 8
	if err != nil || math.Abs(got-want) > 1e-9 {
		t.Errorf("got %v, %v; want %v", got, err, want)
	}
	for _, bad := range [][3]float64{{1, 3, 100}, {0, 4, 100}, {1, 4, 1}} {
		if _, err := AdaCUCB([]float64{0, 1}, int64(bad[2]), bad[0], bad[1]); err == nil {
			t.Errorf("rho=%v beta=%v T=%v accepted", bad[0], bad[1], bad[2])
		}
	}
}

func TestMinimaxConvertedLower(t *testing.T) {
	gaps := []float64{0, 0.5, 0.25}
	T := int64(1000)
	l := math.Log(1000)
	got, _ := AdaCUCBMinimax(gaps, T, 0.5, 4)
	want := 4*math.Sqrt(2*4*3*1000*l) + 8*3*math.Sqrt(4*l/0.5) + 3*4/(4-3)*0.75
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("Theorem 11: %v, want %v", got, want)
	}
	got, _ = ConvertedPureDP(gaps, T, 0.5, 4)
	want = 8*4/0.5*l + 8*math.Sqrt(8)*l + 8*4/0.25*l + 8*math.Sqrt(8)*l
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("Table II: %v, want %v", got, want)
	}
	// T large: the non-private term wins; rho small: the private one.
	if got, _ := FiniteArmedLower(5, 1e6, 0.5); math.Abs(got-2000.0/27) > 1e-9 {
		t.Errorf("Theorem 17 (T term): %v", got)
	}
	if got, _ := FiniteArmedLower(5, 10, 1e-6); math.Abs(got-2000.0/124) > 1e-9 {
		t.Errorf("Theorem 17 (rho term): %v", got)
	}
	for _, bad := range []struct {
		k   int
		T   int64
		rho float64
	}{{1, 10, 0.5}, {5, 3, 0.5}, {5, 10, 2}, {5, 10, 0}} {
		if _, err := FiniteArmedLower(bad.k, bad.T, bad.rho); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestDPSEPullsByHand(t *testing.T) {
	// gap 0.3: eliminated at the end of epoch 2 (2^-2 = 0.25 < 0.3).
	// K = 2, beta = 0.1, eps = 1:
	// e=1: 8Ke^2/beta = 160, 4Ke^2/beta = 80:
	//      max(32 ln(160)/0.25, 8 ln(80)/0.5) + 1 -> ceil
	// e=2: max(32 ln(640)/0.0625, 8 ln(320)/0.25) + 1 -> ceil
	want := math.Ceil(math.Max(32*math.Log(160)/0.25, 8*math.Log(80)/0.5)+1) +
		math.Ceil(math.Max(32*math.Log(640)/0.0625, 8*math.Log(320)/0.25)+1)
	if got, _ := DPSEPulls(0.3, 2, 0.1, 1, 1e9); got != want {
		t.Errorf("got %v, want %v", got, want)
	}
	if got, _ := DPSEPulls(0.3, 2, 0.1, 1, 100); got != 100 {
		t.Errorf("cap at T: %v", got)
	}
	// Small eps: the privacy term dominates R_e.
	a, _ := DPSEPulls(0.3, 2, 0.1, 1e-3, 1e12)
	b, _ := DPSEPulls(0.3, 2, 0.1, math.Inf(1), 1e12)
	if a <= b {
		t.Errorf("eps=1e-3 gives %v pulls, non-private %v", a, b)
	}
}
