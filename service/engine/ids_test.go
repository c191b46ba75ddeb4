package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/store"
)

// TestOldEventsAnsweredFromTheStore: past Config.KeepEvents settled events an
// experiment forgets the oldest from memory; a retry of one is answered
// from the store with the same decision and reward result, an id reused
// for another unit is still a conflict, and a new id decides as usual.
// Both stores.
func TestOldEventsAnsweredFromTheStore(t *testing.T) {
	const keep = 64
	enginetest.EachStore(t, enginetest.Config{KeepEvents: keep}, func(t *testing.T, h *enginetest.Harness) {
		h.Create(storetest.BernoulliSpec("e", 3, 0.5))
		x := h.Get("e")
		first := map[string]outcome.Decision{}
		var last chan struct{}
		const n = keep + 500
		for i := range n {
			ev := fmt.Sprint(i)
			d, _, err := x.StartDecide(ev, ev, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if i < 10 {
				first[ev] = d
			}
			if _, last, err = x.StartReward(ev, float64(i%2)); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.Writer.Wait(context.Background(), last); err != nil {
			t.Fatal(err)
		}
		h.Decide("e", "fresh", "fresh") // a decision after the last commit: the oldest settled leave memory
		mem := engine.Inspect(x).Events
		kept, old := len(mem), mem["0"]
		if kept > keep+2 || old {
			t.Fatalf("%d events in memory (event 0 among them: %v), want at most %d", kept, old, keep+2)
		}
		for ev, d := range first {
			if again := h.Decide("e", ev, ev); again != d {
				t.Errorf("retry of decision %s: %+v, first %+v", ev, again, d)
			}
			res := h.Reward("e", ev, 0)
			if res.EventID != ev || res.Status == store.Pending {
				t.Errorf("retry of reward %s: %+v", ev, res)
			}
		}
		if _, err := h.DecideWith("e", "3", "other", nil); fault.Of(err) != fault.Conflict {
			t.Errorf("event 3 reused for another unit: %v, want a conflict", err)
		}
		if st := h.State("e"); st.Decisions != n+1 {
			t.Errorf("%d decisions, want %d", st.Decisions, n+1)
		}
	})
}
