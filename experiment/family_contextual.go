package experiment

import (
	"context"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
)

// steps is what the contextual and sparse families share: policies that
// choose from a decision set each step (contextual.Policy), on a
// contextual world, simulated together by sim.RunContextual.
type steps struct{}

func (steps) Simulator() string { return "contextual" }

func (steps) Runs(w World) bool {
	_, ok := w.(contextualWorld)
	return ok
}

func (steps) Check(w World, a catalog.Spec, b privacy.Budget, T int64) error {
	cw := w.(contextualWorld)
	_, err := a.NewContextual(b, contextual.Setting{Dim: cw.Dim(), Horizon: T, Bounds: cw.Bounds(), Noise: noise.NewFast(0), Rand: noise.Stream(0)})
	return err
}

func (steps) Simulate(ctx context.Context, w World, _ Config, es []entry, st sim.Steps) (*sim.Result, error) {
	ce := simEntries(es, func(s *contextual.Setting) *noise.Noise { return &s.Noise }, catalog.Spec.NewContextual)
	return sim.RunContextual(ctx, sim.ContextualConfig{Env: w.(contextualWorld).Contexts, Steps: st}, ce)
}

// Curves: the contextual bandits have no explicit bound curves.
func (steps) Curves(World, entry, int64, []int64) (upper, lower []float64) { return nil, nil }

// Neighbours serves the unit vectors of R^K as every step's decision set.
func (steps) Neighbours(k int, T int64) audit.Neighbours {
	nb := audit.Hard(k, T)
	nb.Actions = audit.UnitVectors(k)
	return nb
}

func (steps) Trial(a catalog.Spec, c AuditConfig, nb audit.Neighbours, wrap func(noise.Noise) noise.Noise) (audit.Trial, error) {
	build := func(s contextual.Setting) (contextual.Policy, error) { return a.NewContextual(c.Budget, s) }
	if _, err := build(contextual.Setting{Dim: len(nb.Actions[0]), Horizon: 1000, Bounds: mechanism.Unit, Noise: noise.NewFast(0)}); err != nil {
		return nil, err
	}
	return audit.ContextualTrial(build, nb, 1000, c.Seed, wrap)
}

// contextualFamily is the family of linear contextual bandits (seed 001,
// Section IV-B): a decision set per step, policies that choose from it,
// simulated step by step by sim.RunContextual. Its algorithms run on the
// sparse environments too (the dense baselines of 002).
type contextualFamily struct{ steps }

func (contextualFamily) Kind() catalog.Kind { return catalog.Contextual }
func (contextualFamily) Envs() []string     { return []string{"contextual-gauss", "dataset", "csv"} }
