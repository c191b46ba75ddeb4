// Package reason names every reason the service gives for an
// acknowledged reward it does not learn: the reward is stored with it
// (store.Event's Reason, kept in histories, so the strings never change)
// and answers with it (outcome.RewardResult's Reason, the label of the
// ignored rewards' metric). It is a leaf: the packages that refuse a
// reward (outcome, ledger, rules, engine) and the one that counts them
// (importer's Totals) name these constants.
package reason

const (
	// Overflow: the decision was taken outside the policy's plan.
	Overflow = "overflow"
	// Exploration: the decision's arm was drawn by exploration, not the
	// policy's (outcome.Explored).
	Exploration = "exploration"
	// ContributionLimit: the unit has contributed the experiment's
	// max_rewards_per_unit learned rewards already (package ledger).
	ContributionLimit = "contribution_limit"
	// UnitBudget: the reward's debit would take the unit's total over
	// the server's cap (--unit-budget; package ledger).
	UnitBudget = "unit_budget"
	// NotActivated: the decision's activation was deferred and it was
	// never activated (the Personalizer's deferActivation).
	NotActivated = "not_activated"
	// ModelReset: the event was pending when the learner was reset (a
	// model reset, or a new learner); its privacy is already spent or
	// never spent, and the ledger is never refunded.
	ModelReset = "model_reset"
	// LoggingOnly: the decision was taken in logging only mode (package
	// rules).
	LoggingOnly = "logging_only"
)

// NotLearned returns every reason, in the order above (a new list on
// each call).
func NotLearned() []string {
	return []string{Overflow, Exploration, ContributionLimit, UnitBudget, NotActivated, ModelReset, LoggingOnly}
}
