package service

import (
	"fmt"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

// TestUnitCacheIsBounded: with room for 4 units in memory, 10 units
// that come back in turn over two experiments of a tenant get the same
// answers as with every unit in memory: the contribution limit and the
// cap hold through evictions and restarts (their counts come back from
// the ledger), and memory holds at most the bound plus the entries whose
// debits are not folded yet (fold.go; here a tick folds every two units).
func TestUnitCacheIsBounded(t *testing.T) {
	t.Parallel()
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		run := func(keep int, prefix string) []string {
			h := start(t, dsn, Config{KeepUnits: keep, UnitBudget: 3e9})
			var out []string
			for _, id := range []string{"e1", "e2"} {
				spec := bernoulliSpec(prefix+id, 2, 0.5)
				spec["max_rewards_per_unit"] = 2
				h.create(spec)
			}
			for round := range 3 {
				for u := range 10 {
					for _, id := range []string{"e1", "e2"} {
						ev := fmt.Sprint(round, "-", u)
						h.decide(prefix+id, ev, fmt.Sprint(prefix, "u", u))
						res := h.reward(prefix+id, ev, 1)
						out = append(out, fmt.Sprint(res.Learned, res.Reason))
					}
					if u%2 == 1 {
						h.srv.Expire() // a tick: it folds
					}
				}
				if round == 1 {
					h.restart()
				}
				x, _ := h.srv.get("default", prefix+"e1")
				x.mu.Lock()
				n := len(x.units.m)
				x.mu.Unlock()
				if keep > 0 && n > keep+2 {
					t.Fatalf("%d units in memory, bound %d and two units not folded", n, keep)
				}
			}
			h.close()
			return out
		}
		small, all := run(4, "s"), run(0, "a")
		if fmt.Sprint(small) != fmt.Sprint(all) {
			t.Fatalf("4 units in memory answer\n%v\nall in memory\n%v", small, all)
		}
		// The answers are the rules': per unit, e1 learns 2 rewards
		// (then contribution_limit), e2 learns 1 (then unit_budget: 2e9
		// + 0.5e9 spent, 1.5e9 more would pass 3e9).
		want := map[string]int{"true": 30, "falsecontribution_limit": 10, "falseunit_budget": 20}
		got := map[string]int{}
		for _, r := range all {
			got[r]++
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("answers %v, want %v", got, want)
		}
	})
}

// TestUnitSpendPinnedUntilEveryDebitCommits: two experiments debit one
// unit; the later one's fold commits first while the earlier one's is
// still to come. The unit's cached total must not be evicted (and
// reloaded from the store without the debit in flight) until both are
// committed, or the unit could pass its cap. Found by an independent
// review.
func TestUnitSpendPinnedUntilEveryDebitCommits(t *testing.T) {
	t.Parallel()
	dsn := storetest.SQLite(t)
	h := start(t, dsn, Config{KeepUnits: 1, UnitBudget: 3e9}) // room for one unit: every durable entry is evicted
	s := h.srv
	u := store.UnitKey{Tenant: "default", Unit: "U"}
	dA, dB := make(chan struct{}), make(chan struct{})
	if _, ok, err := s.reserve(u, "default/a", 2e9, dA); !ok || err != nil { // experiment A: not yet submitted
		t.Fatal(ok, err)
	}
	if _, ok, err := s.reserve(u, "default/b", 0.5e9, dB); !ok || err != nil { // experiment B
		t.Fatal(ok, err)
	}
	// B's fold commits (store: 0.5e9 for U), A's not yet.
	s.w.Submit(&store.Change{Exp: "default/b", Fold: &store.Fold{Debits: []store.Debit{{Unit: "U", Rewards: 1, Nano: 0.5e9}}}, Folded: dB})
	<-dB
	for i := range 3 { // other units take the room: eviction
		c := make(chan struct{})
		close(c)
		s.reserve(store.UnitKey{Tenant: "default", Unit: fmt.Sprint("v", i)}, "default/b", 1, c)
	}
	e, ok, _ := s.reserve(u, "default/a", 2e9, make(chan struct{}))
	if ok {
		t.Fatalf("U reached %d nano-rho of a 3e9 cap (2e9 in flight + 0.5e9 + 2e9)", e.n)
	}
}

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
	t.Parallel()
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := start(t, dsn, Config{})
		for _, e := range []string{"a", "b"} {
			h.create(bernoulliSpec(e, 2, 0.5))
		}
		learned := func(e, ev string) bool {
			h.decide(e, ev, "alice")
			return h.reward(e, ev, 1).Learned
		}
		if !learned("a", "1") || !learned("b", "1") || learned("a", "2") {
			t.Fatal("alice's rewards: want a's first and b's first learned, a's second not")
		}
		h.restart()
		for deadline := time.Now().Add(10 * time.Second); h.srv.spent.loading.Load(); {
			if time.Now().After(deadline) {
				t.Fatal("the unit filter was not rebuilt in 10 s")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if learned("a", "3") || learned("b", "2") {
			t.Fatal("after a restart, alice's further rewards in a and b were learned past her limit")
		}
		h.create(bernoulliSpec("c", 2, 0.5))
		if !learned("c", "1") {
			t.Fatal("alice's first reward in a new experiment was not learned")
		}
	})
}
