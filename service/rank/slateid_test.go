package rank

import (
	"context"
	"testing"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// TestSlateRewardWithoutSlot: a reward for a slate's event that names no
// slot is a client's mistake about the event, not an unknown event: it
// is Invalid (400, naming the slot field), not NotFound (404 "decide
// first", which sent a client to decide an event it had decided).
func TestSlateRewardWithoutSlot(t *testing.T) {
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := enginetest.Start(t, dsn, enginetest.Config{})
		h.Create(personalizerSpec("pz"))
		x := h.Get("pz")
		rankSlate(t, h, "pz", slateBody("page", [3][]string{}, false))
		if _, err := x.Reward(context.Background(), "page", 1); fault.Of(err) != fault.Invalid {
			t.Fatalf("a slate's reward without its slot: %v (kind %v), want Invalid", err, fault.Of(err))
		}
		if _, err := x.Reward(context.Background(), "nope", 1); fault.Of(err) != fault.NotFound {
			t.Fatalf("an unknown event's reward: %v, want NotFound", err)
		}
		if res, err := RewardSlot(context.Background(), x, "page", "slot0", 1); err != nil || res.Slot != "slot0" {
			t.Fatalf("the slot's reward after the refusal: %+v, %v", res, err)
		}
	})
}
