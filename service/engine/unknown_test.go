package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// TestUnknownEventAsksTheLease: an event id that neither memory nor the
// store knows is answered unknown (404) only once Env.Holds says the
// replica still holds the experiment's lease, else with Holds's error
// (503, retried): a replica that lost its lease does not know what its
// successor decided (unknown.go, TestStaleHolderAnswersNoUnknownEvent).
// Decisions and known events ask nothing.
func TestUnknownEventAsksTheLease(t *testing.T) {
	t.Parallel()
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{})
	h.Create(storetest.BernoulliSpec("e", 2, 0.5))
	x := h.Get("e")
	var asked []string
	var holds error
	h.Env.Holds = func(_ context.Context, exp string) error {
		asked = append(asked, exp)
		return holds
	}
	if _, err := x.Decide(context.Background(), "known", "u", "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Reward(context.Background(), "known", 1); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 0 {
		t.Fatalf("a decision and the reward of a known event asked for the lease: %v", asked)
	}
	if _, _, err := x.StartReward("nobody", 1); fault.Of(err) != fault.NotFound {
		t.Fatalf("the reward of an unknown event, the lease held: %v, want NotFound", err)
	}
	if len(asked) != 1 || asked[0] != "default/e" {
		t.Fatalf("the lease asked for %v, want once for default/e", asked)
	}
	holds = fault.RetryLater("experiment %q is moving between replicas", "e")
	if _, _, err := x.StartReward("nobody", 1); !errors.Is(err, holds) {
		t.Fatalf("the reward of an unknown event, the lease lost: %v, want %v", err, holds)
	}
}
