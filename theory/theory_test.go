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
