package define

import (
	"math"
)

// Propensity is the probability that the logging policy plays arm when
// the policy's own choice is policyArm: p/K for each arm, and 1 - p more
// for the policy's own, p the probability of exploring (ExploreProb;
// under the rules before RulesExactPropensity, e itself, as the
// decisions of those experiments were stored and replay). The decision's
// probability and the exported log's distribution are both computed
// here, so that they agree to the bit.
func (d *Definition) Propensity(arm, policyArm int) float64 {
	return d.PropensityOf(arm, policyArm, d.Arms)
}

// PropensityOf is Propensity over k arms (a rank's eligible actions).
func (d *Definition) PropensityOf(arm, policyArm, k int) float64 {
	p := d.Exploration
	if d.Rules >= RulesExactPropensity {
		p = ExploreProb(p)
	}
	q := p / float64(k)
	if arm == policyArm {
		return 1 - p + q
	}
	return q
}

// ExploreProb is the probability that take's coin, a tape word's top 53
// bits m explore when m/2^53 < e, explores: ceil(e 2^53)/2^53, exactly
// (an integer up to 2^53 over a power of two). It is e when e is on that
// grid, and above e by less than 2^-53 otherwise; the propensities are
// computed from it, so that they are the logging policy's to the last
// bit (for e = 1e-20, 2^-53, not 1e-20).
func ExploreProb(e float64) float64 { return math.Ceil(e*(1<<53)) / (1 << 53) }
