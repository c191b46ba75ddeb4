package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

// TestChangesWithoutDrawsReplay: an activation and a retired event's
// reward are changes that draw nothing: after a crash (no snapshot at
// the stop) the history replays, the random words of the decisions
// before them stored once.
func TestChangesWithoutDrawsReplay(t *testing.T) {
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := enginetest.Start(t, dsn, enginetest.Config{})
		h.Create(personalizerSpec("pz"))
		x := h.Get("pz")
		rank(t, h, "pz", storetest.RankBody("deferred", nil, true))
		if err := x.Activate(context.Background(), "deferred"); err != nil {
			t.Fatal(err)
		}
		rank(t, h, "pz", storetest.RankBody("retired", nil, false))
		if err := x.Configure(context.Background(), define.Setting{Reset: true}); err != nil {
			t.Fatal(err)
		}
		h.Reward("pz", "retired", 1)
		h.Crash()
		h.Open()
		if st := h.State("pz"); st.Failed != "" || st.Decisions != 2 || st.Ignored != 1 {
			t.Fatalf("after a crash: %+v, %s", st.Counts, st.Failed)
		}
	})
}

// TestWindowAndDefaultChange: a change of the reward window and of the
// default reward applies at once, to the events still waiting too: an
// event decided under a 10-minute window is settled 2 s after a change to
// 1 s, with the new default reward.
func TestWindowAndDefaultChange(t *testing.T) {
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		clock := storetest.NewClock(time.Unix(1e9, 0))
		h := enginetest.Start(t, dsn, enginetest.Config{Now: clock.Now, KeepLog: true})
		sp := personalizerSpec("pz")
		sp["exploration"] = 1e-12 // the first decision learns (TestDeferredActivation)
		h.Create(sp)
		rank(t, h, "pz", storetest.RankBody("waits", nil, false))
		half := 0.5
		if err := h.Get("pz").Configure(context.Background(), define.Setting{RewardWindowSeconds: 1, DefaultReward: &half}); err != nil {
			t.Fatal(err)
		}
		clock.Add(2 * time.Second)
		h.Expire(clock.Now())
		rec, err := event(h, "pz", "waits")
		if err != nil || rec == nil || rec.Status != store.Defaulted || rec.Reward == nil || *rec.Reward != 0.5 {
			t.Fatalf("after the change and 2 s: %+v (%v)", rec, err)
		}
	})
}
