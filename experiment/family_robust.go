package experiment

import (
	"context"
	"errors"
	"math"
	"slices"

	"github.com/dpbandit/dpbandit/catalog"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/bandit"
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
// Its worlds are the linear family's (linearWorld), which run both
// families' algorithms.
type robustFamily struct{}

func (robustFamily) Kind() catalog.Kind { return catalog.Robust }
func (robustFamily) Kinds() []string    { return linearFamily{}.Kinds() }

func (robustFamily) Parse(spec string, seed uint64) (World, error) {
	return linearFamily{}.Parse(spec, seed)
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

// linearWorld is a linear instance (possibly corrupted): the linear and
// finite-armed algorithms run on it through sim.Run, the robust family's
// through sim.RunBatched.
type linearWorld struct{ banditWorld }

// clean returns the uncorrupted instance and the adversary (nil if none).
func (w linearWorld) clean() (*env.Linear, *env.Corrupted) {
	if c, ok := w.Instance.(*env.Corrupted); ok {
		return c.Linear, c
	}
	l, _ := w.Instance.(*env.Linear)
	return l, nil
}

func (w linearWorld) Check(a catalog.Spec, b privacy.Budget, T int64) error {
	if a.Batched == nil {
		return w.banditWorld.Check(a, b, T)
	}
	_, err := a.NewBatched(b, w.setting(T))
	return err
}

// Simulate runs the batched entries by sim.RunBatched and the others by
// sim.Run, and returns their results in the entries' order, over the
// runs both completed.
func (w linearWorld) Simulate(ctx context.Context, c Config, es []entry, steps sim.Steps) (*sim.Result, error) {
	var plain, batched []entry
	for _, e := range es {
		if e.algo.Batched == nil {
			plain = append(plain, e)
		} else {
			batched = append(batched, e)
		}
	}
	if len(batched) == 0 {
		return w.banditWorld.Simulate(ctx, c, es, steps)
	}
	l, adv := w.clean()
	be := simEntries(batched, func(s *bandit.Setting) *noise.Noise { return &s.Noise }, catalog.Spec.NewBatched)
	rb, err := sim.RunBatched(ctx, sim.BatchedConfig{Env: l, Adversary: adv, Steps: steps}, be)
	if len(plain) == 0 || rb == nil {
		return rb, err
	}
	rp, perr := w.banditWorld.Simulate(ctx, c, plain, steps)
	if rp == nil {
		return nil, perr
	}
	return mergeResults(es, plain, rp, rb), errors.Join(err, perr)
}

// mergeResults puts the results of the entries plain (in rp) and the rest
// (in rb) back in the order of es, keeping the runs both completed.
func mergeResults(es, plain []entry, rp, rb *sim.Result) *sim.Result {
	var runs []int
	for _, r := range rp.Runs {
		if slices.Contains(rb.Runs, r) {
			runs = append(runs, r)
		}
	}
	out := &sim.Result{Checkpoints: rp.Checkpoints, Runs: runs}
	ip, ib := 0, 0
	for _, e := range es {
		src, j := rb, ib
		if ip < len(plain) && plain[ip].label == e.label {
			src, j = rp, ip
			ip++
		} else {
			ib++
		}
		var recs []sim.Record
		for i, r := range src.Runs {
			if slices.Contains(runs, r) {
				recs = append(recs, src.Records[j][i])
			}
		}
		out.Records = append(out.Records, recs)
		out.Seconds = append(out.Seconds, src.Seconds[j])
	}
	return out
}

// Footprint adds, for batched algorithms, the points of the largest
// batch: at most T/q + k of them, q = T^(1/B) >= 2 in the worst case,
// each d coordinates and its slice header.
func (w linearWorld) Footprint(T int64, algos []catalog.Spec) (perRun, perPolicy int64) {
	perRun, perPolicy = w.banditWorld.Footprint(T, algos)
	d := int64(len(w.setting(T).Actions[0]))
	for _, a := range algos {
		if a.Batched != nil {
			q := math.Max(math.Pow(float64(T), 1/a.Values["batches"]), 2)
			n := int64(float64(T)/q) + int64(w.Arms())
			perPolicy = max(perPolicy, n*(8*d+32))
		}
	}
	return perRun, perPolicy
}
