package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

// errDown is the fake store's failure.
var errDown = errors.New("the store is down")

// failing makes the harness's fake store fail the operations named.
func failing(h *harness, ops ...string) {
	h.mem.FailWith(func(op string) error {
		for _, o := range ops {
			if o == op {
				return errDown
			}
		}
		return nil
	})
}

// TestStoreLookupsFailUnavailable: when the store cannot answer a
// lookup on a request's path (an event no longer in memory, a unit's
// count not cached), the request is answered Unavailable and changes
// nothing: once the store answers again, the same request is served as
// if the failure had not been.
func TestStoreLookupsFailUnavailable(t *testing.T) {
	t.Parallel()
	h := start(t, memDSN, config{KeepEvents: 1})
	h.create(storetest.BernoulliSpec("e", 2, 1))
	for i := range 5 {
		ev := fmt.Sprint(i)
		h.decide("e", ev, "u"+ev)
		h.reward("e", ev, 1)
	}
	h.decide("e", "5", "u5") // the oldest settled events leave memory
	x := h.get("e")
	failing(h, "Event", "UnitRewards")
	if _, err := x.Reward(context.Background(), "0", 1); fault.Of(err) != fault.Unavailable {
		t.Fatalf("a retried reward of an event out of memory, the store down: %v, want Unavailable", err)
	}
	if _, err := x.Decide(context.Background(), "0", "u0", "", nil); fault.Of(err) != fault.Unavailable {
		t.Fatalf("a retried decision out of memory, the store down: %v, want Unavailable", err)
	}
	before := h.state("e")
	if _, err := x.Reward(context.Background(), "5", 1); fault.Of(err) != fault.Unavailable {
		t.Fatalf("a reward whose unit's count is not cached, the store down: %v, want Unavailable", err)
	}
	if after := h.state("e"); after.Counts != before.Counts || after.Awaiting != before.Awaiting {
		t.Fatalf("a refused reward changed the counts: %+v, then %+v", before.Counts, after.Counts)
	}
	h.mem.FailWith(nil)
	if res := h.reward("e", "5", 1); !res.Learned {
		t.Fatalf("the reward, once the store answers: %+v", res)
	}
	if res := h.reward("e", "0", 0); res.Status != store.Learned {
		t.Fatalf("the retry of an old reward, once the store answers: %+v", res)
	}
}

// TestCommitFailureStopsWrites: a commit that fails stops the writes
// (the memory may be ahead of the store): the request waiting for it,
// and every later one, is answered Unavailable, and the state is not
// shown, until a restart rebuilds from the store.
func TestCommitFailureStopsWrites(t *testing.T) {
	t.Parallel()
	h := start(t, memDSN, config{})
	h.create(storetest.BernoulliSpec("e", 2, 1))
	h.decide("e", "a", "ua")
	failing(h, "Commit")
	x := h.get("e")
	if _, err := x.Decide(context.Background(), "b", "ub", "", nil); fault.Of(err) != fault.Unavailable {
		t.Fatalf("a decision whose commit fails: %v, want Unavailable", err)
	}
	if _, err := x.Reward(context.Background(), "a", 1); fault.Of(err) != fault.Unavailable {
		t.Fatalf("a reward after a failed commit: %v, want Unavailable", err)
	}
	if _, err := x.State(context.Background()); fault.Of(err) != fault.Unavailable {
		t.Fatalf("the state after a failed commit: %v, want Unavailable", err)
	}
	h.mem.FailWith(nil)
	h.crash()
	h.open()
	if st := h.state("e"); st.Decisions != 1 || st.Learned != 0 {
		t.Fatalf("after a restart: %+v, want the one decision stored", st.Counts)
	}
}

// TestCapLookupFailsUnavailable: under a cap, a unit's total not cached
// is read from the store; when that fails, the reward is answered
// Unavailable and nothing is debited.
func TestCapLookupFailsUnavailable(t *testing.T) {
	t.Parallel()
	h := start(t, memDSN, config{UnitBudget: 3e9})
	h.create(storetest.BernoulliSpec("e", 2, 1))
	h.decide("e", "a", "ua")
	failing(h, "UnitTotal")
	if _, err := h.get("e").Reward(context.Background(), "a", 1); fault.Of(err) != fault.Unavailable {
		t.Fatalf("a reward whose unit's total the store cannot give: %v, want Unavailable", err)
	}
	h.mem.FailWith(nil)
	if res := h.reward("e", "a", 1); !res.Learned {
		t.Fatalf("the reward, once the store answers: %+v", res)
	}
	rows, err := h.store.Ledger(context.Background(), "default", "ua")
	if err != nil || len(rows) != 1 || rows[0].NanoRho != 1e9 {
		t.Fatalf("the ledger after one learned reward at rho 1: %+v %v", rows, err)
	}
}
