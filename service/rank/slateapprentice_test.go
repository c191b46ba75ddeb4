package rank

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// apprenticeSlateBases are the baselineActions of apprenticeSlate's two
// slots: neither is its slot's first eligible action (slot 0's is "a";
// slot 1's is "a" too when slot 0 was given its baseline), so that a
// slot served the first eligible action fails the test.
var apprenticeSlateBases = [2]string{"d", "b"}

// apprenticeSlate is a multi-slot rank of the five slateActions and two
// slots with the baselines apprenticeSlateBases.
func apprenticeSlate(ev string, weather int) map[string]any {
	var acts []any
	for _, a := range slateActions {
		acts = append(acts, map[string]any{"id": a, "features": []any{map[string]any{"topic": a}}})
	}
	var slots []any
	for j, b := range apprenticeSlateBases {
		slots = append(slots, map[string]any{"id": fmt.Sprint("slot", j), "features": []any{map[string]any{"position": j}}, "baselineAction": b})
	}
	return map[string]any{"contextFeatures": []any{map[string]any{"weather": []string{"sunny", "rainy"}[weather]}},
		"actions": acts, "slots": slots, "eventId": ev}
}

// checkApprenticeSlate checks a slate's answer before the switch: no
// action in two slots, and each slot's baseline (its baselineAction,
// or its first eligible action when a slot before took it) stored as
// its decision's policy arm, its probability in the ranking 1 - p + p/k
// and every other eligible action's p/k (p the exploration coin's
// probability at exploration e, k the slot's eligible actions). It
// returns how many slots were given their baseline.
func checkApprenticeSlate(t *testing.T, x *engine.Experiment, e float64, s Slate) int {
	t.Helper()
	p := define.ExploreProb(e)
	var taken []string
	served := 0
	for j, sl := range s.Slots {
		if slices.Contains(taken, sl.ActionID) {
			t.Fatalf("slot %d given %s, also given to a slot before: %+v", j, sl.ActionID, s)
		}
		base, prob := storetest.SlotBaseline(slateActions, taken, apprenticeSlateBases[j], p)
		for _, a := range sl.Ranking {
			if a.Probability != prob[a.ID] {
				t.Fatalf("slot %d (baseline %s): %s has probability %v, want %v: %+v", j, base, a.ID, a.Probability, prob[a.ID], sl.Ranking)
			}
		}
		eligible := slices.DeleteFunc(slices.Clone(slateActions), func(a string) bool { return slices.Contains(taken, a) })
		rec, err := stored(x, define.SlotEventID(s.EventID, j))
		if err != nil || rec == nil || eligible[rec.PolicyArm] != base || rec.PScore != sl.Probability {
			t.Fatalf("slot %d: stored %+v (%v), want policy arm %s", j, rec, err, base)
		}
		if sl.ActionID == base {
			served++
		}
		taken = append(taken, sl.ActionID)
	}
	return served
}

// TestSlateApprentice: in apprentice mode each slot of a slate serves
// its own baselineAction, with exploration around it as a single-slot
// rank's (service/rules, apprentice mode): at exploration 1e-12 every slot of 40 slates
// is given its baseline, never one action in two slots, and a crash
// (nothing saved at the stop) replays the slots' decisions as taken. On
// a site where two actions (c and e) are clicked with probability 0.9
// and the rest, the baselines among them, 0.1, at exploration 0.5 and
// rho = 1, each slot serves its baseline (the stored policy arm) until
// the experiment's one test, fed by every slot's reward, switches
// (within 3,000 slates: a liveness bound, the test's checks come as its
// counted rewards grow by half); then the learner's choices are served,
// and the click rate of the 400 slot rewards after the switch beats the
// baselines' 0.1 by more than 3.1 standard deviations of a mean of 400
// rewards in [0, 1] (one-sided level 1e-3). A restart and a crash keep
// the mode, the switch and the estimate.
func TestSlateApprentice(t *testing.T) {
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := enginetest.Start(t, dsn, enginetest.Config{})
		sp := personalizerSpec("pz")
		sp["exploration"] = 1e-12
		sp["max_rewards_per_unit"] = 2
		h.Create(sp)
		x := h.Get("pz")
		if err := x.Configure(context.Background(), define.Setting{Mode: define.ModeApprentice}); err != nil {
			t.Fatal(err)
		}
		for i := range 40 {
			s := rankSlate(t, h, "pz", apprenticeSlate(fmt.Sprint("a", i), i%2))
			if n := checkApprenticeSlate(t, x, 1e-12, s); n != 2 {
				t.Fatalf("slate %d: %d of 2 slots given their baseline: %+v", i, n, s)
			}
			if i%4 != 3 { // some left pending for the crash
				for _, sl := range s.Slots {
					if _, err := RewardSlot(context.Background(), x, s.EventID, sl.ID, 1); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		before := h.State("pz")
		h.Crash()
		h.Open()
		if after := h.State("pz"); after.Failed != "" || fmt.Sprint(after.Counts, *after.Apprentice) != fmt.Sprint(before.Counts, *before.Apprentice) {
			t.Fatalf("after a crash %+v %+v (%s), before %+v %+v", after.Counts, after.Apprentice, after.Failed, before.Counts, before.Apprentice)
		}

		// The switch.
		sp = personalizerSpec("site")
		sp["exploration"] = 0.5
		sp["max_rewards_per_unit"] = 2
		h.Create(sp)
		x = h.Get("site")
		if err := x.Configure(context.Background(), define.Setting{Mode: define.ModeApprentice}); err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(52, 11))
		click := func(a string) float64 {
			if a == "c" || a == "e" {
				return 0.9
			}
			return 0.1
		}
		slate := func(i int) (Slate, float64) {
			s := rankSlate(t, h, "site", apprenticeSlate(fmt.Sprint("s", i), r.IntN(2)))
			got := 0.0
			for _, sl := range s.Slots {
				v := 0.0
				if r.Float64() < click(sl.ActionID) {
					v = 1
				}
				if _, err := RewardSlot(context.Background(), h.Get("site"), s.EventID, sl.ID, v); err != nil {
					t.Fatal(err)
				}
				got += v
			}
			return s, got
		}
		n := 0
		for ; n < 3000; n++ {
			s, _ := slate(n)
			if h.State("site").Apprentice.Switched {
				break
			}
			checkApprenticeSlate(t, x, 0.5, s)
		}
		st := h.State("site")
		t.Logf("after %d slates: %+v", n+1, *st.Apprentice)
		if !st.Apprentice.Switched || !(st.Apprentice.LCB > 0) || !(st.Apprentice.Estimate > 0) {
			t.Fatalf("no switch after %d slates: %+v", n+1, *st.Apprentice)
		}
		const m = 200 // slates: 400 slot rewards
		got := 0.0
		for i := range m {
			_, g := slate(n + 1 + i)
			got += g
		}
		got /= 2 * m
		margin := 3.1 * math.Sqrt(1.0/(4*2*m))
		t.Logf("after the switch: click rate %.4f, the baselines' 0.1, margin %.4f", got, margin)
		if !(got > 0.1+margin) {
			t.Fatalf("after the switch the click rate %.4f does not beat the baselines' 0.1 by %.4f", got, margin)
		}
		before = h.State("site")
		h.Restart()
		if after := h.State("site"); fmt.Sprint(*after.Apprentice, after.Counts) != fmt.Sprint(*before.Apprentice, before.Counts) {
			t.Fatalf("after a restart %+v, before %+v", after.Apprentice, before.Apprentice)
		}
		slate(n + 1 + m) // pending at the crash: replayed after the snapshot of the restart
		before = h.State("site")
		h.Crash()
		h.Open()
		if after := h.State("site"); after.Failed != "" || fmt.Sprint(*after.Apprentice, after.Counts) != fmt.Sprint(*before.Apprentice, before.Counts) {
			t.Fatalf("after a crash %+v (%s), before %+v", after.Apprentice, after.Failed, before.Apprentice)
		}
	})
}
