package catalog

import (
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/privacy"
)

// radiusScale is adac-oful-scaled's beta, the factor of AdaC-OFUL's
// radius beta~ (0: the greedy choice on the released estimate). Its
// default, 0.3, was chosen on the decision service's simulated site
// (docs/algorithms.md, docs/personalizer.md).
var radiusScale = Param{Default: 0.3, Min: 0, Max: 100}

// scaledContextual returns AdaC-OFUL with a scaled radius: 001's
// Algorithm 3 (its releases and estimate theta~ unchanged), choosing
// argmax_a <theta~, a> + beta beta~ ||a||_{V_tau^-1}. A beta below 1
// is our tuning, and beta = 0 our greedy variant, not 001's: Theorem
// 14's regret bound assumes beta = 1. The privacy guarantee is
// AdaC-OFUL's: the choice is post-processing of the releases and of V.
func scaledContextual() []Algorithm {
	return []Algorithm{{
		Name: "adac-oful-scaled",
		Summary: "AdaC-OFUL (001 Alg. 3) choosing with its radius beta~ times beta (0: greedy on the released theta~; our variant, " +
			"for a service that explores by itself); zCDP, (eps,delta) or Renyi; contextual",
		Private:     true,
		Gaussian:    true,
		Counterpart: "rs-oful",
		Params:      params{"lambda": ridgeLambda, "delta": confDelta, "s": thetaBound, "c": privateSwitchC, "beta": radiusScale},
		Contextual: func(p Args, b privacy.Budget, s contextual.Setting) (contextual.Policy, error) {
			beta := p.F("beta")
			return contextual.New(s, contextual.Config{Lambda: p.F("lambda"), Delta: p.F("delta"), S: p.F("s"), C: p.F("c"),
				Budget: b, Scale: beta, Greedy: beta == 0})
		},
	}}
}
