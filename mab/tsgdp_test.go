package mab

import (
	"context"
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/stat"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// drawLog records every Gaussian release (statistic, standard deviation,
// sensitivity) and returns the statistic plus draw(i) standard deviations.
type drawLog struct {
	x, sigma, sens []float64
	draw           func(i int) float64
}

func (d *drawLog) AddGaussian(x, sigma, sens float64) (float64, error) {
	z := 0.0
	if d.draw != nil {
		z = d.draw(len(d.x))
	}
	d.x, d.sigma, d.sens = append(d.x, x), append(d.sigma, sigma), append(d.sens, sens)
	return x + z*sigma, nil
}

func (d *drawLog) AddLaplace(float64, float64, float64) (float64, error) {
	return 0, errors.New("TS-GDP draws no Laplace noise")
}

// tsSetting is a K-armed unit-range setting of horizon T.
func tsSetting(k int, T int64, nz noise.Noise) bandit.Setting {
	s := setting(k, nz)
	s.Horizon = T
	return s
}

func zcdp(t *testing.T, rho float64) privacy.Budget {
	t.Helper()
	b, err := privacy.NewZCDP(rho)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTSGDPPrepullsThenGaussianDraws: b pre-pulls per arm as one plan
// each, then, at every step, one Gaussian release per arm of
// S/(k+1) with standard deviation sqrt(c/(k+1)) and sensitivity
// 1/(k+1), c = D/(2 rho (b+1)) (T = 1000, K = 3, b = 4, rho = 0.5:
// D = 988, c = 988/5). A wrong pre-pull count, posterior mean (S/k) or
// variance (c/k, or c missing) fails it.
func TestTSGDPPrepullsThenGaussianDraws(t *testing.T) {
	nz := &drawLog{}
	p, err := NewTSGDP(tsSetting(3, 1000, nz), zcdp(t, 0.5), 4)
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Factor(); math.Abs(c-988.0/5) > 1e-9 || p.Prepulls() != 4 {
		t.Fatalf("c = %v, b = %d; want 988/5 and 4", c, p.Prepulls())
	}
	rewards := []float64{1, 0.5, 0} // every reward of arm a
	for a := range 3 {
		pl := p.Next()
		if pl != (bandit.Plan{Arm: a, Count: 4}) || len(nz.x) != 0 {
			t.Fatalf("pre-pull %d: plan %+v after %d draws", a, pl, len(nz.x))
		}
		if err := p.Update(bandit.Feedback{Arm: a, Count: 4, Sum: 4 * rewards[a]}); err != nil {
			t.Fatal(err)
		}
	}
	if len(nz.x) != 3 {
		t.Fatalf("%d draws after the pre-pulls, want one per arm", len(nz.x))
	}
	c := p.Factor()
	for a := range 3 {
		if want := 4 * rewards[a] / 5; math.Abs(nz.x[a]-want) > 1e-15 {
			t.Errorf("arm %d: posterior mean %v, want S/(k+1) = %v", a, nz.x[a], want)
		}
		if want := math.Sqrt(c / 5); math.Abs(nz.sigma[a]/want-1) > 1e-12 || nz.sigma[a] < want {
			t.Errorf("arm %d: standard deviation %v, want sqrt(c/(k+1)) = %v", a, nz.sigma[a], want)
		}
		if nz.sens[a] != 0.2 {
			t.Errorf("arm %d: sensitivity %v, want 1/(k+1)", a, nz.sens[a])
		}
	}
	if pl := p.Next(); pl != (bandit.Plan{Arm: 0, Count: 1}) || len(nz.x) != 3 {
		t.Fatalf("plan %+v after %d draws: want arm 0 (largest mean, no noise), one step, no new draw", pl, len(nz.x))
	}
}

// TestTSGDPSpendsRhoOnTheWorstPath: with arm 0 always drawn largest, arms
// 1 and 2 are never pulled after their pre-pulls, the path on which a
// reward of theirs enters every draw: the accountant's sum of the draws'
// rho then equals ThompsonRho, which the calibration set to rho (b >= 1),
// and the policy draws at no step after the horizon.
func TestTSGDPSpendsRhoOnTheWorstPath(t *testing.T) {
	const T, rho = 500, 0.3
	for _, b := range []int64{0, 1, 6} {
		nz := &drawLog{}
		p, err := NewTSGDP(tsSetting(3, T, nz), zcdp(t, rho), b)
		if err != nil {
			t.Fatal(err)
		}
		for step := int64(0); step < T+50; {
			pl := p.Next()
			n := min(pl.Count, 7)
			sum := 0.0
			if pl.Arm == 0 {
				sum = float64(n)
			}
			if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: n, Sum: sum}); err != nil {
				t.Fatal(err)
			}
			step += n
		}
		wantDraws := 3 * (T - 3*b)
		if got := p.Counts(); got[1] != b || got[2] != b || len(nz.x) != int(wantDraws) {
			t.Errorf("b=%d: counts %v, %d draws; want arms 1, 2 at b and %d draws", b, got, len(nz.x), wantDraws)
		}
		bound, _ := privacy.ThompsonRho(T, 3, b, p.Factor())
		// With b = 0, arms 1 and 2 are never pulled: no reward of theirs
		// to protect, and arm 0, pulled at every step, spends less.
		if s := p.Spent(); s > bound || b > 0 && math.Abs(s/rho-1) > 1e-9 {
			t.Errorf("b=%d: spent %v along the worst path, bound %v, budget %v", b, s, bound, rho)
		}
	}
}

// TestTSGDPDrawsAreGaussian: the first draw round's values, over many
// runs on real noise, have mean S/(k+1) and variance c/(k+1); each
// statistic's tolerance is 4.5 of its standard errors (the Gaussian
// mean's sd/sqrt(n), the sample variance's var sqrt(2/(n-1))).
func TestTSGDPDrawsAreGaussian(t *testing.T) {
	const runs = 4000
	var ys []float64
	var mean, variance float64
	for r := range runs {
		nz := &drawLog{}
		rec := &recordingNoise{inner: noise.NewFast(7, uint64(r)), log: nz}
		p, err := NewTSGDP(tsSetting(2, 100, rec), zcdp(t, 1), 2)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			pl := p.Next()
			if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: pl.Count, Sum: 1.5}); err != nil {
				t.Fatal(err)
			}
		}
		ys = append(ys, rec.y[0])
		mean, variance = 1.5/3, p.Factor()/3
	}
	m, v := stat.MeanVariance(ys, nil)
	if se := math.Sqrt(variance / runs); math.Abs(m-mean) > 4.5*se {
		t.Errorf("mean %v, want %v +- %v", m, mean, 4.5*se)
	}
	if se := variance * math.Sqrt(2.0/(runs-1)); math.Abs(v-variance) > 4.5*se {
		t.Errorf("variance %v, want %v +- %v", v, variance, 4.5*se)
	}
}

// recordingNoise draws from inner and records the released values.
type recordingNoise struct {
	inner noise.Noise
	log   *drawLog
	y     []float64
}

func (r *recordingNoise) AddGaussian(x, sigma, sens float64) (float64, error) {
	_, _ = r.log.AddGaussian(x, sigma, sens)
	y, err := r.inner.AddGaussian(x, sigma, sens)
	r.y = append(r.y, y)
	return y, err
}

func (r *recordingNoise) AddLaplace(x, scale, sens float64) (float64, error) {
	return r.log.AddLaplace(x, scale, sens)
}

// TestTSGDPNextIsIdempotent: asking for the plan again draws nothing.
func TestTSGDPNextIsIdempotent(t *testing.T) {
	nz := &drawLog{draw: func(i int) float64 { return float64(i%5) - 2 }}
	p, err := NewTSGDP(tsSetting(4, 100, nz), zcdp(t, 1), 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		pl, n := p.Next(), len(nz.x)
		if p.Next() != pl || len(nz.x) != n {
			t.Fatal("Next drew again")
		}
		if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: 1, Sum: 0.5}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBrokenTSGDPIgnoresComposition: the broken variant's factor meets
// rho for one draw only, 1/(2 rho (b+1)) (at least 1), far below the
// sound D/(2 rho (b+1)).
func TestBrokenTSGDPIgnoresComposition(t *testing.T) {
	p, err := BrokenTSGDP(tsSetting(3, 1000, &drawLog{}), zcdp(t, 0.05), 1)
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Factor(); math.Abs(c-5) > 1e-9 {
		t.Errorf("broken factor %v, want 1/(2 rho (b+1)) = 5", c)
	}
	sound, _ := NewTSGDP(tsSetting(3, 1000, &drawLog{}), zcdp(t, 0.05), 1)
	if c := sound.Factor(); math.Abs(c-997.0/0.2) > 1e-6 {
		t.Errorf("sound factor %v, want 997/(2 rho 2)", c)
	}
}

// TestTSGDPRefuses: bad inputs are errors, never a policy without its
// guarantee.
func TestTSGDPRefuses(t *testing.T) {
	pure, _ := privacy.NewPure(1)
	for name, build := range map[string]func() (*TSGDP, error){
		"no horizon":    func() (*TSGDP, error) { return NewTSGDP(setting(2, &drawLog{}), zcdp(t, 1), 1) },
		"pure eps":      func() (*TSGDP, error) { return NewTSGDP(tsSetting(2, 10, &drawLog{}), pure, 1) },
		"no noise":      func() (*TSGDP, error) { return NewTSGDP(tsSetting(2, 10, nil), zcdp(t, 1), 1) },
		"prepulls < -1": func() (*TSGDP, error) { return NewTSGDP(tsSetting(2, 10, &drawLog{}), zcdp(t, 1), -2) },
		"one arm":       func() (*TSGDP, error) { return NewTSGDP(tsSetting(1, 10, &drawLog{}), zcdp(t, 1), 1) },
	} {
		if _, err := build(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	p, _ := NewTSGDP(tsSetting(2, 10, &drawLog{}), zcdp(t, 1), 1)
	for _, f := range []bandit.Feedback{{Arm: 1, Count: 1}, {Arm: 0, Count: 2}, {Arm: 0, Count: 1, Sum: math.NaN()}} {
		if err := p.Update(f); !errors.Is(err, mechanism.ErrInput) {
			t.Errorf("feedback %+v against plan %+v: %v", f, p.Next(), err)
		}
	}
}

// TestTSGDPNonPrivate: without a budget it is Agrawal and Goyal's
// Gaussian Thompson sampling, c = 1 and no pre-pulls by default, drawing
// from the setting's Rand (no noise source needed), and it learns.
func TestTSGDPNonPrivate(t *testing.T) {
	p, err := NewTSGDP(tsSetting(2, 0, nil), privacy.None(), AutoPrepulls)
	if err != nil {
		t.Fatal(err)
	}
	if p.Factor() != 1 || p.Prepulls() != 0 {
		t.Errorf("c = %v, b = %d; want 1 and 0", p.Factor(), p.Prepulls())
	}
	counts := play(t, p, []float64{0.9, 0.1}, 2000, 3)
	if counts[1] > 200 {
		t.Errorf("counts %v: the arm of gap 0.8 was pulled over 200 times in 2000", counts)
	}
}

// TestTSGDPSnapshot: a restored policy continues with the same plan
// (its draws made) and the same draws after it.
func TestTSGDPSnapshot(t *testing.T) {
	build := func(seed uint64) *TSGDP {
		p, err := NewTSGDP(tsSetting(3, 200, noise.NewFast(seed)), zcdp(t, 1), AutoPrepulls)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := build(1)
	play(t, p, []float64{0.2, 0.5, 0.7}, 150, 4)
	b, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	q := build(9)
	if err := q.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if p.Next() != q.Next() || p.Spent() != q.Spent() || p.Counts()[2] != q.Counts()[2] {
		t.Errorf("restored: plan %+v, spent %v; want %+v, %v", q.Next(), q.Spent(), p.Next(), p.Spent())
	}
	if err := q.UnmarshalBinary(b[:len(b)/2]); err == nil {
		t.Error("a truncated snapshot was restored")
	}
}

// TestTSGDPReleaseAudit: audited through its releases (every draw, the
// exact privacy loss of those the pair moves) on audit.Hard over 10 arms
// and 110 steps with one pre-pull each (100 steps of draws, c = 250 at
// rho = 0.1), the sound policy passes and the variant calibrated for one
// draw (c = 2.5: 100 times the budget over the run) fails. The verdicts
// are those of audit.Empirical's 95% lower bound on eps against the claim
// at delta = 10^-3, rho + 2 sqrt(rho ln 1000) = 1.76.
func TestTSGDPReleaseAudit(t *testing.T) {
	const rho, delta = 0.1, 1e-3
	claimed, _ := privacy.ZCDPToApprox(rho, delta)
	for _, tc := range []struct {
		name   string
		build  func(bandit.Setting, privacy.Budget, int64) (*TSGDP, error)
		leaks  bool
		factor float64
	}{{"sound", NewTSGDP, false, 250}, {"one-draw calibration", BrokenTSGDP, true, 2.5}} {
		build := func(s bandit.Setting) (bandit.Policy, error) { return tc.build(s, zcdp(t, rho), 1) }
		nb := audit.Hard(10, 110)
		nb.First = [2]float64{1, 0}
		s := tsSetting(10, 110, &drawLog{})
		if p, _ := tc.build(s, zcdp(t, rho), 1); math.Abs(p.Factor()-tc.factor) > 1e-9 {
			t.Fatalf("%s: c = %v, want %v", tc.name, p.Factor(), tc.factor)
		}
		drive, err := audit.BanditDrive(build, nb, 5)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := audit.ReleaseTrial(drive, false, 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := audit.Empirical(context.Background(), tr, audit.Options{Runs: 2000, Delta: delta, Confidence: 0.95, Workers: 1, Ordered: true})
		if err != nil {
			t.Fatal(err)
		}
		if leaks := r.EpsLo > claimed; leaks != tc.leaks {
			t.Errorf("%s: eps_lo = %v against the claimed %v", tc.name, r.EpsLo, claimed)
		}
		t.Logf("%s: eps_lo = %.3f (claimed %.3f)", tc.name, r.EpsLo, claimed)
	}
}
