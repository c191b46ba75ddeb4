package catalog

import (
	"math"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mab"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/privacy"
)

// prepulls is TS-GDP's b, the pulls of every arm before the first draw:
// -1 (the default) lets privacy.ThompsonPrepulls choose it for the
// budget and horizon; an explicit count must be a whole number.
var prepulls = Param{Default: mab.AutoPrepulls, Min: mab.AutoPrepulls, Max: 1e6}

// tsAuditHorizon is the horizon of TS-GDP's audit tables (tsAuditTables).
const tsAuditHorizon = 1 << 12

// thompsonGDP returns the private Thompson sampling entries (finite-armed).
func thompsonGDP() []Algorithm {
	return []Algorithm{{
		Name: "ts-gdp",
		Summary: "Gaussian Thompson sampling, b pre-pulls, variance factor c (Ou, Avella Medina, Cummings 2024, on Agrawal-Goyal " +
			"2013 Alg. 2): each draw a Gaussian mechanism, composed over T; zCDP, (eps,delta) or Renyi",
		Private:  true,
		Gaussian: true,
		Public: &Public{Name: "ts-gauss",
			Summary: "Gaussian-prior Thompson sampling (Agrawal and Goyal 2013, Alg. 2), non-private, with b pre-pulls (auto: 0)"},
		Params: params{"prepulls": prepulls},
		Policy: func(p Args, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
			n, err := wholePrepulls(p.F("prepulls"))
			if err != nil {
				return nil, err
			}
			return mab.NewTSGDP(s, b, n)
		},
		WeakAudit: "one reward moves arm 0's posterior mean by 1/(b+1) against draws of standard deviation sqrt(c/(b+1)), " +
			"and the decisions show only which of K draws is largest: audited through its releases (every draw)",
		AuditTables: tsAuditTables,
	}}
}

// wholePrepulls returns the pre-pull count x, which must be a whole
// number (or mab.AutoPrepulls).
func wholePrepulls(x float64) (int64, error) {
	if x != math.Trunc(x) {
		return 0, mechanism.Inputf("catalog: prepulls must be a whole number (or -1: auto), got %v", x)
	}
	return int64(x), nil
}

// tsAuditTables are audit.Hard over tsAuditHorizon steps (or the audit's
// horizon if shorter): a reward of TS-GDP is in every later draw of its
// arm, so the releases audit (which follows every draw the pair moves)
// would follow some K T draws per trial at the audit's default horizon
// of 2^20; at 2^12 with K = 10 and rho = 0.1 the automatic pre-pulls
// (402 per arm) leave 76 steps of draws.
func tsAuditTables(_ Args, _ privacy.Budget, k int, T int64) (audit.Neighbours, error) {
	return audit.Hard(k, min(T, tsAuditHorizon)), nil
}
