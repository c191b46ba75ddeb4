package rules

import (
	"github.com/dpbandit/dpbandit/service/define"
)

// Logging only (a Personalizer experiment's learningMode "LoggingOnly").
// Each decision serves its baseline (define.Baseline: a rank's first
// eligible action, a slot's baselineAction) with exploration around it
// (Explore), the logging policy of apprentice mode: the baseline with probability
// 1 - p + p/k, every other eligible action p/k, so that the log's
// propensities are exact and positive and the log can evaluate other
// policies offline (served with probability 1, it could evaluate none
// but the baseline). The learner is not asked: the decision's ticket is
// in no plan, so its reward, acknowledged and stored as any, is ignored
// with reason.LoggingOnly; nothing is released and nothing is debited.
// The decisions taken before the change to LoggingOnly are learned as
// they would have been; those after a change back to Online or
// Apprentice are the learner's again.

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
