package catalog

import (
	"math"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/internal/liberr"
	"github.com/dpbandit/dpbandit/mab"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/privacy"
)

// Garivier and Moulines' parameters (mab.SWUCB, mab.DUCB).
var (
	// gmXi is their xi, the padding's exploration; their theorems need
	// xi > 1/2.
	gmXi = Param{Default: 0.6, Min: 0.5, MinOpen: true, Max: 10}
	// gmWindow is the window tau, 0 for their tuning mab.GMWindow
	// (capped at the horizon).
	gmWindow = Param{Default: 0, Min: 0, Max: 1e9}
	// gmDiscount is the discount gamma, 0 for their tuning
	// mab.GMDiscount.
	gmDiscount = Param{Default: 0, Min: 0, Max: 1, MaxOpen: true}
	// gmBreakpoints is Upsilon_T, the breakpoints the tuning assumes
	// (rounded down).
	gmBreakpoints = Param{Default: 1, Min: 1, Max: 1e6}
)

// swAuditHorizon is the horizon of the private window's audit tables:
// long enough for its default window (33 steps at T = 64) to slide.
const swAuditHorizon = 64

// gmWindowOf returns the window of the spec: the parameter, or the
// tuning for the setting's horizon and range, raised to 2K steps if it is
// shorter; either capped at the horizon. A window parameter shorter than
// 2K steps is refused: the arms would not all fit in it twice, and the
// policy would mostly cycle through them whatever their rewards.
func gmWindowOf(p Args, s bandit.Setting) (int64, error) {
	tau, least := int64(math.Ceil(p.F("window"))), 2*int64(s.Arms)
	if tau == 0 {
		var err error
		if tau, err = mab.GMWindow(s.Horizon, int(p.F("breakpoints")), s.Bounds.Width()); err != nil {
			return 0, err
		}
		tau = max(tau, least)
	}
	if tau < least {
		return 0, liberr.Input("catalog", "a window of %d steps is shorter than 2K = %d: the policy would cycle through the arms", tau, least)
	}
	if s.Horizon > 0 {
		tau = min(tau, s.Horizon)
	}
	return tau, nil
}

// block is the restarts' block length, 0 for ceil(2 sqrt(T ln T)), the
// sliding window's length in Garivier and Moulines' tuning with one
// breakpoint and B = 1 (mab.GMWindow).
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
// (docs/algorithms.md, "Drifting rewards").
func nonStationary() []Algorithm {
	return []Algorithm{
		{
			Name: "dp-sw-ucb",
			Summary: "sliding-window UCB on private prefix sums (ours): window sums are differences of one K-dim smooth " +
				"continual counter's releases (Andersson-Pagh), padding of Garivier-Moulines 2011 plus the noise's width; zCDP, (eps,delta) or Renyi",
			Private:  true,
			Gaussian: true,
			Public: &Public{Name: "sw-ucb",
				Summary: "sliding-window UCB (Garivier and Moulines, ALT 2011, sec. 3.2): padding B sqrt(xi ln(min(t,tau))/N), tau tuned 2B sqrt(T ln T/breakpoints), non-private"},
			Params: params{"window": gmWindow, "xi": gmXi, "breakpoints": gmBreakpoints},
			Policy: func(p Args, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				tau, err := gmWindowOf(p, s)
				if err != nil {
					return nil, err
				}
				return mab.NewSWUCB(s, b, tau, p.F("xi"), mechanism.CounterSmooth)
			},
			AuditTables: func(_ Args, _ privacy.Budget, k int, T int64) (audit.Neighbours, error) {
				return audit.Hard(k, min(T, swAuditHorizon)), nil
			},
		},
		{
			Name:    "d-ucb",
			Summary: "discounted UCB (Garivier and Moulines, ALT 2011, sec. 3.1): padding 2B sqrt(xi ln n_t(gamma)/N_t(gamma,i)), gamma tuned 1 - sqrt(breakpoints/T)/(4B), non-private",
			Params:  params{"gamma": gmDiscount, "xi": gmXi, "breakpoints": gmBreakpoints},
			Policy: func(p Args, _ privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				g := p.F("gamma")
				if g == 0 {
					var err error
					if g, err = mab.GMDiscount(s.Horizon, int(p.F("breakpoints")), s.Bounds.Width()); err != nil {
						return nil, err
					}
				}
				return mab.NewDUCB(s, g, p.F("xi"))
			},
		},
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
