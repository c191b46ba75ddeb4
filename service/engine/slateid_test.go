package engine

import (
	"testing"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// TestSlateRewardWithoutSlot: a reward for a slate's event that names no
// slot is a client's mistake about the event, not an unknown event: it
// is Invalid (400, naming the slot field), not NotFound (404 "decide
// first", which sent a client to decide an event it had decided).
func TestSlateRewardWithoutSlot(t *testing.T) {
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := start(t, dsn, config{})
		h.create(personalizerSpec("pz"))
		x := h.get("pz")
		h.slate("pz", slateBody("page", [3][]string{}, false))
		if _, err := x.Reward(contextBG(), "page", 1); fault.Of(err) != fault.Invalid {
			t.Fatalf("a slate's reward without its slot: %v (kind %v), want Invalid", err, fault.Of(err))
		}
		if _, err := x.Reward(contextBG(), "nope", 1); fault.Of(err) != fault.NotFound {
			t.Fatalf("an unknown event's reward: %v, want NotFound", err)
		}
		if res, err := x.RewardSlot(contextBG(), "page", "slot0", 1); err != nil || res.Slot != "slot0" {
			t.Fatalf("the slot's reward after the refusal: %+v, %v", res, err)
		}
	})
}
