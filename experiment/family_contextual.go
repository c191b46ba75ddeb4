package experiment

import (
	"context"

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

// contextualNew is the constructor type of the family's algorithms.
type contextualNew = func(p map[string]float64, b privacy.Budget, s contextual.Setting) (contextual.Policy, error)

func (contextualFamily) Name() string    { return "linear contextual bandits" }
func (contextualFamily) Kinds() []string { return []string{"contextual-gauss"} }

func (f contextualFamily) Parse(spec string, seed uint64) (World, error) {
	c, err := env.ParseContextual(spec, seed)
	return contextualWorld{c}, err
}

// Neighbours serves the unit vectors of R^K as every step's decision set.
func (contextualFamily) Neighbours(k int, T int64) audit.Neighbours {
	nb := audit.Hard(k, T)
	nb.Actions = unitVectors(k)
	return nb
}

func (contextualFamily) Trial(a AlgoSpec, c AuditConfig, nb audit.Neighbours, wrap func(noise.Noise) noise.Noise) (audit.Trial, error) {
	nw := a.New.(contextualNew)
	build := func(s contextual.Setting) (contextual.Policy, error) { return nw(a.Values, c.Budget, s) }
	if _, err := build(contextual.Setting{Dim: len(nb.Actions[0]), Horizon: 1000, Bounds: mechanism.Unit, Noise: noise.NewFast(0)}); err != nil {
		return nil, err
	}
	return audit.ContextualTrial(build, nb, 1000, c.Seed, wrap)
}

// Algorithms returns the contextual algorithms.
func (contextualFamily) Algorithms() []Algorithm {
	return []Algorithm{
		{
			Name:    "oful",
			Summary: "OFUL (Abbasi-Yadkori et al. 2011): ridge estimate and radius updated every step; non-private; contextual",
			Params:  params{"lambda": ridgeLambda, "delta": confDelta, "s": thetaBound},
			New: func(p map[string]float64, _ privacy.Budget, s contextual.Setting) (contextual.Policy, error) {
				return contextual.New(s, contextual.Config{Lambda: p["lambda"], Delta: p["delta"], S: p["s"], C: 0, Budget: privacy.None()})
			},
		},
		{
			Name:    "rs-oful",
			Summary: "rarely switching OFUL: re-estimates when det V grows by 1 + c; non-private; contextual",
			Params:  params{"lambda": ridgeLambda, "delta": confDelta, "s": thetaBound, "c": switchC},
			New: func(p map[string]float64, _ privacy.Budget, s contextual.Setting) (contextual.Policy, error) {
				return contextual.New(s, contextual.Config{Lambda: p["lambda"], Delta: p["delta"], S: p["s"], C: p["c"], Budget: privacy.None()})
			},
		},
		{
			Name:        "adac-oful",
			Summary:     "AdaC-OFUL (001 Alg. 3, Thm 14): Gaussian noise on each episode's sum a r, widened radius; zCDP, (eps,delta) or Renyi; contextual",
			Private:     true,
			Counterpart: "rs-oful",
			Params:      params{"lambda": ridgeLambda, "delta": confDelta, "s": thetaBound, "c": privateSwitchC},
			New: func(p map[string]float64, b privacy.Budget, s contextual.Setting) (contextual.Policy, error) {
				return contextual.New(s, contextual.Config{Lambda: p["lambda"], Delta: p["delta"], S: p["s"], C: p["c"], Budget: b})
			},
		},
	}
}

// contextualWorld is a generator of contextual decision sets.
type contextualWorld struct{ *env.Contextual }

func (w contextualWorld) Check(a AlgoSpec, b privacy.Budget, T int64) error {
	nw, ok := a.New.(contextualNew)
	if !ok {
		return misfit(a, contextualFamily{})
	}
	_, err := nw(a.Values, b, contextual.Setting{Dim: w.Dim(), Horizon: T, Bounds: w.Bounds(), Noise: noise.NewFast(0)})
	return err
}

func (w contextualWorld) Simulate(ctx context.Context, c Config, es []entry, steps sim.Steps) (*sim.Result, error) {
	ce := make([]sim.ContextualEntry, len(es))
	for i, e := range es {
		nw := e.algo.New.(contextualNew)
		ce[i] = sim.ContextualEntry{Name: e.label, NoiseKey: noiseKey(e.algo.Spec), New: func(s contextual.Setting) (contextual.Policy, error) {
			s.Noise = e.noise(s.Noise)
			return nw(e.algo.Values, e.budget, s)
		}}
	}
	return sim.RunContextual(ctx, sim.ContextualConfig{Env: w.Contextual, Steps: steps}, ce)
}

// Curves: the contextual bandits have no explicit bound curves.
func (contextualWorld) Curves(entry, int64, []int64) (upper, lower []float64) { return nil, nil }

// Footprint: each step's decision set (K d coordinates, with the
// environment's draws) per run; OFUL's d x d matrices per policy, and the
// sparse policies' history (T rows of d + 1 numbers) and the LASSO's
// column-major copy of it at a re-estimation (as many again).
func (w contextualWorld) Footprint(T int64, algos []AlgoSpec) (perRun, perPolicy int64) {
	k, d := int64(w.K), int64(w.D)
	perPolicy = 8 * (8*d*d + 8*d)
	for _, a := range algos {
		if a.family == (sparseFamily{}) {
			perPolicy = max(perPolicy, T*(16*(d+1)+56))
		}
	}
	return 8 * 2 * k * d, perPolicy
}
