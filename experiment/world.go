package experiment

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/olo"
)

// World is a parsed environment, whatever algorithms run on it: a K-armed
// instance (finite-armed or linear), a generator of contextual decision
// sets, or a loss sequence. Which algorithms run on a world is for their
// families to say (Family.Runs).
type World interface {
	// String returns the canonical spec.
	String() string
	// Bounds is the declared reward (or loss) range.
	Bounds() mechanism.Bounds
	// Footprint estimates, in bytes and from above, the memory held once
	// whatever the workers (a data set's table, already loaded), that of
	// a run of horizon T besides its policies (decision sets, loss
	// vectors), and of one policy as the world's shape implies it
	// (per-arm statistics, d x d matrices); families whose policies need
	// more say so (footprinter), so that an experiment too large for the
	// machine is refused before its runs allocate anything.
	Footprint(T int64) (shared, perRun, perPolicy int64)
	// regretRange bounds the pseudo-regret after t steps, to refuse
	// impossible results (a tampered shard).
	regretRange(t int64) (lo, hi float64)
}

// worldKind is a set of environment kinds and their parser.
type worldKind struct {
	kinds []string
	parse func(spec string, seed uint64) (World, error)
}

// worldKinds lists every environment kind, in the order of EnvKinds.
func worldKinds() []worldKind {
	return []worldKind{
		{append([]string{"bernoulli", "gaussian", "linear-sphere", "linear-net"}, env.DriftingKinds()...), func(spec string, seed uint64) (World, error) {
			inst, err := env.Parse(spec, seed)
			return banditWorld{inst}, err
		}},
		{[]string{"contextual-gauss", "sparse-gauss"}, func(spec string, seed uint64) (World, error) {
			c, err := env.ParseContextual(spec, seed)
			return contextualWorld{c}, err
		}},
		{[]string{"dataset", "csv"}, func(spec string, seed uint64) (World, error) {
			d, err := env.ParseDataset(spec, seed)
			return contextualWorld{d}, err
		}},
		{[]string{"experts-iid", "experts-switching", "ball", "cube"}, func(spec string, seed uint64) (World, error) {
			l, err := olo.ParseLosses(spec, seed)
			return onlineWorld{l}, err
		}},
	}
}

// EnvKinds returns every environment kind, for help and error messages.
func EnvKinds() []string {
	var out []string
	for _, wk := range worldKinds() {
		out = append(out, wk.kinds...)
	}
	return out
}

// parseWorld parses an environment spec (seed draws random instances).
func parseWorld(spec string, seed uint64) (World, error) {
	kind, _, _ := strings.Cut(spec, ":")
	for _, wk := range worldKinds() {
		for _, k := range wk.kinds {
			if k == kind {
				return wk.parse(spec, seed)
			}
		}
	}
	return nil, fmt.Errorf("unknown environment %q (known: %s)", kind, strings.Join(EnvKinds(), ", "))
}

// envKind returns the kind of a world's spec, e.g. "bernoulli".
func envKind(w World) string {
	kind, _, _ := strings.Cut(w.String(), ":")
	return kind
}

// banditWorld is a K-armed instance: finite-armed, or linear (its arms
// are vectors, bandit.Linear), possibly corrupted (env.Corrupted).
type banditWorld struct{ env.Instance }

// setting returns the bandit.Setting of the instance.
func (w banditWorld) setting(T int64) bandit.Setting {
	st := bandit.Setting{Arms: w.Arms(), Horizon: T, Bounds: w.Instance.Bounds(), Rand: noise.Stream(0), Noise: noise.NewFast(0)}
	if l, ok := w.Instance.(bandit.Linear); ok {
		st.Actions = l.Actions()
	}
	return st
}

// linear reports whether the arms are vectors.
func (w banditWorld) linear() bool {
	_, ok := w.Instance.(bandit.Linear)
	return ok
}

// Footprint: a finite-armed policy keeps a few numbers per arm; a linear
// one its K actions' coordinates, designs and d x d matrices.
func (w banditWorld) Footprint(int64) (shared, perRun, perPolicy int64) {
	k, d := int64(w.Arms()), int64(0)
	if l, ok := w.Instance.(bandit.Linear); ok {
		d = int64(len(l.Actions()[0]))
	}
	return 0, 64 * k, 64*k + 8*(4*k*d+8*d*d)
}

// regretRange: each step costs a gap, at most the largest (on a drifting
// instance, at most the rewards' range).
func (w banditWorld) regretRange(t int64) (float64, float64) {
	if _, ok := w.Instance.(*env.Drifting); ok {
		return 0, float64(t) * w.Instance.Bounds().Width()
	}
	return 0, float64(t) * slices.Max(env.Gaps(w.Means()))
}

// contextualWorld is a generator of contextual decision sets (dense or
// sparse theta*), or a data set played as a contextual bandit.
type contextualWorld struct{ env.Contexts }

// Footprint: a data set's table, shared; each step's decision set (K d
// coordinates, with the environment's draws, and a data set's order of
// rows) per run; OFUL's d x d matrices per policy.
func (w contextualWorld) Footprint(int64) (shared, perRun, perPolicy int64) {
	k, d := int64(w.Arms()), int64(w.Dim())
	perRun = 8 * 2 * k * d
	if ds, ok := w.Contexts.(*env.Dataset); ok {
		shared = ds.Bytes()
		perRun += 4 * int64(ds.Rows())
	}
	return shared, perRun, 8 * (8*d*d + 8*d)
}

// regretRange: each step costs the best mean <theta*, a> minus the
// chosen one, means of magnitude at most 1 (||theta*||, ||a|| <= 1), or
// the range's when it is wider.
func (w contextualWorld) regretRange(t int64) (float64, float64) {
	b := w.Bounds()
	return 0, float64(t) * 2 * max(1, math.Abs(b.Lo), math.Abs(b.Hi))
}

// onlineWorld is a loss sequence.
type onlineWorld struct{ *olo.Losses }

// Bounds is the range of one loss coordinate.
func (onlineWorld) Bounds() mechanism.Bounds { return mechanism.Unit }

// Footprint: the loss vectors per run; a learner's tree (three vectors
// per level and a bank of as many) and its own vectors per policy.
func (w onlineWorld) Footprint(T int64) (shared, perRun, perPolicy int64) {
	n, levels := int64(w.N), int64(bits.Len64(uint64(max(T, 1))))
	return 0, 8 * 4 * n, 8 * n * (4*levels + 8)
}

// regretRange: a step's loss <l, x> lies in [-1, 1] on every decision
// set, so the regret against any fixed point changes by at most 2 a
// step, either way.
func (onlineWorld) regretRange(t int64) (float64, float64) { return -2 * float64(t), 2 * float64(t) }
