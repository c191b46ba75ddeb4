package catalog

import (
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sparse"
)

var (
	// sparsityS0 is the sparsity s0 PrivateThresholdLASSO assumes.
	sparsityS0 = Param{Default: 5, Min: 1, Max: 1000}
	// sparsitySBar is 002's s-bar (>= 1).
	sparsitySBar = Param{Default: 1, Min: 1, Max: 1e6}
	// budgetSplit selects 002's printed split or the plain one.
	budgetSplit = choice("", "basic", "paper")
	// supportEstimate selects 002's SparseEstimation (the sparse vector
	// technique on LASSO coordinates) or the tighter PrivateScreen.
	supportEstimate = choice("", "svt", "peel")
	// lassoLambda0 scales the LASSO penalty lambda_t (sparse.Lambda).
	lassoLambda0 = Param{Default: 0.05, Min: 1e-6, Max: 100}
	// lassoCTheta is 002's bound C_theta on ||theta*||.
	// (below 1e-6 the projected coefficients underflow and every action
	// ties).
	lassoCTheta = Param{Default: 1, Min: 1e-6, Max: 1e6}
	// lassoRidge regularises the least squares on the support.
	lassoRidge = Param{Default: 1e-3, Min: 1e-9, Max: 1e6}
)

// sparseBandits returns the sparse high-dimensional contextual bandit
// algorithms (seed 002).
func sparseBandits() []Algorithm {
	return []Algorithm{
		{
			Name:    "lasso-bandit",
			Summary: "thresholded LASSO bandit: LASSO at t = 2^k, support |theta^_j| > 4 lambda_t, least squares on it, greedy (002 Alg. 1 without noise); sparse",
			Params:  params{"lambda0": lassoLambda0, "ctheta": lassoCTheta, "ridge": lassoRidge},
			Contextual: func(p Args, _ privacy.Budget, s contextual.Setting) (contextual.Policy, error) {
				return sparse.NewLassoBandit(s, sparse.Config{Lambda0: p.F("lambda0"), CTheta: p.F("ctheta"), Ridge: p.F("ridge")})
			},
		},
		{
			Name: "private-lasso",
			Summary: "PrivateThresholdLASSO (002 Alg. 1): SparseEstimation (Alg. 2, sparse vector technique) at t = 2^k, least squares on the support " +
				"from a Wishart tree of [x; r][x; r]^T; (eps,delta) joint DP of contexts and rewards; sparse",
			Private:     true,
			Approx:      true,
			Counterpart: "lasso-bandit",
			WeakAudit: "its noise (a Wishart tree at eps/(2L) per node, the sparse vector technique at eps/(2E) per re-estimation) drowns " +
				"the audit tables' one differing reward at any budget; its mechanisms are audited on their own: dpbandit audit --component sparse-vector|noisy-max|wishart-node",
			Params: params{"lambda0": lassoLambda0, "ctheta": lassoCTheta, "ridge": lassoRidge,
				"s0": sparsityS0, "sbar": sparsitySBar, "split": budgetSplit, "support": supportEstimate},
			Contextual: func(p Args, b privacy.Budget, s contextual.Setting) (contextual.Policy, error) {
				return sparse.NewPrivateLasso(s, b, sparse.PrivateConfig{
					Config: sparse.Config{Lambda0: p.F("lambda0"), CTheta: p.F("ctheta"), Ridge: p.F("ridge")},
					S0:     int(p.F("s0")), SBar: p.F("sbar"), Paper: budgetSplit.Choices[int(p.F("split"))] == "paper",
					Peel: supportEstimate.Choices[int(p.F("support"))] == "peel"})
			},
		},
	}
}
