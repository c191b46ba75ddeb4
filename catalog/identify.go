package catalog

import (
	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mab"
	"github.com/dpbandit/dpbandit/privacy"
)

// The parameters of the best-arm identifications: the risk delta (0.01 in
// Azize et al.'s experiments) and the probability beta of playing the
// leader (0.5 there).
var (
	baiDelta  = Param{Default: 0.01, Min: 1e-15, Max: 1, MaxOpen: true}
	baiLeader = Param{Default: 0.5, Min: 0, MinOpen: true, Max: 1, MaxOpen: true}
	// ttThreshold is AdaP-TT's stopping threshold (mab.Threshold, in its
	// order): their code's theory-style one (dp_c), the default, or the
	// authors' experiments' (emp_c), not delta-correct at high privacy.
	ttThreshold = choice("", "theory", "experiments")
)

// identification returns the best-arm identifications with fixed
// confidence (Azize, Jourdan, Al Marjani and Basu, NeurIPS 2023): policies
// of the finite-armed kind that stop exploring when their stopping rule
// fires and then play the recommended arm (bandit.Identifier; the
// simulator records the stopping time and whether the arm was wrong).
func identification() []Algorithm {
	return []Algorithm{
		{
			Name:        "adap-tt",
			Summary:     "AdaP-TT (Azize et al. NeurIPS 2023): best-arm identification, Top Two on private means of doubling phases, Lap(1/(eps n)) per phase; stops with a winner at risk delta (threshold=experiments: the paper's figures' threshold); eps-DP (zCDP via eps=sqrt(2 rho))",
			Private:     true,
			PureDP:      true,
			Counterpart: "tt-ucb",
			Params:      params{"delta": baiDelta, "beta": baiLeader, "threshold": ttThreshold},
			Policy: func(p Args, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.NewAdaPTT(s, b, p.F("delta"), p.F("beta"), mab.Threshold(p.F("threshold")))
			},
			Redraw: func(p Args, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.BrokenAdaPTT(s, b, p.F("delta"), p.F("beta"), mab.Threshold(p.F("threshold")))
			},
		},
		{
			Name:    "tt-ucb",
			Summary: "TT-UCB, the non-private Top Two of AdaP-TT's experiments (Azize et al. 2023): best-arm identification, stops with a winner at risk delta",
			Params:  params{"delta": baiDelta, "beta": baiLeader},
			Policy: func(p Args, _ privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.NewTTUCB(s, p.F("delta"), p.F("beta"))
			},
		},
		{
			Name:        "dp-se-bai",
			Summary:     "DP-SE (000 Alg. 3) as a best-arm identification, AdaP-TT's private baseline: stops with one arm left, at risk delta; eps-DP (zCDP via eps=sqrt(2 rho))",
			Private:     true,
			PureDP:      true,
			Counterpart: "tt-ucb",
			Params:      params{"delta": baiDelta},
			Policy: func(p Args, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.NewDPSEIdentifier(s, b, p.F("delta"))
			},
			AuditTables: func(p Args, b privacy.Budget, k int, T int64) (audit.Neighbours, error) {
				return dpseAuditTables(Args{algo: "dp-se-bai", values: map[string]float64{"beta": p.F("delta")}}, b, k, T)
			},
		},
	}
}
