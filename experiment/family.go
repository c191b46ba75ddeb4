package experiment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dpbandit/dpbandit/catalog"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
)

// Family is one problem family: the environments it parses, the
// algorithms it runs (with constructors typed for it), how it checks that
// an algorithm fits an environment, simulates, bounds regret and audits.
// The rest of the package works on Family and World values only and
// never asks which family it has; a new family is one file with a value
// of this interface, added to Families.
type Family interface {
	// Kind is the kind of the catalogue's algorithms it runs; its String
	// titles the family, e.g. "finite-armed bandits".
	Kind() catalog.Kind
	// Kinds lists the environment kinds it parses, e.g. "bernoulli".
	Kinds() []string
	// Parse parses an environment spec of one of its kinds (seed draws
	// random instances).
	Parse(spec string, seed uint64) (World, error)
	// Neighbours returns the default neighbouring tables of an audit with
	// k arms and horizon T.
	Neighbours(k int, T int64) audit.Neighbours
	// Trial builds the audit trial of one of its private algorithms at
	// c's budget on the tables nb (c.Break == "redraw": the variant that
	// re-draws its noise), with the noise wrapped by wrap when set.
	Trial(a catalog.Spec, c AuditConfig, nb audit.Neighbours, wrap func(noise.Noise) noise.Noise) (audit.Trial, error)
}

// World is a parsed environment of a family.
type World interface {
	// String returns the canonical spec.
	String() string
	// Bounds is the declared reward (or loss) range.
	Bounds() mechanism.Bounds
	// Check builds the algorithm once at budget b and horizon T; the
	// error says why it does not fit (wrong family, unusable budget).
	Check(a catalog.Spec, b privacy.Budget, T int64) error
	// Simulate runs the entries with the config's runs, seed and
	// checkpoints (steps).
	Simulate(ctx context.Context, c Config, es []entry, steps sim.Steps) (*sim.Result, error)
	// Curves returns the entry's regret upper bound and the minimax lower
	// bound at the checkpoints ts (nil where none applies, NaN at
	// checkpoints where one is undefined).
	Curves(e entry, T int64, ts []int64) (upper, lower []float64)
	// Footprint estimates, in bytes and from above, the memory of a run
	// of horizon T besides its policies (decision sets, loss vectors) and
	// of one policy of the algorithms given (the largest), so that an
	// experiment too large for the machine is refused before anything is
	// allocated.
	Footprint(T int64, algos []catalog.Spec) (perRun, perPolicy int64)
}

// Families returns every problem family, in the order of `dpbandit list`.
func Families() []Family {
	return []Family{finiteFamily{}, linearFamily{}, robustFamily{}, contextualFamily{}, sparseFamily{}, onlineFamily{}}
}

// EnvKinds returns every environment kind, once, for help and error
// messages.
func EnvKinds() []string {
	var out []string
	for _, f := range Families() {
		for _, k := range f.Kinds() {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// parseWorld parses an environment spec of any family.
func parseWorld(spec string, seed uint64) (World, error) {
	kind, _, _ := strings.Cut(spec, ":")
	for _, f := range Families() {
		if slices.Contains(f.Kinds(), kind) {
			return f.Parse(spec, seed)
		}
	}
	return nil, fmt.Errorf("unknown environment %q (known: %s)", kind, strings.Join(EnvKinds(), ", "))
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

// ErrWrongFamily is returned (wrapped) for an algorithm run on another
// family's environment.
var ErrWrongFamily = errors.New("the algorithm cannot run on this environment")

// wrongFamily is the error of an algorithm run on another family's world.
func wrongFamily(a catalog.Spec, world Family) error {
	return fmt.Errorf("%w: %s is an algorithm for %s, not for a %s environment (%s); see dpbandit list",
		ErrWrongFamily, a.Name, a.Kind, world.Kind(), strings.Join(world.Kinds(), ", "))
}
