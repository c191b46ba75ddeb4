// Package outcome is what became of an experiment's events and what its
// clients are shown of it, apart from the experiment that decides and
// learns (service/engine): the answer to a decision (Decision) and to a
// reward (RewardResult, whose reason not to learn is package reason's),
// the status a settled event takes and whether its reward is learned
// (Settle), the public counts (Counts, Sample, which the experiment's
// snapshot holds: service/snapshot) and their tally (Decided, Settled,
// Sampled), and the experiment's state (State, with an identification's
// outcome, Identified).
//
// Everything here is a plain value or a pure function of an event's
// fields (store.Event): the engine fills and calls them under its own
// lock, and the API renders them (their JSON is the service's answers).
package outcome

import (
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/store"
)

// Decision is the answer to a decision request.
type Decision struct {
	EventID       string  `json:"event_id"`
	Arm           int     `json:"arm"`
	Probability   float64 `json:"probability"`
	PolicyVersion int64   `json:"policy_version"`
	// Learns is false for an overflow decision, whose reward will not be
	// learned (bandit.Delayed).
	Learns bool `json:"learns"`
	// PolicyArm is the policy's own arm (a rank's propensities of its
	// other actions), Seq the decision's operation (the settings it was
	// taken under); neither is shown.
	PolicyArm int   `json:"-"`
	Seq       int64 `json:"-"`
}

// DecisionOf returns the answer of a decided event.
func DecisionOf(ev store.Event) Decision {
	return Decision{EventID: ev.ID, Arm: ev.Arm, Probability: ev.PScore, PolicyVersion: ev.Plan, Learns: ev.Plan != 0, PolicyArm: ev.PolicyArm, Seq: ev.Seq}
}

// RewardResult is the answer to a reward.
type RewardResult struct {
	EventID string `json:"event_id"`
	Status  string `json:"status"`
	Learned bool   `json:"learned"`
	// Reason says why an acknowledged reward was not learned (one of
	// package reason's: reason.Overflow, Exploration, ContributionLimit,
	// UnitBudget, or on the Personalizer surface NotActivated,
	// ModelReset or LoggingOnly).
	Reason string `json:"reason,omitempty"`
	// Slot is the slot of a slate's reward (package rank).
	Slot string `json:"slot,omitempty"`
}

// ResultOf returns the answer of an event's reward: learned when it
// settled Learned or Defaulted.
func ResultOf(ev store.Event) RewardResult {
	return RewardResult{EventID: ev.ID, Status: ev.Status, Learned: ev.Status == store.Learned || ev.Status == store.Defaulted, Reason: ev.Reason}
}

// Retried returns the answer to a reward for ev, an event already
// settled: the first reward counts, and a later one, equal or not, gets
// its result (once the service has deleted a reward, or never stored an
// ignored one, it cannot tell a retry from another value, and it answers
// the same before); an event settled without its reward (Defaulted or
// Expired: its window passed, or it was overdue) refuses it (Conflict).
func Retried(ev store.Event) (RewardResult, error) {
	if ev.Status == store.Defaulted || ev.Status == store.Expired {
		return RewardResult{}, fault.Errorf(fault.Conflict, "event %q was settled without its reward (%s: its reward window passed, or it was overdue)", ev.ID, ev.Status)
	}
	return ResultOf(ev), nil
}

// Activated marks, in a pending event's Reason, a deferred event that
// was activated (stored by an update of the event); it is no reason not
// to learn (those are package reason's).
const Activated = "activated"

// Explored reports whether a decision played an arm drawn by
// exploration instead of the policy's.
func Explored(ev store.Event) bool { return ev.PolicyArm >= 0 && ev.Arm != ev.PolicyArm }

// Settle returns the status in which an event settles and whether its
// reward is learned, given the status asked (store.Learned for a reward
// that came, store.Defaulted for the default reward, store.Expired for
// none) and reason, why its reward is not learned ("" if nothing
// refuses it): a reward refused is Ignored, a default refused Expired;
// one not refused keeps the status asked, learned unless Expired.
func Settle(status, reason string) (string, bool) {
	switch {
	case reason == "":
		return status, status != store.Expired
	case status == store.Defaulted:
		return store.Expired, false
	case status == store.Learned:
		return store.Ignored, false
	}
	return status, false
}
