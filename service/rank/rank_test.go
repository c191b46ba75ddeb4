package rank

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// personalizerSpec is a Personalizer experiment's creation.
func personalizerSpec(id string) map[string]any {
	return map[string]any{"id": id, "surface": "personalizer", "privacy": map[string]float64{"rho": 1}}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decideOn takes the decisions of body (its eventId given) on
// experiment id of h with decide (Decide or MultiSlot).
func decideOn[T any](t testing.TB, h *enginetest.Harness, id string, body map[string]any, decide func(context.Context, *engine.Experiment, []byte, string) (T, error)) T {
	t.Helper()
	r, err := decide(context.Background(), h.Get(id), mustJSON(t, body), "drawn")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// rankOn takes the rank body on experiment id of h.
func rankOn(t testing.TB, h *enginetest.Harness, id string, body map[string]any) Response {
	t.Helper()
	return decideOn(t, h, id, body, Decide)
}

// stored returns x's event of id id (nil: none), as x holds it.
func stored(x *engine.Experiment, id string) (*store.Event, error) {
	var ev *store.Event
	err := x.Events(func(get lookup) error {
		var err error
		ev, err = get(id)
		return err
	})
	return ev, err
}

// TestRankProbabilities: over ranks with random exclusions, an excluded
// action is never chosen and has probability 0, the probabilities sum to
// 1 (up to the rounding of k terms of one sum, k <= 3: 4 ulps), and the
// chosen action's is the stored propensity; a restart replays every
// decision (the stored rank requests hash to the same sets).
func TestRankProbabilities(t *testing.T) {
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := enginetest.Start(t, dsn, enginetest.Config{})
		st := h.Create(personalizerSpec("pz"))
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
			res := rankOn(t, h, "pz", storetest.RankBody(ev, ex, false))
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
			if rec, err := stored(h.Get("pz"), ev); err != nil || rec == nil || rec.PScore != res.Ranking[0].Probability {
				t.Fatalf("stored %+v (%v), answered propensity %v", rec, err, res.Ranking[0].Probability)
			}
			if res.RewardActionID == "fun" {
				h.Reward("pz", ev, 1)
			} else {
				h.Reward("pz", ev, 0)
			}
		}
		before := h.State("pz")
		h.Restart()
		after := h.State("pz")
		if fmt.Sprint(before.Counts, before.Releases, before.Recent, before.Pulls) != fmt.Sprint(after.Counts, after.Releases, after.Recent, after.Pulls) {
			t.Fatalf("restart changed the state:\n%+v\n%+v", before, after)
		}
	})
}

// TestRankRetryAfterConfigure: a rank retried after the exploration
// changed is answered as it was first: every probability of its ranking
// is the logging policy's under the settings the decision was taken
// under (engine.Experiment.Propensities), not the current ones, while a
// new rank's are the current settings'. Over k = 3 actions at
// exploration e, they are {1 - p + p/3, p/3, p/3}, p = ExploreProb(e).
func TestRankRetryAfterConfigure(t *testing.T) {
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{})
	h.Create(personalizerSpec("pz"))
	x := h.Get("pz")
	spread := func(what string, res Response, e float64) {
		t.Helper()
		p := define.ExploreProb(e)
		got := []float64{}
		for _, a := range res.Ranking {
			got = append(got, a.Probability)
		}
		slices.Sort(got)
		if want := []float64{p / 3, p / 3, 1 - p + p/3}; !slices.Equal(got, want) {
			t.Fatalf("%s: probabilities %v, want %v (exploration %v)", what, got, want, e)
		}
	}
	first := rankOn(t, h, "pz", storetest.RankBody("before", nil, false))
	spread("first", first, 0.2)
	if err := x.Configure(context.Background(), define.Setting{Exploration: 0.9}); err != nil {
		t.Fatal(err)
	}
	again := rankOn(t, h, "pz", storetest.RankBody("before", nil, false))
	spread("retried after the change", again, 0.2)
	if fmt.Sprint(again) != fmt.Sprint(first) {
		t.Fatalf("retried after the change: %+v, first %+v", again, first)
	}
	spread("a new rank", rankOn(t, h, "pz", storetest.RankBody("after", nil, false)), 0.9)
}

// TestRankUnitFeature: on an experiment with unit_feature "user.id" a
// rank's unit is that context feature (its slots' too), a rank without
// it is refused (Invalid), and a native slate whose unit_id differs from
// its context's is refused (Invalid).
func TestRankUnitFeature(t *testing.T) {
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{})
	sp := personalizerSpec("pz")
	sp["unit_feature"] = "user.id"
	h.Create(sp)
	x := h.Get("pz")
	body := storetest.RankBody("e1", nil, false)
	if _, err := Decide(context.Background(), x, mustJSON(t, body), ""); fault.Of(err) != fault.Invalid {
		t.Fatalf("a rank without the unit feature: %v, want Invalid", err)
	}
	body["contextFeatures"] = []any{map[string]any{"user": map[string]any{"id": "u7"}}}
	rankOn(t, h, "pz", body)
	if rec, err := stored(x, "e1"); err != nil || rec == nil || rec.Unit != "u7" {
		t.Fatalf("stored %+v (%v), want unit u7", rec, err)
	}
	slate := slateBody("s1", [3][]string{}, false)
	slate["contextFeatures"] = []any{map[string]any{"user": map[string]any{"id": 8}}}
	if _, err := DecideSlate(context.Background(), x, "s1", "u7", mustJSON(t, slate)); fault.Of(err) != fault.Invalid {
		t.Fatalf("a slate for another unit than its context's: %v, want Invalid", err)
	}
	s, err := DecideSlate(context.Background(), x, "s1", "8", mustJSON(t, slate))
	if err != nil {
		t.Fatal(err)
	}
	for j := range s.Slots {
		if rec, err := stored(x, define.SlotEventID("s1", j)); err != nil || rec == nil || rec.Unit != "8" {
			t.Fatalf("slot %d stored %+v (%v), want unit 8", j, rec, err)
		}
	}
}
