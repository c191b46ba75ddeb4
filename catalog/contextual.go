package catalog

import (
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/privacy"
)

// contextualBandits returns the linear contextual bandit algorithms
// (seed 001, Section IV-B).
func contextualBandits() []Algorithm {
	return []Algorithm{
		{
			Name:     "uniform",
			Baseline: true,
			Summary:  "uniform play: an action drawn uniformly from each decision set, nothing learned (the baseline); non-private; contextual",
			Contextual: func(_ Args, _ privacy.Budget, s contextual.Setting) (contextual.Policy, error) {
				return contextual.NewUniform(s)
			},
		},
		{
			Name:       "oful",
			Summary:    "OFUL (Abbasi-Yadkori et al. 2011): ridge estimate and radius updated every step; non-private; contextual",
			Params:     params{"lambda": ridgeLambda, "delta": confDelta, "s": thetaBound},
			Contextual: oful(false, false),
		},
		{
			// Not generated from adac-oful: its c may be 0 (OFUL), which
			// the private algorithm excludes (privateSwitchC).
			Name:       "rs-oful",
			Summary:    "rarely switching OFUL: re-estimates when det V grows by 1 + c; non-private; contextual",
			Params:     params{"lambda": ridgeLambda, "delta": confDelta, "s": thetaBound, "c": switchC},
			Contextual: oful(true, false),
		},
		{
			Name:        "adac-oful",
			Summary:     "AdaC-OFUL (001 Alg. 3, Thm 14): Gaussian noise on each episode's sum a r, widened radius; zCDP, (eps,delta) or Renyi; contextual",
			Private:     true,
			Gaussian:    true,
			Counterpart: "rs-oful",
			Params:      params{"lambda": ridgeLambda, "delta": confDelta, "s": thetaBound, "c": privateSwitchC},
			Contextual:  oful(true, true),
		},
	}
}

// oful is the constructor of OFUL (switching false: c = 0, a
// re-estimation every step) and of its rarely switching versions (c from
// the parameters); a non-private one ignores the budget it is given.
func oful(switching, private bool) func(Args, privacy.Budget, contextual.Setting) (contextual.Policy, error) {
	return func(p Args, b privacy.Budget, s contextual.Setting) (contextual.Policy, error) {
		c := 0.0
		if switching {
			c = p.F("c")
		}
		if !private {
			b = privacy.None()
		}
		return contextual.New(s, contextual.Config{Lambda: p.F("lambda"), Delta: p.F("delta"), S: p.F("s"), C: c, Budget: b})
	}
}
