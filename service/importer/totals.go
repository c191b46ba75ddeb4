package importer

import (
	"strings"

	"github.com/dpbandit/dpbandit/service/reason"
	"github.com/dpbandit/dpbandit/service/store"
)

// Totals is what imports brought an experiment (in its outcome.State,
// over every import; in a Result, that import's).
type Totals struct {
	// Events counts the logged events used: decisions taken by the
	// import and given their logged rewards, learned or not.
	Events int64 `json:"events"`
	// Learned counts those the policy learned; the others were ignored
	// for the reasons below, as live rewards are.
	Learned           int64 `json:"learned"`
	ContributionLimit int64 `json:"ignored_contribution_limit"`
	UnitBudget        int64 `json:"ignored_unit_budget"`
	Exploration       int64 `json:"ignored_exploration"`
	Overflow          int64 `json:"ignored_overflow"`
	// NoLoggedReward counts the decisions whose arm had no logged
	// reward left (each ends its import; it expired, learning nothing).
	NoLoggedReward int64 `json:"decisions_without_logged_reward"`
	// NotMatched counts, in a contextual experiment's replay, the logged
	// events on which the policy chose another action than the logged
	// one: their decisions expired, learning nothing.
	NotMatched int64 `json:"not_matched"`
	// NanoRho is what the learned rewards debited their units, in
	// nano-rho (1e-9 rho), as live rewards debit.
	NanoRho int64 `json:"nano_rho_debited"`
}

// Add counts an imported event settled with status (store.Learned,
// store.Ignored or store.Expired) and why (package reason's reason for
// not learning it, "" when learned, or the Miss of an expired one), that
// debited its unit nano nano-rho.
func (t *Totals) Add(status, why string, nano int64) {
	if status == store.Expired {
		if why == string(NotMatched) {
			t.NotMatched++
		} else {
			t.NoLoggedReward++
		}
		return
	}
	t.Events++
	t.NanoRho += nano
	switch why {
	case "":
		t.Learned++
	case reason.ContributionLimit:
		t.ContributionLimit++
	case reason.UnitBudget:
		t.UnitBudget++
	case reason.Exploration:
		t.Exploration++
	default: // reason.Overflow
		t.Overflow++
	}
}

// Count adds to t the events of a stored history (store.History's
// Events) settled after operation from, when they are an import's (their
// stored Reason): a restart counts them again, after its snapshot (whose
// totals count those up to from; 0: none).
func (t *Totals) Count(events []store.Event, from int64) {
	for _, e := range events {
		if why, ok := IsImported(e.Reason); ok && max(e.Seq, e.RSeq) > from {
			t.Add(e.Status, why, e.Debit)
		}
	}
}

// A Miss is why an imported decision gets no logged reward: it expires
// at once, learning nothing, and its stored reason says why.
type Miss string

const (
	// NoLoggedReward: the decision's arm has no logged reward left (the
	// end of a reward table).
	NoLoggedReward Miss = "no_logged_reward"
	// NotMatched: in a replay, the policy chose another action than the
	// logged one.
	NotMatched Miss = "not_matched"
)

// importReason is the stored reason of a learned imported event.
const importReason = "imported"

// Reason is the stored reason of an imported event settled with reason
// (as Add's): "imported", or "imported:" and reason. A restart counts
// the imported events again from it (IsImported).
func Reason(reason string) string {
	if reason == "" {
		return importReason
	}
	return importReason + ":" + reason
}

// IsImported reports whether a stored reason is an imported event's
// (Reason), and returns the reason it marks.
func IsImported(stored string) (string, bool) {
	if stored == importReason {
		return "", true
	}
	return strings.CutPrefix(stored, importReason+":")
}
