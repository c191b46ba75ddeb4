package experiment

import (
	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sparse"
)

// sparseFamily is the family of sparse high-dimensional contextual
// bandits (seed 002): decision sets of K contexts in R^d with an
// s0-sparse theta* (env sparse-gauss), policies of package sparse.
// Its worlds are contextual worlds, on which the contextual family's
// algorithms (the dense baselines, adac-oful) run too, and its
// algorithms run on contextual-gauss as well.
type sparseFamily struct{}

func (sparseFamily) Name() string    { return "sparse high-dimensional contextual bandits" }
func (sparseFamily) Kinds() []string { return []string{"sparse-gauss"} }

func (sparseFamily) Parse(spec string, seed uint64) (World, error) {
	c, err := env.ParseContextual(spec, seed)
	return contextualWorld{c}, err
}

func (sparseFamily) Neighbours(k int, T int64) audit.Neighbours {
	return contextualFamily{}.Neighbours(k, T)
}

func (sparseFamily) Trial(a AlgoSpec, c AuditConfig, nb audit.Neighbours, wrap func(noise.Noise) noise.Noise) (audit.Trial, error) {
	return contextualFamily{}.Trial(a, c, nb, wrap)
}

var (
	// lassoLambda0 scales the LASSO penalty lambda_t (sparse.Lambda).
	lassoLambda0 = Param{Default: 0.05, Min: 0, MinOpen: true, Max: 100}
	// lassoCTheta is 002's bound C_theta on ||theta*||.
	lassoCTheta = Param{Default: 1, Min: 0, MinOpen: true, Max: 1e6}
	// lassoRidge regularises the least squares on the support.
	lassoRidge = Param{Default: 1e-3, Min: 1e-9, Max: 1e6}
)

// Algorithms returns the sparse algorithms.
func (sparseFamily) Algorithms() []Algorithm {
	return []Algorithm{
		{
			Name:    "lasso-bandit",
			Summary: "thresholded LASSO bandit: LASSO at t = 2^k, support |theta^_j| > 4 lambda_t, least squares on it, greedy (002 Alg. 1 without noise); sparse",
			Params:  params{"lambda0": lassoLambda0, "ctheta": lassoCTheta, "ridge": lassoRidge},
			New: func(p map[string]float64, _ privacy.Budget, s contextual.Setting) (contextual.Policy, error) {
				return sparse.NewLassoBandit(s, sparse.Config{Lambda0: p["lambda0"], CTheta: p["ctheta"], Ridge: p["ridge"]})
			},
		},
	}
}
