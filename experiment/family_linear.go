package experiment

import (
	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/noise"
)

// linearFamily is the family of stochastic linear bandits with a finite
// action set (seeds 000 and 001): arms are vectors; the finite-armed
// algorithms run on its environments too, as K-armed bandits.
type linearFamily struct{}

func (linearFamily) Kind() catalog.Kind { return catalog.Linear }
func (linearFamily) Kinds() []string    { return []string{"linear-sphere", "linear-net"} }

func (f linearFamily) Parse(spec string, seed uint64) (World, error) {
	inst, err := env.Parse(spec, seed)
	return linearWorld{banditWorld{Instance: inst, fam: f, also: finiteFamily{}}}, err
}

func (linearFamily) Trial(a catalog.Spec, c AuditConfig, nb audit.Neighbours, wrap func(noise.Noise) noise.Noise) (audit.Trial, error) {
	return banditTrial(a, c, nb, wrap)
}

// Neighbours puts the audit's K arms on the unit vectors of R^K, which
// make the linear bandit a K-armed one.
func (linearFamily) Neighbours(k int, T int64) audit.Neighbours {
	nb := audit.Hard(k, T)
	nb.Actions = audit.UnitVectors(k)
	return nb
}
