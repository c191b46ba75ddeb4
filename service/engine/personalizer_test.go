package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/reason"
	"github.com/dpbandit/dpbandit/service/store"
)

// personalizerSpec is a Personalizer experiment's creation.
func personalizerSpec(id string) map[string]any {
	return map[string]any{"id": id, "surface": "personalizer", "privacy": map[string]float64{"rho": 1}}
}

// rankAnswer is what the engine's tests read of a rank's answer: its
// reward action, first in its ranking with its stored propensity (package
// rank makes the whole answer).
type rankAnswer struct {
	RewardActionID string
	Ranking        []rankedAction
}

// rankedAction is an action of a rankAnswer with its probability.
type rankedAction struct {
	ID          string
	Probability float64
}

// rank decides the rank request body (its eventId the event, its unit
// the rank's) as package rank's Decide does, through DecideRank.
func rank(t testing.TB, h *enginetest.Harness, id string, body map[string]any) rankAnswer {
	t.Helper()
	x := h.Get(id)
	def := x.Definition()
	ctxt, rs, err := def.ReadRankContext(mustJSON(t, body))
	if err != nil {
		t.Fatal(err)
	}
	ev := rs.Request.EventID
	d, err := x.DecideRank(context.Background(), ev, ctxt, rs)
	if err != nil {
		t.Fatal(err)
	}
	a := rs.Request.Actions[rs.Eligible[d.Arm]].ID
	return rankAnswer{RewardActionID: a, Ranking: []rankedAction{{a, d.Probability}}}
}

// TestDeferredActivation: a deferred event that is not activated takes
// no default reward (Expired, not Defaulted) and its reward is not
// learned (not_activated); an activated one takes the default reward,
// also when it was activated before a restart. Each event checked is its
// experiment's first decision (in the policy's plan, and not explored at
// an exploration of 1e-12), so that only activation decides its fate.
func TestDeferredActivation(t *testing.T) {
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		clock := storetest.NewClock(time.Unix(1e9, 0))
		h := enginetest.Start(t, dsn, enginetest.Config{Now: clock.Now})
		for _, id := range []string{"idle", "early", "on"} {
			sp := personalizerSpec(id)
			sp["exploration"] = 1e-12
			h.Create(sp)
			rank(t, h, id, storetest.RankBody(id, nil, true))
			// (in the plan: Plan != 0; not explored: the arm is the policy's)
			if rec, err := event(h, id, id); err != nil || rec == nil || rec.Plan == 0 || rec.PolicyArm >= 0 && rec.Arm != rec.PolicyArm {
				t.Fatalf("%s: the first decision does not learn: %+v (%v)", id, rec, err)
			}
		}
		if res := h.Reward("early", "early", 1); res.Learned || res.Reason != reason.NotActivated {
			t.Fatalf("reward before activation: %+v", res)
		}
		if err := h.Get("on").Activate(context.Background(), "on"); err != nil {
			t.Fatal(err)
		}
		if err := h.Get("on").Activate(context.Background(), "nope"); fault.Of(err) != fault.NotFound {
			t.Fatalf("unknown event: %v", err)
		}
		h.Restart()
		clock.Add(11 * time.Minute)
		h.Expire(clock.Now())
		for id, want := range map[string]string{"idle": store.Expired, "early": store.Ignored, "on": store.Defaulted} {
			rec, err := event(h, id, id)
			if err != nil || rec == nil || rec.Status != want {
				t.Errorf("%s: %+v, %v; want status %s", id, rec, err, want)
			}
		}
	})
}

// event returns a copy of event ev of experiment id (nil: it has none),
// as Events' lookup gives it.
func event(h *enginetest.Harness, id, ev string) (*store.Event, error) {
	var rec *store.Event
	err := h.Get(id).Events(func(get func(string) (*store.Event, error)) error {
		var err error
		rec, err = get(ev)
		return err
	})
	return rec, err
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecisionUnitIsTheFeature: on an experiment with a unit_feature,
// the engine itself holds a decision's privacy unit to its context's
// feature, whoever calls it: a rank (DecideRank) is decided for the
// feature's value, and a decision (StartDecide, as a slate's slots are
// taken) that names another unit is refused (Invalid) and takes
// nothing.
func TestDecisionUnitIsTheFeature(t *testing.T) {
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{})
	sp := personalizerSpec("pz")
	sp["unit_feature"] = "user.id"
	h.Create(sp)
	x := h.Get("pz")
	def := x.Definition()
	body := storetest.RankBody("e1", nil, false)
	body["contextFeatures"] = []any{map[string]any{"user": map[string]any{"id": "u7"}}}
	ctxt, rs, err := def.ReadRankContext(mustJSON(t, body))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.DecideRank(context.Background(), "e1", ctxt, rs); err != nil {
		t.Fatal(err)
	}
	if ev, err := event(h, "pz", "e1"); err != nil || ev == nil || ev.Unit != "u7" {
		t.Fatalf("a rank decided for %+v (%v), want its feature's unit u7", ev, err)
	}
	if _, _, err := x.StartDecide("e2", "other", ctxt, rs.Set); fault.Of(err) != fault.Invalid {
		t.Fatalf("a decision for another unit than its context's: %v, want Invalid", err)
	}
	if ev, err := event(h, "pz", "e2"); err != nil || ev != nil {
		t.Fatalf("a refused decision was taken: %+v (%v)", ev, err)
	}
}
