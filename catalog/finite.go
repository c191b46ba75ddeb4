package catalog

import (
	"math"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mab"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/theory"
)

// finite returns the finite-armed algorithms (seeds 000 and 001).
func finite() []Algorithm {
	return []Algorithm{
		{
			Name:    "ucb1",
			Summary: "UCB1 (Auer et al. 2002), non-private, one step per plan",
			Params:  params{},
			Policy:  settingOnly(mab.NewUCB1),
		},
		{
			Name:     "adac-ucb",
			Summary:  "AdaC-UCB (001 Alg. 4, Eq. 14): Gaussian noise once per doubling episode; zCDP, (eps,delta) or Renyi",
			Private:  true,
			Gaussian: true,
			Public: &Public{Name: "ucb-doubling",
				Summary: "UCB with arm-dependent doubling and forgetting, non-private counterpart of AdaC-UCB (001 Sec. VII)"},
			Params: params{"beta": doublingBeta},
			Policy: func(p Args, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.NewAdaCUCB(s, b, p.F("beta"))
			},
			Redraw: func(p Args, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.BrokenAdaCUCB(s, b, p.F("beta"))
			},
			Bound: func(p Args, b privacy.Budget, gaps []float64, T int64) (float64, bool) {
				if b.Notion != privacy.ZCDP || p.F("beta") <= 3 {
					return 0, false
				}
				v, err := theory.AdaCUCB(gaps, T, b.Rho, p.F("beta"))
				return v, err == nil
			},
		},
		{
			Name:        "adap-ucb",
			Summary:     "AdaP-UCB (Azize & Basu 2022): Laplace noise once per doubling episode, widened bonus; eps-DP (zCDP via eps=sqrt(2 rho))",
			Private:     true,
			PureDP:      true,
			Counterpart: "ucb-doubling",
			Params:      params{"beta": doublingBeta},
			Policy: func(p Args, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.NewAdaPUCB(s, b, p.F("beta"))
			},
			Bound: func(p Args, b privacy.Budget, gaps []float64, T int64) (float64, bool) {
				rho, err := b.ToZCDP()
				if err != nil || p.F("beta") <= 3 {
					return 0, false
				}
				v, err := theory.ConvertedPureDP(gaps, T, rho, p.F("beta"))
				return v, err == nil
			},
		},
		{
			Name:    "dp-se",
			Summary: "DP Successive Elimination (000 Alg. 3): epochs, Lap(1/(eps R_e)) per arm per epoch; eps-DP (zCDP via eps=sqrt(2 rho))",
			Private: true,
			PureDP:  true,
			Public: &Public{Name: "se", Summary: "successive elimination: DP-SE without noise, the non-private counterpart of dp-se",
				Bound: dpseBound},
			Params: params{"beta": seBeta},
			Policy: func(p Args, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.NewDPSE(s, b, p.F("beta"))
			},
			Bound:       dpseBound,
			AuditTables: dpseAuditTables,
		},
		{
			Name:    "thompson",
			Summary: "Thompson sampling with Beta(1,1) priors (binarised rewards), non-private, one step per plan",
			Params:  params{},
			Policy:  settingOnly(mab.NewThompson),
		},
		{
			Name:    "kl-ucb",
			Summary: "KL-UCB (Garivier & Cappe 2011), exploration ln t + c ln ln t, non-private, one step per plan",
			Params:  params{"c": klC},
			Policy: func(p Args, _ privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.NewKLUCB(s, p.F("c"))
			},
		},
	}
}

// settingOnly adapts the constructor of a non-private policy without
// parameters to the catalogue's constructor type.
func settingOnly[P bandit.Policy](f func(bandit.Setting) (P, error)) func(Args, privacy.Budget, bandit.Setting) (bandit.Policy, error) {
	return func(_ Args, _ privacy.Budget, s bandit.Setting) (bandit.Policy, error) { return f(s) }
}

// dpseBound is the high-probability regret bound of DP-SE that follows
// from Lemma 4.1 of seed 000 (theory.DPSEPulls): sum_a gap_a * pulls_a,
// which holds with probability at least 1 - beta.
func dpseBound(p Args, b privacy.Budget, gaps []float64, T int64) (float64, bool) {
	eps := math.Inf(1)
	if b.IsPrivate() {
		rho, err := b.ToZCDP()
		if err != nil {
			return 0, false
		}
		eps = math.Sqrt(2 * rho)
	}
	total := 0.0
	for _, g := range gaps {
		if g > 0 {
			n, err := theory.DPSEPulls(g, len(gaps), p.F("beta"), eps, T)
			if err != nil {
				return 0, false
			}
			total += g * n
		}
	}
	return total, true
}

// dpseAuditTables puts arm 0's first-epoch mean on DP-SE's elimination
// boundary: every arm pays 1/2 except arm 0, which pays 1/2 - 2h - 2c
// (mab.DPSEEpoch, epoch 1), so whether it survives the first epoch hinges
// on the noise, and the one differing reward moves the odds.
func dpseAuditTables(p Args, b privacy.Budget, k int, T int64) (audit.Neighbours, error) {
	rho, err := b.ToZCDP()
	if err != nil {
		return audit.Neighbours{}, err
	}
	eps := math.Sqrt(2 * rho)
	if b.Notion == privacy.Pure {
		eps = b.Eps
	}
	_, h, c := mab.DPSEEpoch(1, k, p.F("beta"), eps, 1)
	nb := audit.Hard(k, T)
	nb.Base[0] = math.Max(0, 0.5-2*h-2*c)
	nb.First = [2]float64{1, 0}
	return nb, nil
}
