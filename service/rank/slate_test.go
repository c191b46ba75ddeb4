package rank

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/reason"
	"github.com/dpbandit/dpbandit/service/store"
)

// slateActions are the actions of the slates of these tests.
var slateActions = []string{"a", "b", "c", "d", "e"}

// slateBody is a multi-slot rank request of the five slateActions and
// three slots, each excluding the actions of its entry in excluded (at
// most two: each slot's baseline is an action of its own).
func slateBody(ev string, excluded [3][]string, deferred bool) map[string]any {
	var acts []any
	for i, a := range slateActions {
		acts = append(acts, map[string]any{"id": a, "features": []any{map[string]any{"topic": a, "len": i}}})
	}
	var slots []any
	var bases []string
	for j, ex := range excluded {
		base := ""
		for _, a := range slateActions {
			if !slices.Contains(ex, a) && !slices.Contains(bases, a) {
				base = a
				break
			}
		}
		bases = append(bases, base)
		slots = append(slots, map[string]any{"id": fmt.Sprint("slot", j), "features": []any{map[string]any{"position": j}},
			"excludedActions": ex, "baselineAction": base})
	}
	return map[string]any{"contextFeatures": []any{map[string]any{"weather": "sunny"}}, "actions": acts, "slots": slots,
		"eventId": ev, "deferActivation": deferred}
}

// rankSlate takes the slate body on experiment id of h.
func rankSlate(t testing.TB, h *enginetest.Harness, id string, body map[string]any) Slate {
	t.Helper()
	return decideOn(t, h, id, body, MultiSlot)
}

// checkSlate checks a slate's answer: no action in two slots, no slot
// given an action it excludes, each slot's ranking over every action
// with the actions excluded from it (by the request or by the slots
// before) at probability 0, the others summing to 1 (up to the rounding
// of at most 5 terms: 8 ulps), and the given action's probability the
// stored propensity of the slot's event.
func checkSlate(t *testing.T, x *engine.Experiment, ev string, excluded [3][]string, s Slate) {
	t.Helper()
	var taken []string
	for j, sl := range s.Slots {
		if sl.ID != fmt.Sprint("slot", j) || sl.ActionID == "" {
			t.Fatalf("slot %d: %+v", j, sl)
		}
		if slices.Contains(taken, sl.ActionID) || slices.Contains(excluded[j], sl.ActionID) {
			t.Fatalf("slot %d given %s: taken %v, excluded %v", j, sl.ActionID, taken, excluded[j])
		}
		sum := 0.0
		for _, a := range sl.Ranking {
			out := slices.Contains(taken, a.ID) || slices.Contains(excluded[j], a.ID)
			if out != (a.Probability == 0) {
				t.Fatalf("slot %d: %s has probability %v (excluded or taken: %v)", j, a.ID, a.Probability, out)
			}
			sum += a.Probability
		}
		if len(sl.Ranking) != len(slateActions) || sl.Ranking[0].ID != sl.ActionID || sl.Ranking[0].Probability != sl.Probability || math.Abs(sum-1) > 8*0x1p-53 {
			t.Fatalf("slot %d: ranking %+v sums to %v", j, sl.Ranking, sum)
		}
		rec, err := stored(x, define.SlotEventID(ev, j))
		if err != nil || rec == nil || rec.PScore != sl.Probability || rec.Unit != ev {
			t.Fatalf("slot %d: stored %+v (%v), answered probability %v", j, rec, err, sl.Probability)
		}
		taken = append(taken, sl.ActionID)
	}
}

// TestSlateSlots: over slates of three slots with random exclusions, an
// action fills at most one slot of an event, each slot's probabilities
// are its logging policy's over the actions left to it and the given
// one's is the stored propensity; each slot's reward is learned as its
// own (three per slate under max_rewards_per_unit 3), the slate's k-th
// learned one debiting its unit, the event, (2k - 1) rho; a retried slate
// is answered alike, before and after a restart, and the restart
// reproduces the state.
func TestSlateSlots(t *testing.T) {
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := enginetest.Start(t, dsn, enginetest.Config{})
		sp := personalizerSpec("pz")
		sp["max_rewards_per_unit"] = 3
		h.Create(sp)
		r := rand.New(rand.NewPCG(52, 3))
		answers, bodies := map[string]Slate{}, map[string]map[string]any{}
		for i := range 60 {
			var ex [3][]string
			for j := range ex {
				for _, a := range slateActions {
					if r.IntN(5) == 0 && len(ex[j]) < 2 {
						ex[j] = append(ex[j], a)
					}
				}
			}
			ev := fmt.Sprint("s", i)
			s := rankSlate(t, h, "pz", slateBody(ev, ex, false))
			if s.EventID != ev || len(s.Slots) != 3 {
				t.Fatalf("slate %+v", s)
			}
			checkSlate(t, h.Get("pz"), ev, ex, s)
			if again := rankSlate(t, h, "pz", slateBody(ev, ex, false)); fmt.Sprint(again) != fmt.Sprint(s) {
				t.Fatalf("retry: %+v, first %+v", again, s)
			}
			answers[ev], bodies[ev] = s, slateBody(ev, ex, false)
			for j, sl := range s.Slots {
				res, err := RewardSlot(context.Background(), h.Get("pz"), ev, sl.ID, float64(j%2))
				if err != nil || res.EventID != ev || res.Slot != sl.ID || res.Status == store.Ignored && res.Reason != "exploration" && res.Reason != "overflow" {
					t.Fatalf("reward of slot %d: %+v, %v", j, res, err)
				}
			}
			if i == 0 {
				body := slateBody(ev, ex, false)
				body["contextFeatures"] = []any{map[string]any{"weather": "rainy"}}
				if _, err := MultiSlot(context.Background(), h.Get("pz"), mustJSON(t, body), ""); fault.Of(err) != fault.Conflict {
					t.Fatalf("another body under the same eventId: %v", err)
				}
			}
		}
		before := h.State("pz")
		if before.Decisions != 180 || before.Rewards != 180 {
			t.Fatalf("counts %+v", before.Counts)
		}
		// A slate's k-th learned slot reward debits its unit, the event,
		// (2k - 1) rho, in the order the rewards came (slot order here).
		learned := map[string]int64{}
		err := h.Store.Log(context.Background(), h.Get("pz").Key(), func(e store.Event) error {
			want := int64(0)
			if e.Status == store.Learned {
				learned[e.Unit]++
				want = (2*learned[e.Unit] - 1) * 1e9
			}
			if e.Debit != want || e.Unit != e.ID[:strings.IndexByte(e.ID, 0x1f)] {
				return fmt.Errorf("event %q of unit %q (%s) debited %d nano-rho, want %d", e.ID, e.Unit, e.Status, e.Debit, want)
			}
			return nil
		})
		if err != nil || len(learned) == 0 {
			t.Fatalf("%v (%d units learned from)", err, len(learned))
		}
		h.Restart()
		after := h.State("pz")
		if fmt.Sprint(before.Counts, before.Releases, before.Recent, before.Pulls) != fmt.Sprint(after.Counts, after.Releases, after.Recent, after.Pulls) {
			t.Fatalf("restart changed the state:\n%+v\n%+v", before, after)
		}
		for ev, s := range answers { // retried after the restart: the stored slots' answers
			if again := rankSlate(t, h, "pz", bodies[ev]); fmt.Sprint(again) != fmt.Sprint(s) {
				t.Fatalf("retry after the restart: %+v, first %+v", again, s)
			}
		}
	})
}

// TestSlateUnitAndActivation: the privacy unit of a slate's rewards is
// its event: under max_rewards_per_unit 1 (the default) the first slot
// rewarded is learned and the next is refused as contribution_limit; a
// deferred slate's rewards are not learned until it is activated, and
// activating it (also across a restart) makes every slot take the
// default reward; unknown slates and slots are NotFound and Invalid; a
// paused experiment refuses a new slate (Conflict, nothing decided) and
// answers a retried one.
// Exploration 1e-12: the decisions checked are the policy's own.
func TestSlateUnitAndActivation(t *testing.T) {
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		clock := storetest.NewClock(time.Unix(1e9, 0))
		h := enginetest.Start(t, dsn, enginetest.Config{Now: clock.Now})
		sp := personalizerSpec("pz")
		sp["exploration"] = 1e-12
		h.Create(sp)
		x := h.Get("pz")
		none := [3][]string{}
		s := rankSlate(t, h, "pz", slateBody("one", none, false))
		if res, err := RewardSlot(context.Background(), x, "one", s.Slots[1].ID, 1); err != nil || !res.Learned {
			t.Fatalf("first slot's reward: %+v, %v", res, err)
		}
		if res, err := RewardSlot(context.Background(), x, "one", s.Slots[0].ID, 1); err != nil || res.Learned || res.Reason != "contribution_limit" {
			t.Fatalf("second slot's reward of one unit: %+v, %v", res, err)
		}
		if _, err := RewardSlot(context.Background(), x, "nope", "slot0", 1); fault.Of(err) != fault.NotFound {
			t.Fatalf("unknown slate: %v", err)
		}
		if _, err := RewardSlot(context.Background(), x, "one", "slot9", 1); fault.Of(err) != fault.Invalid {
			t.Fatalf("unknown slot: %v", err)
		}
		if err := ActivateSlate(context.Background(), x, "nope"); fault.Of(err) != fault.NotFound {
			t.Fatalf("activate an unknown slate: %v", err)
		}
		if err := x.SetStatus(context.Background(), store.Paused); err != nil {
			t.Fatal(err)
		}
		if _, err := MultiSlot(context.Background(), x, mustJSON(t, slateBody("paused", none, false)), ""); fault.Of(err) != fault.Conflict || known(x, define.SlotEventID("paused", 0)) {
			t.Fatalf("a paused experiment's slate: %v", err)
		}
		if _, err := MultiSlot(context.Background(), x, mustJSON(t, slateBody("one", none, false)), ""); err != nil {
			t.Fatalf("a paused experiment's retried slate: %v", err)
		}
		if err := x.SetStatus(context.Background(), store.Active); err != nil {
			t.Fatal(err)
		}
		rankSlate(t, h, "pz", slateBody("idle", none, true))
		rankSlate(t, h, "pz", slateBody("on", none, true))
		if res, err := RewardSlot(context.Background(), x, "idle", "slot0", 1); err != nil || res.Learned || res.Reason != reason.NotActivated {
			t.Fatalf("reward before activation: %+v, %v", res, err)
		}
		if err := ActivateSlate(context.Background(), x, "on"); err != nil {
			t.Fatal(err)
		}
		h.Restart()
		clock.Add(11 * time.Minute)
		h.Expire(clock.Now())
		x = h.Get("pz")
		for ev, want := range map[string][3]string{
			"idle": {store.Ignored, store.Expired, store.Expired},
			"on":   {store.Defaulted, store.Expired, store.Expired}, // one unit: the first default is learned, the others are over its limit
		} {
			for j := range 3 {
				rec, err := stored(x, define.SlotEventID(ev, j))
				if err != nil || rec == nil || rec.Status != want[j] {
					t.Errorf("%s slot %d: %+v, %v; want %s", ev, j, rec, err, want[j])
				}
			}
		}
	})
}

// TestSlateCrash: slates and their rewards survive a crash (nothing
// saved at the stop) with the state reproduced; a slate of which a crash
// left only slot 0 stored is completed by its retry: slot 0 as stored,
// the others decided on the actions it left.
func TestSlateCrash(t *testing.T) {
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := enginetest.Start(t, dsn, enginetest.Config{})
		sp := personalizerSpec("pz")
		sp["max_rewards_per_unit"] = 3
		h.Create(sp)
		none := [3][]string{}
		for i := range 20 {
			ev := fmt.Sprint("s", i)
			for j, sl := range rankSlate(t, h, "pz", slateBody(ev, none, false)).Slots {
				if _, err := RewardSlot(context.Background(), h.Get("pz"), ev, sl.ID, float64((i+j)%2)); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Slot 0 of slate "half" alone, as a crash between its slots leaves it.
		x := h.Get("pz")
		body := mustJSON(t, slateBody("half", none, false))
		def := x.Definition()
		req, err := define.ReadSlate(body, def.HashBits)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := req.SlotRank("half", 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctxt, rs, err := def.ReadRankContext(raw)
		if err != nil {
			t.Fatal(err)
		}
		first, err := x.Decide(context.Background(), define.SlotEventID("half", 0), "half", ctxt, rs.Set)
		if err != nil {
			t.Fatal(err)
		}
		before := h.State("pz")
		h.Crash()
		h.Open()
		after := h.State("pz")
		if fmt.Sprint(before.Counts, before.Releases, before.Recent, before.Pulls) != fmt.Sprint(after.Counts, after.Releases, after.Recent, after.Pulls) {
			t.Fatalf("the crash changed the state:\n%+v\n%+v", before, after)
		}
		s := rankSlate(t, h, "pz", slateBody("half", none, false))
		if s.Slots[0].ActionID != slateActions[rs.Eligible[first.Arm]] || s.Slots[0].Probability != first.Probability {
			t.Fatalf("retried slate %+v, its stored slot 0 %+v", s, first)
		}
		checkSlate(t, h.Get("pz"), "half", none, s)
	})
}
