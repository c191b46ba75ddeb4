package linear

import (
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// calibrationCount is a noise source that counts the Gaussian
// calibrations made on it: each asks whether the source is discrete
// (mechanism.CalibrateGaussian), and it is not.
type calibrationCount struct {
	noise.Noise
	n int
}

func (c *calibrationCount) Discrete() bool { c.n++; return false }

// TestGOPECalibratesOnce: AdaC-GOPE and AdaR-GOPE-Var calibrate the
// Gaussian mechanism to the budget once (for an (eps,delta) budget, the
// analytic Gaussian's bisection), not again at every phase's release.
func TestGOPECalibratesOnce(t *testing.T) {
	l := instance(t, "linear-sphere:k=10,d=3", 2)
	b, _ := privacy.NewApprox(0.9, 1e-6)
	for _, v := range []Variant{NoiseTheta, NoiseSums} {
		s := settingFor(l, 1e6, 2)
		nz := &calibrationCount{Noise: s.Noise}
		s.Noise = nz
		p, err := NewGOPE(s, b, 0.001, 0.01, v)
		if err != nil {
			t.Fatal(err)
		}
		for p.phase <= 3 {
			pl := p.Next()
			if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: pl.Count, Sum: 0}); err != nil {
				t.Fatal(err)
			}
		}
		if p.Sigma == 0 || nz.n != 1 {
			t.Errorf("variant %v: %d calibrations over 3 phases (sigma %v), want 1", v, nz.n, p.Sigma)
		}
	}
}
