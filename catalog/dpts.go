package catalog

import (
	"math"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/internal/liberr"
	"github.com/dpbandit/dpbandit/mab"
	"github.com/dpbandit/dpbandit/privacy"
)

// prepulls is TS-GDP's b, the pulls of every arm before the first draw:
// -1 (the default) lets privacy.ThompsonPrepulls choose it for the
// budget and horizon; an explicit count must be a whole number.
// At most 1000: the audit of an explicit b follows K b pre-pulls and the
// draws after them (tsAuditTables), and larger counts are what the
// automatic choice is for.
var prepulls = Param{Default: mab.AutoPrepulls, Min: mab.AutoPrepulls, Max: 1000}

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
		return 0, liberr.Input("catalog", "prepulls must be a whole number (or -1: auto), got %v", x)
	}
	return int64(x), nil
}

// tsAuditTables are audit.Hard over a horizon short enough for the
// releases audit, which follows every draw the pair moves (at the audit's
// default 2^20 steps some 10^7 per trial): with the automatic pre-pulls,
// tsAuditHorizon steps (at K = 10 and rho = 0.1, 402 pre-pulls per arm
// and 76 steps of draws); with b explicit, the K b pre-pulls and then
// max(100, 4 rho (b+1)) steps of draws, so that the variance factor is
// about 2 or more and the budget is spent on draws the audit sees (at
// b = 1000: 401 steps, c = 2.0). Never beyond the audit's horizon.
func tsAuditTables(p Args, b privacy.Budget, k int, T int64) (audit.Neighbours, error) {
	n, err := wholePrepulls(p.F("prepulls"))
	if err != nil {
		return audit.Neighbours{}, err
	}
	h := int64(tsAuditHorizon)
	if n >= 0 {
		rho, err := privacy.ComposedRho(b)
		if err != nil {
			return audit.Neighbours{}, err
		}
		h = int64(k)*n + max(100, int64(math.Ceil(4*rho*float64(n+1))))
	}
	return audit.Hard(k, min(T, h)), nil
}
