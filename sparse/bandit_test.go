package sparse

import (
	"math"
	"slices"
	"testing"

	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/mechanism"
)

// play runs p for T steps of run 0 of c and returns its regret.
func play(t *testing.T, p contextual.Policy, c *env.Contextual, T int) float64 {
	t.Helper()
	r := c.NewRun(1, 0)
	reg := 0.0
	for range T {
		acts := r.Next()
		k, err := p.Choose(acts)
		if err != nil {
			t.Fatal(err)
		}
		best := math.Inf(-1)
		for _, a := range acts {
			best = math.Max(best, r.Value(a))
		}
		reg += best - r.Value(acts[k])
		if err := p.Update(r.Reward(acts[k])); err != nil {
			t.Fatal(err)
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
