package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
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
			h := enginetest.Start(t, dsn, enginetest.Config{KeepUnits: keep, UnitBudget: 3e9})
			var out []string
			for _, id := range []string{"e1", "e2"} {
				spec := storetest.BernoulliSpec(prefix+id, 2, 0.5)
				spec["max_rewards_per_unit"] = 2
				h.Create(spec)
			}
			for round := range 3 {
				for u := range 10 {
					for _, id := range []string{"e1", "e2"} {
						ev := fmt.Sprint(round, "-", u)
						h.Decide(prefix+id, ev, fmt.Sprint(prefix, "u", u))
						res := h.Reward(prefix+id, ev, 1)
						out = append(out, fmt.Sprint(res.Learned, res.Reason))
					}
					if u%2 == 1 {
						h.Tick(time.Now()) // it folds
					}
				}
				if round == 1 {
					h.Restart()
				}
				n := engine.Inspect(h.Get(prefix + "e1")).Units
				if keep > 0 && n > keep+2 {
					t.Fatalf("%d units in memory, bound %d and two units not folded", n, keep)
				}
			}
			h.Close()
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
