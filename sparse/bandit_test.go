package sparse

import (
	"math"
	"slices"
	"testing"

	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// play runs p for T steps of run 0 of c and returns its regret.
func play(t *testing.T, p contextual.Policy, c *env.Contextual, T int) float64 {
	t.Helper()
	return playRun(t, p, c, T, 0)
}

// playRun is play on the run-th run of the environment.
func playRun(t *testing.T, p contextual.Policy, c *env.Contextual, T int, run uint64) float64 {
	t.Helper()
	return playRuns(t, []contextual.Policy{p}, c, T, run)[0]
}

// playRuns plays policies side by side on one run: each sees the same
// contexts and reward noise as it would alone (the run draws them per
// step, whatever is chosen), which are drawn once for all.
func playRuns(t *testing.T, ps []contextual.Policy, c *env.Contextual, T int, run uint64) []float64 {
	t.Helper()
	r := c.NewRun(1, run)
	reg := make([]float64, len(ps))
	for range T {
		acts := r.Next()
		best := math.Inf(-1)
		for i := range acts {
			best = math.Max(best, r.Value(i))
		}
		for j, p := range ps {
			k, err := p.Choose(acts)
			if err != nil {
				t.Fatal(err)
			}
			reg[j] += best - r.Value(k)
			if err := p.Update(r.Reward(k)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return reg
}

// TestLassoBanditRecovers: with its default lambda0 = 0.05, the LASSO
// bandit recovers the support of the preset's instances exactly, at
// d = 100 and d = 1000 (s0 = 5, K = 10), by its re-estimation at t =
// 4096, and its regret is far below the greedy-on-nothing rate.
func TestLassoBanditRecovers(t *testing.T) {
	for _, d := range []string{"100", "1000"} {
		c, err := env.ParseContextual("sparse-gauss:k=10,d="+d+",s=5", 3)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewLassoBandit(contextual.Setting{Dim: c.D, Horizon: 5000, Bounds: c.Range}, Config{Lambda0: 0.05, CTheta: 1, Ridge: 1e-3})
		if err != nil {
			t.Fatal(err)
		}
		reg := play(t, p, c, 5000)
		if got, want := p.Support(), c.Support(); !slices.Equal(got, want) {
			t.Errorf("d = %s: support %v, want %v", d, got, want)
		}
		if p.Episodes() != 13 {
			t.Errorf("d = %s: %d re-estimations, want 13 (t = 1, 2, ..., 4096)", d, p.Episodes())
		}
		t.Logf("d = %s: regret %.1f over 5000 steps", d, reg)
	}
}

func TestLassoBanditRejectsBadInput(t *testing.T) {
	s := contextual.Setting{Dim: 3, Horizon: 10, Bounds: mechanism.Unit}
	for _, c := range []Config{{0, 1, 1e-3}, {math.Inf(1), 1, 1e-3}, {1, 0, 1e-3}, {1, 1, 0}} {
		if _, err := NewLassoBandit(s, c); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
	p, _ := NewLassoBandit(s, Config{0.05, 1, 1e-3})
	if _, err := p.Choose([][]float64{{2, 0, 0}}); err == nil {
		t.Error("an action of norm 2 accepted")
	}
	if err := p.Update(0.5); err == nil {
		t.Error("Update without Choose accepted")
	}
	if _, err := p.Choose([][]float64{{0.5, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	if err := p.Update(math.NaN()); err == nil {
		t.Error("a NaN reward accepted")
	}
}

// TestPrivateLassoNoiselessLimit: at eps = 10^9 the noise vanishes (the
// sparse vector pass is the screen, the Wishart tree adds a negligible
// ridge), so PrivateThresholdLASSO recovers the support as the LASSO
// bandit does.
func TestPrivateLassoNoiselessLimit(t *testing.T) {
	c, err := env.ParseContextual("sparse-gauss:k=10,d=100,s=5", 3)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := privacy.NewApprox(1e9, 1e-5)
	p, err := NewPrivateLasso(contextual.Setting{Dim: c.D, Horizon: 5000, Bounds: c.Range, Noise: noise.NewFast(1)}, b,
		PrivateConfig{Config: Config{Lambda0: 0.05, CTheta: 1, Ridge: 1e-3}, S0: 5, SBar: 1})
	if err != nil {
		t.Fatal(err)
	}
	reg := play(t, p, c, 5000)
	if got, want := p.Support(), c.Support(); !slices.Equal(got, want) {
		t.Errorf("support %v, want %v", got, want)
	}
	if reg > 100 {
		t.Errorf("regret %v over 5000 steps at eps = 10^9", reg)
	}
}

func TestPrivateLassoRejectsBadInput(t *testing.T) {
	s := contextual.Setting{Dim: 3, Horizon: 100, Bounds: mechanism.Unit, Noise: noise.NewFast(1)}
	cfg := PrivateConfig{Config: Config{Lambda0: 0.05, CTheta: 1, Ridge: 1e-3}, S0: 2, SBar: 1}
	rho, _ := privacy.NewZCDP(1)
	if _, err := NewPrivateLasso(s, rho, cfg); err == nil {
		t.Error("a zCDP budget accepted")
	}
	if _, err := NewPrivateLasso(s, privacy.None(), cfg); err == nil {
		t.Error("no budget accepted")
	}
	b, _ := privacy.NewApprox(1, 1e-5)
	s2 := s
	s2.Noise = nil
	if _, err := NewPrivateLasso(s2, b, cfg); err == nil {
		t.Error("no noise source accepted")
	}
	bad := cfg
	bad.S0 = 0
	if _, err := NewPrivateLasso(s, b, bad); err == nil {
		t.Error("s0 = 0 accepted")
	}
}

// BenchmarkPrivateLassoRun is one PrivateThresholdLASSO run, d = 1000,
// K = 10, T = 10^4, eps = 1, delta = 10^-5.
func BenchmarkPrivateLassoRun(b *testing.B) {
	c, _ := env.ParseContextual("sparse-gauss:k=10,d=1000,s=5", 3)
	bud, _ := privacy.NewApprox(1, 1e-5)
	for b.Loop() {
		p, err := NewPrivateLasso(contextual.Setting{Dim: c.D, Horizon: 10000, Bounds: c.Range, Noise: noise.NewFast(1)}, bud,
			PrivateConfig{Config: Config{Lambda0: 0.05, CTheta: 1, Ridge: 1e-3}, S0: 5, SBar: 1})
		if err != nil {
			b.Fatal(err)
		}
		r := c.NewRun(1, 0)
		for range 10000 {
			acts := r.Next()
			k, _ := p.Choose(acts)
			p.Update(r.Reward(k))
		}
	}
}

// BenchmarkSupportReestimation is one LASSO fit and screen at d = 1000,
// t = 10^4 (the cost of a re-estimation).
func BenchmarkSupportReestimation(b *testing.B) {
	c, _ := env.ParseContextual("sparse-gauss:k=10,d=1000,s=5", 3)
	r := c.NewRun(1, 0)
	var z [][]float64
	var y []float64
	for range 10000 {
		a := r.Next()[0]
		z = append(z, slices.Clone(a))
		y = append(y, r.Reward(0))
	}
	lambda := Lambda(0.05, 10000, 1000)
	for b.Loop() {
		theta, _, err := Lasso(z, y, lambda, 1, 1e-8, nil)
		if err != nil {
			b.Fatal(err)
		}
		Screen(theta, 4*lambda)
	}
}
