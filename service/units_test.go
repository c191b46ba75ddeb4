package service

import (
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// TestUnitLimitsAcrossExperiments: a unit's contribution limit is per
// experiment, its ledger across them. Alice's one reward in a is learned,
// her first in b too (b has none of hers), her second in a is not, and
// after a restart, once the filter of the units the ledger holds is
// rebuilt from the store, the same: the filter knows in which
// experiments she has rewards (a filter that knew only that she has
// some, anywhere, would send every reward of a known unit in a new
// experiment to the store; one that knew only the experiment of her last
// reward would let her second reward in a through).
func TestUnitLimitsAcrossExperiments(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, h *harness) {
		for _, e := range []string{"a", "b"} {
			h.create(storetest.BernoulliSpec(e, 2, 0.5))
		}
		learned := func(e, ev string) bool {
			h.decide(e, ev, "alice")
			return h.reward(e, ev, 1).Learned
		}
		if !learned("a", "1") || !learned("b", "1") || learned("a", "2") {
			t.Fatal("alice's rewards: want a's first and b's first learned, a's second not")
		}
		h.restart()
		for deadline := time.Now().Add(10 * time.Second); h.srv.ledger.Loading(); {
			if time.Now().After(deadline) {
				t.Fatal("the unit filter was not rebuilt in 10 s")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if learned("a", "3") || learned("b", "2") {
			t.Fatal("after a restart, alice's further rewards in a and b were learned past her limit")
		}
		h.create(storetest.BernoulliSpec("c", 2, 0.5))
		if !learned("c", "1") {
			t.Fatal("alice's first reward in a new experiment was not learned")
		}
	})
}
