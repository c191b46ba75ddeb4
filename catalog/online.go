package catalog

import (
	"github.com/dpbandit/dpbandit/olo"
	"github.com/dpbandit/dpbandit/privacy"
)

// onlineLearners returns the online learners (seed 003), each private
// one with its non-private counterpart.
func onlineLearners() []Algorithm {
	return []Algorithm{
		{
			Name:      "dp-ftrl-experts",
			Summary:   "private FTRL (003 Alg. 1, Cor. 3.2): Hedge on TreeBasedAgg sums, Lap(N L/eps) nodes for eps-DP, Gaussian nodes (rho/L per level) for zCDP; experts",
			Private:   true,
			Public:    &Public{Name: "hedge", Summary: "Hedge: FTRL with the entropic regulariser, eta = sqrt(ln N/T); non-private; experts, full information"},
			Params:    params{"counter": counterChoice},
			Set:       "simplex",
			Learner:   ftrlLearner(olo.NewFTRLExperts),
			WeakAudit: "one loss moves the tree's sums by at most 1 per coordinate against node noise of scale N L/eps (or sqrt(N L/(2 rho))), even divided by 10",
		},
		{
			Name:      "dp-ftrl-ball",
			Summary:   "private FTRL over the ball (003 Cor. 3.2 case 2) on TreeBasedAgg sums; Laplace nodes for eps-DP, Gaussian for zCDP",
			Private:   true,
			Public:    &Public{Name: "ftrl-ball", Summary: "FTRL with the squared norm over the unit ball, eta = sqrt(2/T); non-private; online linear optimisation"},
			Params:    params{"counter": counterChoice},
			Set:       "ball",
			Learner:   ftrlLearner(olo.NewFTRLQuad),
			WeakAudit: "one loss moves the tree's sums by at most the loss set's diameter against node noise L times that diameter/eps (or sqrt(L/(2 rho)) times it)",
		},
		{
			Name:      "dp-ftrl-cube",
			Summary:   "private FTRL over the cube (003 Cor. 3.2 case 3) on TreeBasedAgg sums; Laplace nodes for eps-DP, Gaussian for zCDP",
			Private:   true,
			Public:    &Public{Name: "ftrl-cube", Summary: "FTRL with the squared norm over the cube [-1,1]^N, eta = sqrt(2N/T); non-private; online linear optimisation"},
			Params:    params{"counter": counterChoice},
			Set:       "cube",
			Learner:   ftrlLearner(olo.NewFTRLQuad),
			WeakAudit: "one loss moves the tree's sums by at most the loss set's diameter against node noise L times that diameter/eps (or sqrt(L/(2 rho)) times it)",
		},
		{
			Name:      "dp-ftpl",
			Summary:   "private FTPL (003 Alg. 3, Thm 3.5): TreeBasedAgg with Gaussian nodes; (eps,delta)-DP, zCDP or Renyi; simplex, ball or cube",
			Private:   true,
			Public:    &Public{Name: "ftpl", Summary: "Follow the Perturbed Leader (003 Alg. 3, one Gaussian perturbation of Thm 3.5's regret scale); non-private; simplex, ball or cube"},
			Params:    params{},
			Set:       "simplex",
			Learner:   learner(olo.NewFTPL),
			WeakAudit: "one loss moves the tree's sums by at most the loss set's diameter against Gaussian node noise of at least the regret scale",
		},
		{
			Name:      "dp-exp2",
			Summary:   "private EXP2 (003 Alg. 4 + 5, Thm 4.1): loss + Lap(1/eps) fed to EXP2; eps-DP; experts, bandit feedback",
			Private:   true,
			PureDP:    true,
			Public:    &Public{Name: "exp2", Summary: "EXP2 with uniform exploration (003 Alg. 5, parameters of Thm 4.1 with lambda = 0); non-private; experts, bandit feedback"},
			Params:    params{},
			Set:       "simplex",
			Learner:   learner(olo.NewEXP2),
			WeakAudit: "with Theorem 4.1's small learning rate one loss barely moves EXP2's distribution",
		},
		{
			Name:      "dp-scrible",
			Summary:   "private SCRiBLE (003 Alg. 4 + SCRiBLE, Thm 4.5): <l + Z, y> fed back, Z ~ Lap^N(2 sqrt(N)/eps); eps-DP; ball, bandit feedback",
			Private:   true,
			PureDP:    true,
			Public:    &Public{Name: "scrible", Summary: "SCRiBLE (Abernethy, Hazan, Rakhlin) on the unit ball, barrier -ln(1-|x|^2), eta of 003 Thm 4.5 with lambda = 0; non-private; bandit feedback"},
			Params:    params{},
			Set:       "ball",
			Learner:   learner(olo.NewSCRiBLE),
			WeakAudit: "with Theorem 4.5's small learning rate one loss barely moves SCRiBLE's point",
		},
	}
}

// learner adapts an olo constructor, which takes no parameters, to the
// catalogue's constructor type.
func learner[L olo.Learner](f func(olo.Setting, privacy.Budget) (L, error)) func(Args, privacy.Budget, olo.Setting) (olo.Learner, error) {
	return func(_ Args, b privacy.Budget, s olo.Setting) (olo.Learner, error) { return f(s, b) }
}
