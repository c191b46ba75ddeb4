package rules

import (
	"math"

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
// with reason.LoggingOnly; nothing is released and nothing is debited.
// The decisions taken before the change to LoggingOnly are learned as
// they would have been; those after a change back to Online or
// Apprentice are the learner's again.

// AroundBaseline draws the served action among k, the baseline b with
// exploration e: b, unless the exploration coin (the top 53 bits of a
// word m, exploring when m/2^53 < e, as the engine's take) explores,
// then one drawn uniformly from the next words (rejection: a word at or
// above the largest multiple of k is drawn again). word is the engine's
// tape, so that every word is recorded once and replayed.
func AroundBaseline(k, b int, e float64, word func() uint64) int {
	if float64(word()>>11)/(1<<53) >= e {
		return b
	}
	limit := math.MaxUint64 - math.MaxUint64%uint64(k) // rejection: uniform on [0, k)
	w := word()
	for w >= limit {
		w = word()
	}
	return int(w % uint64(k))
}

// LoggingOnlySince returns the operation from which a definition with
// settings has been in logging only mode without a break (0: it is not
// now).
func LoggingOnlySince(settings []define.Setting) int64 {
	mode, since := define.ModeOnline, int64(0)
	for _, s := range settings {
		if s.Mode == "" || s.Mode == mode {
			continue
		}
		if mode = s.Mode; mode == define.ModeLoggingOnly {
			since = s.From
		}
	}
	if mode != define.ModeLoggingOnly {
		return 0
	}
	return since
}
