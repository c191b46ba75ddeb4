package privacy

import (
	"math"
	"testing"
)

// A calibration computed once gives, at every sensitivity, the very bits
// GaussianSigma and LaplaceScale compute from the budget each time.
func TestCalibrationIsTheOneShotScale(t *testing.T) {
	must := func(b Budget, err error) Budget {
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, m := range []struct {
		calibrate func(Budget) (Calibration, error)
		oneShot   func(Budget, float64) (float64, error)
		budgets   []Budget
	}{
		{CalibrateGaussian, GaussianSigma, []Budget{must(NewZCDP(0.37)), must(NewApprox(0.9, 1e-6)), must(NewApprox(3, 1e-9)), must(NewRenyi(4, 1.3))}},
		{CalibrateLaplace, LaplaceScale, []Budget{must(NewPure(0.7)), must(NewApprox(1.1, 1e-5)), must(NewZCDP(0.37))}},
	} {
		for _, b := range m.budgets {
			c, err := m.calibrate(b)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range []float64{1, 0.5, 1.0 / 3, 1.0 / 7777, 2.5, 1e-300, 1e300, 0, math.NaN()} {
				want, werr := m.oneShot(b, l)
				got, gerr := c.Scale(l)
				if math.Float64bits(got) != math.Float64bits(want) || (werr == nil) != (gerr == nil) {
					t.Errorf("%s at %v: %v (%v), want %v (%v)", b, l, got, gerr, want, werr)
				}
			}
		}
	}
}

// A calibration's scale comes from the factor it holds, not from its
// budget again: one doctored to a root of 2 gives up(2 l).
func TestCalibrationUsesItsFactor(t *testing.T) {
	b, _ := NewApprox(0.9, 1e-6)
	c := Calibration{b: b, root: 2}
	if got, err := c.Scale(0.25); err != nil || got != up(0.5) {
		t.Errorf("sigma %v (%v), want %v", got, err, up(0.5))
	}
	l := Calibration{b: b, eps: 4}
	if got, err := l.Scale(1); err != nil || got != up(0.25) {
		t.Errorf("scale %v (%v), want %v", got, err, up(0.25))
	}
}

// Refusals: a budget the mechanism cannot meet fails at calibration,
// a bad sensitivity at the scale.
func TestCalibrationRefuses(t *testing.T) {
	pure, _ := NewPure(1)
	renyi, _ := NewRenyi(2, 1)
	if _, err := CalibrateGaussian(pure); err == nil {
		t.Error("Gaussian calibration of pure eps-DP accepted")
	}
	if _, err := CalibrateLaplace(renyi); err == nil {
		t.Error("Laplace calibration of a Renyi budget accepted")
	}
	if _, err := CalibrateGaussian(None()); err == nil {
		t.Error("Gaussian calibration of a non-private budget accepted")
	}
	c, _ := CalibrateLaplace(pure)
	for _, l := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := c.Scale(l); err == nil {
			t.Errorf("sensitivity %v accepted", l)
		}
	}
}
