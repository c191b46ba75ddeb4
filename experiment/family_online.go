package experiment

import (
	"context"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/olo"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
)

// onlineFamily is the family of online learning (seed 003): loss
// sequences, full-information learners and adversarial bandits
// (olo.Learner), simulated by sim.RunOLO with exact regret.
type onlineFamily struct{}

func (onlineFamily) Kind() catalog.Kind { return catalog.Online }
func (onlineFamily) Envs() []string {
	return []string{"experts-iid", "experts-switching", "ball", "cube"}
}
func (onlineFamily) Simulator() string { return "olo" }

func (onlineFamily) Runs(w World) bool {
	_, ok := w.(onlineWorld)
	return ok
}

func (onlineFamily) Neighbours(k int, T int64) audit.Neighbours { return audit.Hard(k, T) }

func (onlineFamily) Trial(a catalog.Spec, c AuditConfig, _ audit.Neighbours, wrap func(noise.Noise) noise.Noise) (audit.Trial, error) {
	build := func(s olo.Setting) (olo.Learner, error) { return a.NewLearner(c.Budget, s) }
	if _, err := build(olo.Setting{N: c.Arms, T: 1000, Set: a.Set, Rand: noise.Stream(0), Noise: noise.NewFast(0)}); err != nil {
		return nil, err
	}
	return audit.OLOTrial(build, a.Set, c.Arms, 1000, [2]float64{1, 0}, c.Seed, wrap)
}

// learner builds one instance of an online learner for the loss
// sequence, on a fixed stream (for checks and bounds).
func learner(w onlineWorld, a catalog.Spec, b privacy.Budget, T int64) (olo.Learner, error) {
	return a.NewLearner(b, olo.Setting{N: w.N, T: T, Set: w.Set(), Rand: noise.Stream(0), Noise: noise.NewFast(0)})
}

func (onlineFamily) Check(w World, a catalog.Spec, b privacy.Budget, T int64) error {
	_, err := learner(w.(onlineWorld), a, b, T)
	return err
}

func (onlineFamily) Simulate(ctx context.Context, w World, _ Config, es []entry, steps sim.Steps) (*sim.Result, error) {
	oe := simEntries(es, func(s *olo.Setting) *noise.Noise { return &s.Noise }, catalog.Spec.NewLearner)
	return sim.RunOLO(ctx, sim.OLOConfig{Env: w.(onlineWorld).Losses, Steps: steps}, oe)
}

// Curves evaluates the learner's explicit regret bound (olo.Bounder) at
// every checkpoint, if it has one.
func (onlineFamily) Curves(w World, e entry, T int64, ts []int64) (upper, lower []float64) {
	l, err := learner(w.(onlineWorld), e.algo, e.budget, T)
	b, ok := l.(olo.Bounder)
	if err != nil || !ok {
		return nil, nil
	}
	upper = make([]float64, len(ts))
	for i, t := range ts {
		upper[i] = b.Bound(t)
	}
	return upper, nil
}
