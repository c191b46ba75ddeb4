package catalog

import (
	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/linear"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/privacy"
)

// linearBandits returns the linear bandit algorithms on finite action
// sets (seeds 000 and 001).
func linearBandits() []Algorithm {
	return []Algorithm{
		{
			Name:     "adac-gope",
			Summary:  "AdaC-GOPE (001 Alg. 2, Eq. 4): Gaussian noise on V^-1/2 sum a r once per phase, scaled by the played g_l; linear",
			Private:  true,
			Gaussian: true,
			Public: &Public{Name: "gope",
				Summary: "G-optimal design phased elimination (Lattimore & Szepesvari Alg. 12), non-private; linear"},
			Params:      params{"delta": confDelta, "tol": designTol},
			Policy:      gope(linear.NoiseTheta),
			AuditTables: gopeAuditTables,
		},
		{
			Name:        "adar-gope-var",
			Summary:     "AdaR-GOPE-Var (001 App. H): Gaussian noise on each support action's reward sum; linear",
			Private:     true,
			Gaussian:    true,
			Counterpart: "gope",
			Params:      params{"delta": confDelta, "tol": designTol},
			Policy:      gope(linear.NoiseSums),
			AuditTables: gopeAuditTables,
		},
		{
			Name:        "dp-pe",
			Summary:     "private phased elimination with core sets (Hanna et al. 2022, 000 Alg. 4): Laplace on per-action sums; eps-DP; linear",
			Private:     true,
			PureDP:      true,
			Counterpart: "gope",
			Params:      params{},
			Policy: func(_ Args, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return linear.NewDPPE(s, b)
			},
			WeakAudit: "its elimination margin 2 gamma_i (verbatim from 000) exceeds the reward range in early batches, so no table puts an action on the boundary",
		},
	}
}

// gope is the constructor of the GOPE family with the given noise.
func gope(mode linear.Variant) func(Args, privacy.Budget, bandit.Setting) (bandit.Policy, error) {
	return func(p Args, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
		return linear.NewGOPE(s, b, p.F("delta"), p.F("tol"), mode)
	}
}

// gopeAuditTables puts arm 0 on the elimination boundary of the first
// phase of the GOPE family, on the unit vectors of R^K (which make the
// linear bandit a K-armed one) with rewards in [-1, 1]: every reward is
// 1/2 except arm 0's, -1/2, exactly 2 beta_1 = 1 below, and its first
// reward is 1 or -1.
func gopeAuditTables(_ Args, _ privacy.Budget, k int, T int64) (audit.Neighbours, error) {
	nb := audit.Hard(k, T)
	nb.Base[0] = -0.5
	nb.First = [2]float64{1, -1}
	nb.Bounds = mechanism.Bounds{Lo: -1, Hi: 1}
	nb.Actions = audit.UnitVectors(k)
	return nb, nil
}
