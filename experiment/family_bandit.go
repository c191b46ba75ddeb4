package experiment

import (
	"context"
	"math"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
	"github.com/dpbandit/dpbandit/theory"
)

// plans is what the finite-armed and linear families share: policies
// that speak in plans (bandit.Policy) on a K-armed instance, simulated
// together by sim.Run.
type plans struct{}

func (plans) Simulator() string { return "plans" }

func (plans) Check(w World, a catalog.Spec, b privacy.Budget, T int64) error {
	_, err := a.NewPolicy(b, w.(banditWorld).setting(T))
	return err
}

func (plans) Simulate(ctx context.Context, w World, c Config, es []entry, steps sim.Steps) (*sim.Result, error) {
	mode, _ := sim.ParseMode(c.Mode)
	se := simEntries(es, func(s *bandit.Setting) *noise.Noise { return &s.Noise }, catalog.Spec.NewPolicy)
	return sim.Run(ctx, sim.Config{Env: w.(banditWorld).Instance, Horizon: c.Horizon, Runs: c.Runs, Seed: c.Seed, Workers: c.Workers,
		Checkpoints: steps.Checkpoints, Mode: mode, Now: steps.Now, Secure: steps.Secure, Progress: steps.Progress, Shard: steps.Shard, Delay: steps.Delay}, se)
}

func (plans) Trial(a catalog.Spec, c AuditConfig, nb audit.Neighbours, wrap func(noise.Noise) noise.Noise) (audit.Trial, error) {
	return banditTrial(a, c, nb, wrap)
}

// Curves evaluates, for rewards in [0,1], the entry's upper bound and the
// minimax lower bound of Theorem 17 (seed 001) at every checkpoint, each
// capped at t times the largest gap. The
// lower bound applies to zCDP budgets with rho <= 1 (pure budgets
// converted to eps^2/2) and to non-private entries.
func (plans) Curves(ww World, e entry, _ int64, ts []int64) (upper, lower []float64) {
	w := ww.(banditWorld)
	if _, drifting := w.Instance.(*env.Drifting); drifting || w.Instance.Bounds() != mechanism.Unit {
		return nil, nil // the bounds are for stationary rewards in [0, 1]
	}
	gaps := env.Gaps(w.Means())
	rho := math.Inf(1)
	lowerOK := true
	if e.budget.IsPrivate() {
		r, err := e.budget.ToZCDP()
		rho, lowerOK = r, err == nil && r <= 1
	}
	if e.algo.Bound != nil {
		if _, ok := e.algo.Bound(e.algo.Args(), e.budget, gaps, ts[len(ts)-1]); ok {
			upper = make([]float64, len(ts))
			for c, t := range ts {
				v, ok := e.algo.Bound(e.algo.Args(), e.budget, gaps, t)
				upper[c] = v
				if !ok || t < 2 {
					upper[c] = math.NaN()
				}
			}
		}
	}
	if lowerOK {
		lower = make([]float64, len(ts))
		for c, t := range ts {
			v, err := theory.FiniteArmedLower(len(gaps), t, rho)
			lower[c] = v
			if err != nil {
				lower[c] = math.NaN()
			}
		}
	}
	// No bound says more than t times the largest gap, the most any
	// policy can regret: a larger upper bound is vacuous, a larger lower
	// bound outside its regime; both are drawn capped there.
	for c, t := range ts {
		_, most := w.regretRange(t)
		for _, curve := range [][]float64{upper, lower} {
			if curve != nil && curve[c] > most {
				curve[c] = most
			}
		}
	}
	return upper, lower
}

// banditTrial builds the audit trial of a bandit algorithm (finite-armed
// or linear), after building it once to report a budget it cannot use.
func banditTrial(a catalog.Spec, c AuditConfig, nb audit.Neighbours, wrap func(noise.Noise) noise.Noise) (audit.Trial, error) {
	build := func(s bandit.Setting) (bandit.Policy, error) { return a.NewPolicy(c.Budget, s) }
	if c.Break == "redraw" {
		build = func(s bandit.Setting) (bandit.Policy, error) { return a.Redraw(a.Args(), c.Budget, s) }
	}
	if _, err := build(bandit.Setting{Arms: c.Arms, Horizon: c.Horizon, Bounds: mechanism.Unit, Actions: nb.Actions,
		Rand: noise.Stream(0), Noise: noise.NewFast(0)}); err != nil {
		return nil, err
	}
	return audit.PolicyTrial(build, nb, 1000, c.Seed, wrap)
}
