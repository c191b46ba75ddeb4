package experiment

import (
	"context"

	"github.com/dpbandit/dpbandit/catalog"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
)

// contextualFamily is the family of linear contextual bandits (seed 001,
// Section IV-B): a decision set per step, policies that choose from it
// (contextual.Policy), simulated step by step by sim.RunContextual.
type contextualFamily struct{}

func (contextualFamily) Kind() catalog.Kind { return catalog.Contextual }
func (contextualFamily) Kinds() []string    { return []string{"contextual-gauss"} }

func (f contextualFamily) Parse(spec string, seed uint64) (World, error) {
	c, err := env.ParseContextual(spec, seed)
	return contextualWorld{c}, err
}

// Neighbours serves the unit vectors of R^K as every step's decision set.
func (contextualFamily) Neighbours(k int, T int64) audit.Neighbours {
	nb := audit.Hard(k, T)
	nb.Actions = audit.UnitVectors(k)
	return nb
}

func (contextualFamily) Trial(a catalog.Spec, c AuditConfig, nb audit.Neighbours, wrap func(noise.Noise) noise.Noise) (audit.Trial, error) {
	build := func(s contextual.Setting) (contextual.Policy, error) { return a.NewContextual(c.Budget, s) }
	if _, err := build(contextual.Setting{Dim: len(nb.Actions[0]), Horizon: 1000, Bounds: mechanism.Unit, Noise: noise.NewFast(0)}); err != nil {
		return nil, err
	}
	return audit.ContextualTrial(build, nb, 1000, c.Seed, wrap)
}

// contextualWorld is a generator of contextual decision sets.
type contextualWorld struct{ *env.Contextual }

func (w contextualWorld) Check(a catalog.Spec, b privacy.Budget, T int64) error {
	if a.Contextual == nil {
		return wrongFamily(a, contextualFamily{})
	}
	_, err := a.NewContextual(b, contextual.Setting{Dim: w.Dim(), Horizon: T, Bounds: w.Bounds(), Noise: noise.NewFast(0)})
	return err
}

func (w contextualWorld) Simulate(ctx context.Context, c Config, es []entry, steps sim.Steps) (*sim.Result, error) {
	ce := simEntries(es, func(s *contextual.Setting) *noise.Noise { return &s.Noise }, catalog.Spec.NewContextual)
	return sim.RunContextual(ctx, sim.ContextualConfig{Env: w.Contextual, Steps: steps}, ce)
}

// Curves: the contextual bandits have no explicit bound curves.
func (contextualWorld) Curves(entry, int64, []int64) (upper, lower []float64) { return nil, nil }

// Footprint: each step's decision set (K d coordinates, with the
// environment's draws) per run; OFUL's d x d matrices per policy, and the
// sparse policies' history (T rows of d + 1 numbers) and the LASSO's
// column-major copy of it at a re-estimation (as many again).
func (w contextualWorld) Footprint(T int64, algos []catalog.Spec) (perRun, perPolicy int64) {
	k, d := int64(w.K), int64(w.D)
	perPolicy = 8 * (8*d*d + 8*d)
	for _, a := range algos {
		if a.Kind == catalog.Sparse {
			perPolicy = max(perPolicy, T*(16*(d+1)+56))
		}
	}
	return 8 * 2 * k * d, perPolicy
}
