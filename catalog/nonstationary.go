package catalog

import (
	"math"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/internal/liberr"
	"github.com/dpbandit/dpbandit/mab"
	"github.com/dpbandit/dpbandit/privacy"
)

// block is the restarts' block length, 0 for ceil(2 sqrt(T ln T)), the
// sliding window's length in Garivier and Moulines' tuning with one
// breakpoint as the spec recalls it (not checked in their paper).
var block = Param{Default: 0, Min: 0, Max: 1e9}

// tuned returns v, or for v = 0 ceil(2 sqrt(T ln T)), which needs the
// horizon.
func tuned(v float64, T int64) (int64, error) {
	if v > 0 {
		return int64(math.Ceil(v)), nil
	}
	if T < 2 {
		return 0, liberr.Input("catalog", "the default window or block length needs the horizon")
	}
	return max(1, int64(math.Ceil(2*math.Sqrt(float64(T)*math.Log(float64(T)))))), nil
}

// nonStationary returns the policies for drifting rewards
// (docs/algorithms.md, "Drifting rewards"). The sliding-window policies
// (mab.SWUCB, mab.DUCB) are not entries yet: see there.
func nonStationary() []Algorithm {
	return []Algorithm{
		{
			Name:     "dp-restart-adac-ucb",
			Summary:  "AdaC-UCB restarted on fixed blocks (ours): each block sees its own rewards, parallel composition; zCDP, (eps,delta) or Renyi",
			Private:  true,
			Gaussian: true,
			Public: &Public{Name: "restart-ucb-doubling",
				Summary: "UCB with doubling and forgetting restarted on fixed blocks, non-private"},
			Params: params{"block": block, "beta": doublingBeta},
			Policy: func(p Args, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				h, err := tuned(p.F("block"), s.Horizon)
				if err != nil {
					return nil, err
				}
				beta := p.F("beta")
				return mab.NewRestart(s, h, func(s bandit.Setting) (bandit.Policy, error) { return mab.NewAdaCUCB(s, b, beta) })
			},
		},
	}
}
