package engine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
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

// rank decides the rank request body (its eventId the event, and the
// unit, as on an experiment without a unit_feature) as package rank's
// Decide does, through DecideRank.
func (h *harness) rank(id string, body map[string]any) rankAnswer {
	h.t.Helper()
	x := h.get(id)
	ctxt, rs, err := x.def.ReadRankContext(mustJSON(h.t, body))
	if err != nil {
		h.t.Fatal(err)
	}
	ev := rs.Request.EventID
	d, err := x.DecideRank(contextBG(), ev, ev, ctxt, rs.Shared, rs.Request.DeferActivation, rs.Set)
	if err != nil {
		h.t.Fatal(err)
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
		h := start(t, dsn, config{Now: clock.Now})
		for _, id := range []string{"idle", "early", "on"} {
			sp := personalizerSpec(id)
			sp["exploration"] = 1e-12
			h.create(sp)
			h.rank(id, storetest.RankBody(id, nil, true))
			if rec := h.get(id).events[id]; !rec.tk.Learns() || rec.explored() {
				t.Fatalf("%s: the first decision does not learn: %+v", id, rec.Event)
			}
		}
		if res := h.reward("early", "early", 1); res.Learned || res.Reason != reasonNotActivated {
			t.Fatalf("reward before activation: %+v", res)
		}
		if err := h.get("on").Activate(contextBG(), "on"); err != nil {
			t.Fatal(err)
		}
		if err := h.get("on").Activate(contextBG(), "nope"); fault.Of(err) != fault.NotFound {
			t.Fatalf("unknown event: %v", err)
		}
		h.restart()
		clock.Add(11 * time.Minute)
		h.expire(clock.Now())
		for id, want := range map[string]string{"idle": store.Expired, "early": store.Ignored, "on": store.Defaulted} {
			x := h.get(id)
			x.mu.Lock()
			rec, err := x.event(id)
			x.mu.Unlock()
			if err != nil || rec == nil || rec.Status != want {
				t.Errorf("%s: %+v, %v; want status %s", id, rec, err, want)
			}
		}
	})
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
