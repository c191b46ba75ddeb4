package experiment

import (
	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/noise"
)

// sparseFamily is the family of sparse high-dimensional contextual
// bandits (seed 002): decision sets of K contexts in R^d with an
// s0-sparse theta* (env sparse-gauss), policies of package sparse.
// Its worlds are contextual worlds, on which the contextual family's
// algorithms (the dense baselines, adac-oful) run too, and its
// algorithms run on contextual-gauss as well.
type sparseFamily struct{}

func (sparseFamily) Kind() catalog.Kind { return catalog.Sparse }
func (sparseFamily) Kinds() []string    { return []string{"sparse-gauss"} }

func (sparseFamily) Parse(spec string, seed uint64) (World, error) {
	c, err := env.ParseContextual(spec, seed)
	return contextualWorld{c}, err
}

func (sparseFamily) Neighbours(k int, T int64) audit.Neighbours {
	return contextualFamily{}.Neighbours(k, T)
}

func (sparseFamily) Trial(a catalog.Spec, c AuditConfig, nb audit.Neighbours, wrap func(noise.Noise) noise.Noise) (audit.Trial, error) {
	return contextualFamily{}.Trial(a, c, nb, wrap)
}
