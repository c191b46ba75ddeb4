package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
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

func (h *harness) rank(id string, body map[string]any) RankResponse {
	h.t.Helper()
	r, err := h.get(id).Rank(contextBG(), mustJSON(h.t, body), "")
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// TestRankProbabilities: over ranks with random exclusions, an excluded
// action is never chosen and has probability 0, the probabilities sum to
// 1 (up to the rounding of k terms of one sum, k <= 3: 4 ulps), and the
// chosen action's is the stored propensity; a restart replays every
// decision (the stored rank requests hash to the same sets).
func TestRankProbabilities(t *testing.T) {
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := start(t, dsn, config{})
		st := h.create(personalizerSpec("pz"))
		if d := st.Definition; d.Algorithm != "adac-oful-scaled:lambda=30:beta=0.3" || d.Dim != 32 || d.Exploration != 0.2 || *d.DefaultReward != 0 || d.RewardWindowSeconds != 600 {
			t.Fatalf("defaults: %+v", d)
		}
		r := rand.New(rand.NewPCG(1, 2))
		ids := []string{"news", "sports", "fun"}
		for i := range 300 {
			var ex []string
			for _, id := range ids {
				if r.IntN(4) == 0 && len(ex) < 2 {
					ex = append(ex, id)
				}
			}
			ev := fmt.Sprint("e", i)
			res := h.rank("pz", storetest.RankBody(ev, ex, false))
			sum := 0.0
			for _, a := range res.Ranking {
				sum += a.Probability
				for _, e := range ex {
					if a.ID == e && a.Probability != 0 {
						t.Fatalf("excluded %s has probability %v", e, a.Probability)
					}
				}
			}
			for _, e := range ex {
				if res.RewardActionID == e {
					t.Fatalf("excluded %s chosen", e)
				}
			}
			if math.Abs(sum-1) > 4*0x1p-53 || len(res.Ranking) != 3 || res.Ranking[0].ID != res.RewardActionID {
				t.Fatalf("ranking %+v sums to %v", res.Ranking, sum)
			}
			if p := h.get("pz").events[ev].PScore; p != res.Ranking[0].Probability {
				t.Fatalf("stored propensity %v, answered %v", p, res.Ranking[0].Probability)
			}
			if res.RewardActionID == "fun" {
				h.reward("pz", ev, 1)
			} else {
				h.reward("pz", ev, 0)
			}
		}
		before := h.state("pz")
		h.restart()
		after := h.state("pz")
		if fmt.Sprint(before.Counts, before.Releases, before.Recent, before.Pulls) != fmt.Sprint(after.Counts, after.Releases, after.Recent, after.Pulls) {
			t.Fatalf("restart changed the state:\n%+v\n%+v", before, after)
		}
	})
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
