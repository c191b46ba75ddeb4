package reason

import (
	"slices"
	"testing"
)

// TestStored pins every reason as the service stores it (store.Event's
// Reason, in histories) and answers it (a reward's "reason"): a stored
// history keeps these strings, so none may change, and the list is
// complete (each reason once).
func TestStored(t *testing.T) {
	want := []string{"overflow", "exploration", "contribution_limit", "unit_budget", "not_activated", "model_reset", "logging_only"}
	got := NotLearned()
	if !slices.Equal(got, want) {
		t.Fatalf("NotLearned() = %q; want %q", got, want)
	}
	named := []string{Overflow, Exploration, ContributionLimit, UnitBudget, NotActivated, ModelReset, LoggingOnly}
	if !slices.Equal(named, want) {
		t.Fatalf("the constants are %q; want %q", named, want)
	}
	got[0] = "changed"
	if NotLearned()[0] != Overflow {
		t.Fatal("NotLearned shares its list with its callers")
	}
}
