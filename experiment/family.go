package experiment

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
)

// Family runs the catalogue's algorithms of one kind: it says on which
// worlds they run, builds them there, simulates them, bounds their regret
// and audits them. The rest of the package works on Family and World
// values and never asks which family it has; entries reach their family
// through one dispatch (checkOn, simulateOn, curvesOn, footprintOn). A new
// family is one file with a value of this interface, added to Families,
// and its kind's entries in package catalog.
type Family interface {
	// Kind is the kind of the catalogue's algorithms it runs; its String
	// titles the family, e.g. "finite-armed bandits".
	Kind() catalog.Kind
	// Envs lists the environment kinds its algorithms are made for, e.g.
	// "bernoulli" (dpbandit list).
	Envs() []string
	// Runs reports whether its algorithms run on the world.
	Runs(w World) bool
	// Simulator names its simulator: the entries of the families that
	// share one are simulated together, on common random numbers.
	Simulator() string
	// Check builds the algorithm once on w at budget b and horizon T; the
	// error says why it does not fit (an unusable budget, say).
	Check(w World, a catalog.Spec, b privacy.Budget, T int64) error
	// Simulate runs the entries (of the families sharing its simulator)
	// on w with the config's runs, seed and checkpoints (steps).
	Simulate(ctx context.Context, w World, c Config, es []entry, steps sim.Steps) (*sim.Result, error)
	// Curves returns the entry's regret upper bound and the minimax lower
	// bound at the checkpoints ts (nil where none applies, NaN at
	// checkpoints where one is undefined).
	Curves(w World, e entry, T int64, ts []int64) (upper, lower []float64)
	// Neighbours returns the default neighbouring tables of an audit with
	// k arms and horizon T.
	Neighbours(k int, T int64) audit.Neighbours
	// Trial builds the audit trial of one of its private algorithms at
	// c's budget on the tables nb (c.Break == "redraw": the variant that
	// re-draws its noise), with the noise wrapped by wrap when set.
	Trial(a catalog.Spec, c AuditConfig, nb audit.Neighbours, wrap func(noise.Noise) noise.Noise) (audit.Trial, error)
}

// footprinter is a family whose policies need more memory than their
// world implies (World.Footprint): bytes for one policy of the largest of
// algos on w at horizon T.
type footprinter interface {
	policyFootprint(w World, T int64, algos []catalog.Spec) int64
}

// Families returns every family, in the order of `dpbandit list`.
func Families() []Family {
	return []Family{finiteFamily{}, linearFamily{}, robustFamily{}, contextualFamily{}, sparseFamily{}, onlineFamily{}}
}

// familyOf returns the family that runs the algorithms of kind k.
func familyOf(k catalog.Kind) Family {
	for _, f := range Families() {
		if f.Kind() == k {
			return f
		}
	}
	panic(fmt.Sprintf("experiment: no family runs %s", k))
}

// ErrWrongFamily is returned (wrapped) for an algorithm run on an
// environment its family does not run on.
var ErrWrongFamily = errors.New("the algorithm cannot run on this environment")

// wrongFamily is the error of an algorithm run on another family's world.
func wrongFamily(a catalog.Spec, w World) error {
	return fmt.Errorf("%w: %s is an algorithm for %s; it does not run on %s environments; see dpbandit list",
		ErrWrongFamily, a.Name, a.Kind, envKind(w))
}

// checkOn builds a once on w through its family.
func checkOn(w World, a catalog.Spec, b privacy.Budget, T int64) error {
	f := familyOf(a.Kind)
	if !f.Runs(w) {
		return wrongFamily(a, w)
	}
	return f.Check(w, a, b, T)
}

// curvesOn returns an entry's bound curves through its family.
func curvesOn(w World, e entry, T int64, ts []int64) (upper, lower []float64) {
	return familyOf(e.algo.Kind).Curves(w, e, T, ts)
}

// footprintOn estimates the memory shared by the runs, of a run and of
// one policy of algos on w: the world's, or more where a family's
// policies need it.
func footprintOn(w World, T int64, algos []catalog.Spec) (shared, perRun, perPolicy int64) {
	shared, perRun, perPolicy = w.Footprint(T)
	for _, f := range Families() {
		fp, ok := f.(footprinter)
		if !ok {
			continue
		}
		var mine []catalog.Spec
		for _, a := range algos {
			if a.Kind == f.Kind() {
				mine = append(mine, a)
			}
		}
		if len(mine) > 0 {
			perPolicy = max(perPolicy, fp.policyFootprint(w, T, mine))
		}
	}
	return shared, perRun, perPolicy
}

// simulateOn runs the entries on w: the entries of the families that
// share a simulator together, through the first such family; the groups'
// results are put back in the entries' order, over the runs every group
// completed.
func simulateOn(ctx context.Context, w World, c Config, es []entry, steps sim.Steps) (*sim.Result, error) {
	var sims []string
	groups := map[string][]int{} // simulator -> indices in es
	for i, e := range es {
		s := familyOf(e.algo.Kind).Simulator()
		if _, ok := groups[s]; !ok {
			sims = append(sims, s)
		}
		groups[s] = append(groups[s], i)
	}
	if len(sims) == 1 {
		return familyOf(es[0].algo.Kind).Simulate(ctx, w, c, es, steps)
	}
	results := make([]*sim.Result, len(sims))
	var errs []error
	for g, s := range sims {
		var mine []entry
		for _, i := range groups[s] {
			mine = append(mine, es[i])
		}
		res, err := familyOf(mine[0].algo.Kind).Simulate(ctx, w, c, mine, steps)
		if res == nil {
			return nil, err
		}
		results[g], errs = res, append(errs, err)
	}
	return mergeGroups(len(es), sims, groups, results), errors.Join(errs...)
}

// mergeGroups puts the groups' results back in the order of the entries,
// keeping the runs every group completed.
func mergeGroups(n int, sims []string, groups map[string][]int, results []*sim.Result) *sim.Result {
	runs := results[0].Runs
	for _, r := range results[1:] {
		runs = slices.DeleteFunc(slices.Clone(runs), func(run int) bool { return !slices.Contains(r.Runs, run) })
	}
	out := &sim.Result{Checkpoints: results[0].Checkpoints, Runs: runs, Records: make([][]sim.Record, n), Seconds: make([]float64, n)}
	for g, s := range sims {
		src := results[g]
		for j, i := range groups[s] {
			for k, run := range src.Runs {
				if slices.Contains(runs, run) {
					out.Records[i] = append(out.Records[i], src.Records[j][k])
				}
			}
			out.Seconds[i] = src.Seconds[j]
		}
	}
	return out
}
