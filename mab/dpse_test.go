package mab

import (
	"math"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/theory"
)

var fiveMeans = []float64{0.75, 0.625, 0.5, 0.375, 0.25}

func TestDPSEEpochLengthAndNoise(t *testing.T) {
	nz := &laplaceCounter{}
	b, _ := privacy.NewPure(1)
	p, err := NewDPSE(setting(5, nz), b, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	// Epoch 1: Delta = 1/2, |S| = 5: R_1 = max(32 ln(8*5/0.05)/0.25, 8 ln(4*5/0.05)/(1*0.5)) + 1.
	r1 := math.Ceil(math.Max(32*math.Log(800)/0.25, 8*math.Log(400)/0.5) + 1)
	if pl := p.Next(); pl.Count != int64(r1) || pl.Arm != 0 {
		t.Fatalf("first plan %+v, want %v pulls of arm 0", pl, r1)
	}
	for a := range 5 {
		pl := p.Next()
		if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: pl.Count, Sum: fiveMeans[a] * float64(pl.Count)}); err != nil {
			t.Fatal(err)
		}
	}
	// One Laplace draw per surviving arm, of scale 1/(eps r).
	if nz.draws != 5 {
		t.Errorf("%d draws after epoch 1, want 5", nz.draws)
	}
	for _, s := range nz.scales {
		if math.Abs(s-1/r1) > 1e-12 {
			t.Errorf("scale %v, want 1/(eps r) = %v", s, 1/r1)
		}
	}
	// With exact means (no noise added by laplaceCounter), h_1 = sqrt(ln 800/(2 R_1)),
	// c_1 = ln(400)/R_1 with R_1 = r1 - fractional part: arms more than 2h+2c below 0.75 go.
	rr := math.Max(32*math.Log(800)/0.25, 8*math.Log(400)/0.5) + 1
	thr := 2*math.Sqrt(math.Log(800)/(2*rr)) + 2*math.Log(400)/rr
	for _, a := range p.Active() {
		if 0.75-fiveMeans[a] > thr {
			t.Errorf("arm %d survived with gap %v > %v", a, 0.75-fiveMeans[a], thr)
		}
	}
	if len(p.Active()) == 5 && 0.5 > thr {
		t.Errorf("nothing eliminated although threshold %v < 0.5", thr)
	}
}

// TestDPSELemma41: on the 5-arm instance, each suboptimal arm is pulled no
// more than the explicit Lemma 4.1 bound (theory.DPSEPulls) and the best
// arm survives, in at least 1 - beta of the runs.
func TestDPSELemma41(t *testing.T) {
	const runs, beta, T = 200, 0.05, 2_000_000
	for _, eps := range []float64{0.05, 1} {
		b, _ := privacy.NewPure(eps)
		bad := 0
		for run := range uint64(runs) {
			p, _ := NewDPSE(setting(5, noise.Fast{R: noise.Stream(50, run)}), b, beta)
			c := play(t, p, fiveMeans, T, 60+run)
			ok := true
			for a := 1; a < 5; a++ {
				bound, _ := theory.DPSEPulls(0.75-fiveMeans[a], 5, beta, eps, T)
				ok = ok && float64(c[a]) <= bound
			}
			if len(p.Active()) == 1 && p.Active()[0] != 0 {
				ok = false
			}
			if !ok {
				bad++
			}
		}
		if bad > runs*beta {
			t.Errorf("eps=%v: %d of %d runs broke Lemma 4.1", eps, bad, runs)
		}
	}
}

func TestDPSENonPrivateAndErrors(t *testing.T) {
	p, err := NewDPSE(setting(5, nil), privacy.None(), 0.05)
	if err != nil {
		t.Fatal(err)
	}
	c := play(t, p, fiveMeans, 1_000_000, 3)
	if c[0] < 900_000 {
		t.Errorf("successive elimination played the best arm %d times of 10^6", c[0])
	}
	if _, err := NewDPSE(setting(5, nil), privacy.None(), 1.5); err == nil {
		t.Error("beta=1.5 accepted")
	}
	r, _ := privacy.NewRenyi(2, 1)
	if _, err := NewDPSE(setting(5, &countingNoise{}), r, 0.1); err == nil {
		t.Error("Renyi budget accepted")
	}
}
