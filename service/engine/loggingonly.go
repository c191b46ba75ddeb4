package engine

import (
	"math"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/service/define"
)

// Logging only (a Personalizer experiment's learningMode "LoggingOnly").
// Each decision serves its baseline (define.Baseline: a rank's first
// eligible action, a slot's baselineAction) with exploration around it,
// the logging policy of apprentice mode: the baseline with probability
// 1 - p + p/k, every other eligible action p/k, so that the log's
// propensities are exact and positive and the log can evaluate other
// policies offline (served with probability 1, it could evaluate none
// but the baseline). The learner is not asked: the decision's ticket is
// in no plan, so its reward, acknowledged and stored as any, is ignored
// with reasonLoggingOnly; nothing is released and nothing is debited
// (admit). The decisions taken before the change to LoggingOnly are
// learned as they would have been; those after a change back to Online
// or Apprentice are the learner's again.

// reasonLoggingOnly is why the reward of a decision taken in logging
// only mode is not learned.
const reasonLoggingOnly = "logging_only"

// takeLogging is take in logging only mode: the baseline b (its index
// in set) with exploration, in no plan. The caller holds x.mu.
func (x *Experiment) takeLogging(set [][]float64, b int) (bandit.Ticket, float64, int, error) {
	arm := x.aroundBaseline(len(set), b)
	return bandit.Ticket{Arm: arm}, x.set.eff.PropensityOf(arm, b, len(set)), b, nil
}

// aroundBaseline draws the served action among k: b, unless the
// exploration coin (a tape word, as take's) explores, then one drawn
// uniformly from the tape's words. The caller holds x.mu.
func (x *Experiment) aroundBaseline(k, b int) int {
	if float64(x.tape.Uint64()>>11)/(1<<53) >= x.set.eff.Exploration {
		return b
	}
	limit := math.MaxUint64 - math.MaxUint64%uint64(k) // rejection: uniform on [0, k)
	w := x.tape.Uint64()
	for w >= limit {
		w = x.tape.Uint64()
	}
	return int(w % uint64(k))
}

// loggedOnly reports whether rec was decided in logging only mode (under
// the settings of its operation). The caller holds x.mu.
func (x *Experiment) loggedOnly(rec *record) bool {
	if x.def.Surface != define.SurfacePersonalizer || len(x.def.Settings) == 0 {
		return false
	}
	_, cur := x.def.Effective(rec.Seq)
	return cur.Mode == define.ModeLoggingOnly
}
