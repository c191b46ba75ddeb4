package experiment

import (
	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/catalog"
)

// linearFamily is the family of stochastic linear bandits with a finite
// action set (seeds 000 and 001): arms are vectors.
type linearFamily struct{ plans }

func (linearFamily) Kind() catalog.Kind { return catalog.Linear }
func (linearFamily) Envs() []string     { return []string{"linear-sphere", "linear-net"} }

func (linearFamily) Runs(w World) bool {
	bw, ok := w.(banditWorld)
	return ok && bw.linear()
}

// Neighbours puts the audit's K arms on the unit vectors of R^K, which
// make the linear bandit a K-armed one.
func (linearFamily) Neighbours(k int, T int64) audit.Neighbours {
	nb := audit.Hard(k, T)
	nb.Actions = audit.UnitVectors(k)
	return nb
}
