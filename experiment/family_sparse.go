package experiment

import (
	"github.com/dpbandit/dpbandit/catalog"
)

// sparseFamily is the family of sparse high-dimensional contextual
// bandits (seed 002): decision sets of K contexts in R^d with an
// s0-sparse theta* (env sparse-gauss), policies of package sparse,
// which run on contextual-gauss as well.
type sparseFamily struct{ steps }

func (sparseFamily) Kind() catalog.Kind { return catalog.Sparse }
func (sparseFamily) Envs() []string     { return []string{"sparse-gauss", "dataset", "csv"} }

// policyFootprint: a sparse policy keeps its history (T rows of d + 1
// numbers) and the LASSO's column-major copy of it at a re-estimation (as
// many again).
func (sparseFamily) policyFootprint(w World, T int64, _ []catalog.Spec) int64 {
	cw, ok := w.(contextualWorld)
	if !ok {
		return 0 // not a world of the family: Runs refuses it
	}
	d := int64(cw.Dim())
	return T * (16*(d+1) + 56)
}
