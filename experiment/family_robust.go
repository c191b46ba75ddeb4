package experiment

import (
	"context"
	"errors"
	"math"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
)

// robustFamily is the family of robust private batched linear bandits
// (seed 004): batched elimination whose rewards reach the learner
// through local-DP clients (linear.Batched), on the linear family's
// environments, corrupted or not (env.Corrupted), simulated batch by
// batch by sim.RunBatched with the adversary acting on the observations.
// It runs on the linear family's environments, beside the linear and
// finite-armed algorithms.
type robustFamily struct{}

func (robustFamily) Kind() catalog.Kind { return catalog.Robust }
func (robustFamily) Envs() []string     { return linearFamily{}.Envs() }
func (robustFamily) Simulator() string  { return "batched" }
func (robustFamily) Runs(w World) bool  { return linearFamily{}.Runs(w) }

func (robustFamily) Check(w World, a catalog.Spec, b privacy.Budget, T int64) error {
	_, err := a.NewBatched(b, w.(banditWorld).setting(T))
	return err
}

// Simulate runs the entries by sim.RunBatched, with the instance's
// adversary (env.Corrupted) acting on what the learner observes.
func (robustFamily) Simulate(ctx context.Context, w World, _ Config, es []entry, steps sim.Steps) (*sim.Result, error) {
	l, adv := clean(w.(banditWorld))
	be := simEntries(es, func(s *bandit.Setting) *noise.Noise { return &s.Noise }, catalog.Spec.NewBatched)
	return sim.RunBatched(ctx, sim.BatchedConfig{Env: l, Adversary: adv, Steps: steps}, be)
}

// Curves are the bandit families' (the finite-armed bounds, on unit
// ranges).
func (robustFamily) Curves(w World, e entry, T int64, ts []int64) (upper, lower []float64) {
	return plans{}.Curves(w, e, T, ts)
}

// clean returns the uncorrupted instance and the adversary (nil if none).
func clean(w banditWorld) (*env.Linear, *env.Corrupted) {
	if c, ok := w.Instance.(*env.Corrupted); ok {
		return c.Linear, c
	}
	l, _ := w.Instance.(*env.Linear)
	return l, nil
}

// policyFootprint: a batched policy keeps the points of a batch (the
// Filter needs every one), about T/q of them with q = T^(1/B).
func (robustFamily) policyFootprint(w World, T int64, algos []catalog.Spec) int64 {
	bw, ok := w.(banditWorld)
	if !ok || !bw.linear() {
		return 0 // not a world of the family: Runs refuses it
	}
	d := int64(len(bw.setting(T).Actions[0]))
	var most int64
	for _, a := range algos {
		q := math.Max(math.Pow(float64(T), 1/a.Args().F("batches")), 2)
		n := int64(float64(T)/q) + int64(bw.Arms())
		most = max(most, n*(8*d+32))
	}
	return most
}

// Neighbours: the family's audit is of its clients (Trial); the tables
// only supply the range.
func (robustFamily) Neighbours(k int, T int64) audit.Neighbours {
	nb := linearFamily{}.Neighbours(k, T)
	nb.Bounds = mechanism.Bounds{Lo: -1, Hi: 1}
	return nb
}

// Trial audits the algorithm's client randomiser (audit.LocalTrial): a
// client's report is all the learner sees of its rewards, so the
// policy's local guarantee is the report's. M1 clients hold one reward,
// M2 clients a batch (of 4 here) that differs in one.
func (robustFamily) Trial(a catalog.Spec, c AuditConfig, nb audit.Neighbours, wrap func(noise.Noise) noise.Noise) (audit.Trial, error) {
	b := nb.Bounds
	if b == (mechanism.Bounds{}) {
		b = mechanism.Unit
	}
	switch a.Params["model"].Format(a.Values["model"]) {
	case "m1":
		return audit.LocalTrial(func(_ int64, nz noise.Noise) (mechanism.Local, error) {
			return mechanism.NewLocalReward(c.Budget, b, nz)
		}, 1, b, c.Seed, wrap)
	case "m2":
		return audit.LocalTrial(func(n int64, nz noise.Noise) (mechanism.Local, error) {
			return mechanism.NewLocalBatchMean(c.Budget, b, n, nz)
		}, 4, b, c.Seed, wrap)
	}
	return nil, errors.New("model none is not private: there is no claim to audit")
}
