package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

// TestStoreLookupsFailUnavailable: when the store cannot answer a
// lookup on a request's path (an event no longer in memory, a unit's
// count not cached), the request is answered Unavailable and changes
// nothing: once the store answers again, the same request is served as
// if the failure had not been.
func TestStoreLookupsFailUnavailable(t *testing.T) {
	t.Parallel()
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{KeepEvents: 1})
	h.Create(storetest.BernoulliSpec("e", 2, 1))
	for i := range 5 {
		ev := fmt.Sprint(i)
		h.Decide("e", ev, "u"+ev)
		h.Reward("e", ev, 1)
	}
	h.Decide("e", "5", "u5") // the oldest settled events leave memory
	x := h.Get("e")
	h.Failing("Event", "UnitRewards")
	if _, err := x.Reward(context.Background(), "0", 1); fault.Of(err) != fault.Unavailable {
		t.Fatalf("a retried reward of an event out of memory, the store down: %v, want Unavailable", err)
	}
	if _, err := x.Decide(context.Background(), "0", "u0", "", nil); fault.Of(err) != fault.Unavailable {
		t.Fatalf("a retried decision out of memory, the store down: %v, want Unavailable", err)
	}
	before := h.State("e")
	if _, err := x.Reward(context.Background(), "5", 1); fault.Of(err) != fault.Unavailable {
		t.Fatalf("a reward whose unit's count is not cached, the store down: %v, want Unavailable", err)
	}
	if after := h.State("e"); after.Counts != before.Counts || after.Awaiting != before.Awaiting {
		t.Fatalf("a refused reward changed the counts: %+v, then %+v", before.Counts, after.Counts)
	}
	h.Mem().FailWith(nil)
	if res := h.Reward("e", "5", 1); !res.Learned {
		t.Fatalf("the reward, once the store answers: %+v", res)
	}
	if res := h.Reward("e", "0", 0); res.Status != store.Learned {
		t.Fatalf("the retry of an old reward, once the store answers: %+v", res)
	}
}

// TestCommitFailureStopsWrites: a commit that fails stops the writes
// (the memory may be ahead of the store): the request waiting for it,
// and every later one, is answered Unavailable, and the state is not
// shown, until a restart rebuilds from the store.
func TestCommitFailureStopsWrites(t *testing.T) {
	t.Parallel()
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{})
	h.Create(storetest.BernoulliSpec("e", 2, 1))
	h.Decide("e", "a", "ua")
	h.Failing("Commit")
	x := h.Get("e")
	if _, err := x.Decide(context.Background(), "b", "ub", "", nil); fault.Of(err) != fault.Unavailable {
		t.Fatalf("a decision whose commit fails: %v, want Unavailable", err)
	}
	if _, err := x.Reward(context.Background(), "a", 1); fault.Of(err) != fault.Unavailable {
		t.Fatalf("a reward after a failed commit: %v, want Unavailable", err)
	}
	if _, err := x.State(context.Background()); fault.Of(err) != fault.Unavailable {
		t.Fatalf("the state after a failed commit: %v, want Unavailable", err)
	}
	h.Mem().FailWith(nil)
	h.Crash()
	h.Open()
	if st := h.State("e"); st.Decisions != 1 || st.Learned != 0 {
		t.Fatalf("after a restart: %+v, want the one decision stored", st.Counts)
	}
}

// TestCapLookupFailsUnavailable: under a cap, a unit's total not cached
// is read from the store; when that fails, the reward is answered
// Unavailable and nothing is debited.
func TestCapLookupFailsUnavailable(t *testing.T) {
	t.Parallel()
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{UnitBudget: 3e9})
	h.Create(storetest.BernoulliSpec("e", 2, 1))
	h.Decide("e", "a", "ua")
	h.Failing("UnitTotal")
	if _, err := h.Get("e").Reward(context.Background(), "a", 1); fault.Of(err) != fault.Unavailable {
		t.Fatalf("a reward whose unit's total the store cannot give: %v, want Unavailable", err)
	}
	h.Mem().FailWith(nil)
	if res := h.Reward("e", "a", 1); !res.Learned {
		t.Fatalf("the reward, once the store answers: %+v", res)
	}
	rows, err := h.Store.Ledger(context.Background(), "default", "ua")
	if err != nil || len(rows) != 1 || rows[0].NanoRho != 1e9 {
		t.Fatalf("the ledger after one learned reward at rho 1: %+v %v", rows, err)
	}
}
