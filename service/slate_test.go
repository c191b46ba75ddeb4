package service

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/rank"
)

// Personalizer's v1.1-preview.3 API, its base path and its own example
// bodies (examples/MultiSlot_Rank.json, MultiSlotEvents_Reward.json,
// Rank.json, Events_Reward.json of its specification).
const (
	pzPreview          = "/personalizer/v1.1-preview.3"
	specMultiSlotEvent = "75269AD0-BFEE-4598-8196-C57383D38E10"
	// specPreviewContext: the context and actions of both rank examples.
	specPreviewContext = `{"contextFeatures":[{"user":{"profileType":"AnonymousUser","latLong":"47.6,-122.1"}},
	    {"environment":{"dayOfMonth":"28","monthOfYear":"8","weather":"Sunny"}},
	    {"device":{"mobile":true,"windows":true}},{"recentActivity":{"itemsInCart":3}}],
	  "actions":[{"id":"NewsArticle","features":[{"type":"News"}]},
	             {"id":"SportsArticle","features":[{"type":"Sports"}]},
	             {"id":"EntertainmentArticle","features":[{"type":"Entertainment"}]}],`
	specMultiSlotRank = specPreviewContext + `
	  "slots":[{"id":"Main Article","features":[{"size":"Large","position":"Top Middle"}],
	            "excludedActions":["SportsArticle"],"baselineAction":"EntertainmentArticle"},
	           {"id":"Side Bar","features":[{"size":"Small"}],"baselineAction":"NewsArticle"}],
	  "eventId":"75269AD0-BFEE-4598-8196-C57383D38E10","deferActivation":false}`
	specMultiSlotReward = `{"reward":[{"slotId":"Heroposition","value":0.5},{"slotId":"SideBar","value":0.6}]}`
	specRankPreview     = specPreviewContext + `
	  "excludedActions":["SportsArticle"],
	  "eventId":"75269AD0-BFEE-4598-8196-C57383D38E10","deferActivation":false}`
)

type pzMultiSlotResponse struct {
	Slots []struct {
		ID             string `json:"id"`
		RewardActionID string `json:"rewardActionId"`
	} `json:"slots"`
	EventID string `json:"eventId"`
}

// loggedSlot is a line of the log (GET /v1/experiments/{id}/log).
type loggedSlot struct {
	EventID string          `json:"event_id"`
	PScore  float64         `json:"pscore"`
	Prob    []float64       `json:"action_prob"`
	Context json.RawMessage `json:"context"`
}

func readLog(t *testing.T, h *harness, id string) map[string]loggedSlot {
	t.Helper()
	out := map[string]loggedSlot{}
	_, lb := h.do("GET", "/v1/experiments/"+id+"/log", "", nil)
	for _, line := range bytes.Split(bytes.TrimSpace(lb), []byte("\n")) {
		var e loggedSlot
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		out[e.EventID] = e
	}
	return out
}

// TestPersonalizerMultiSlotSpecExamples: the v1.1-preview.3 spec's own
// example requests (multi-slot rank, reward and activate; the
// single-slot rank and reward under the preview's prefix), sent as a
// client sends them, get the specified statuses (201, 204, 204) and
// bodies that validate against the specification's schemas; a retry is
// answered alike; bad bodies are 400 BadRequest naming the field and
// change nothing; a restart reproduces the state.
func TestPersonalizerMultiSlotSpecExamples(t *testing.T) {
	schemas := loadPzSchemas(t)
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := start(t, dsn, Config{KeepLog: true})
		sp := pzSpec("pz")
		sp["max_rewards_per_unit"] = 2 // a slate's two slots are one unit's two rewards
		h.create(sp)
		c := pzClient{t, h.http.URL, "pz", h.http.Client()}
		valid := func(what, def string, b []byte) {
			t.Helper()
			if err := schemas.validate(def, b); err != nil {
				t.Fatalf("%s: %s does not validate against %s: %v", what, b, def, err)
			}
		}
		code, b := c.postAt(pzPreview, "/multislot/rank", specMultiSlotRank)
		if code != 201 {
			t.Fatalf("multislot rank: %d %s", code, b)
		}
		valid("multislot rank", "MultiSlotRankResponse", b)
		first := b
		var ms pzMultiSlotResponse
		if err := json.Unmarshal(b, &ms); err != nil {
			t.Fatal(err)
		}
		if ms.EventID != specMultiSlotEvent || len(ms.Slots) != 2 || ms.Slots[0].ID != "Main Article" || ms.Slots[1].ID != "Side Bar" ||
			ms.Slots[0].RewardActionID == "SportsArticle" || ms.Slots[0].RewardActionID == ms.Slots[1].RewardActionID || ms.Slots[1].RewardActionID == "" {
			t.Fatalf("multislot rank: %s", b)
		}
		if code, again := c.postAt(pzPreview, "/multislot/rank", specMultiSlotRank); code != 201 || !bytes.Equal(again, b) {
			t.Fatalf("retry: %d %s, first %s", code, again, b)
		}
		// The single-slot routes of the preview are v1.0's; the same
		// eventId names a single-slot event beside the slate.
		code, b = c.postAt(pzPreview, "/rank", specRankPreview)
		if code != 201 {
			t.Fatalf("rank: %d %s", code, b)
		}
		valid("rank", "RankResponse", b)
		if code, b := c.postAt(pzPreview, "/events/"+specMultiSlotEvent+"/reward", `{"value":1}`); code != 204 || len(b) != 0 {
			t.Fatalf("reward: %d %s", code, b)
		}
		// The reward and activate examples name event "id" and slots
		// "Heroposition" and "SideBar": ranked first, deferred.
		deferred := strings.NewReplacer(`"Main Article"`, `"Heroposition"`, `"Side Bar"`, `"SideBar"`, specMultiSlotEvent, "id", `"deferActivation":false`, `"deferActivation":true`).Replace(specMultiSlotRank)
		if code, b := c.postAt(pzPreview, "/multislot/rank", deferred); code != 201 {
			t.Fatalf("multislot rank of event id: %d %s", code, b)
		}
		if code, b := c.postAt(pzPreview, "/multislot/events/id/activate", nil); code != 204 || len(b) != 0 {
			t.Fatalf("multislot activate: %d %s", code, b)
		}
		if code, b := c.postAt(pzPreview, "/multislot/events/id/reward", specMultiSlotReward); code != 204 || len(b) != 0 {
			t.Fatalf("multislot reward: %d %s", code, b)
		}
		st := h.state("pz")
		if st.Decisions != 5 || st.Rewards != 3 {
			t.Fatalf("counts %+v, want 5 decisions (2 + 1 + 2) and 3 rewards", st.Counts)
		}
		// The log holds each rewarded slot as an event of its own, its
		// distribution over the actions left to it.
		log := readLog(t, h, "pz")
		for j, left := range []int{2, 2} { // slot 0 excludes SportsArticle; slot 1 loses slot 0's
			e, ok := log[fmt.Sprintf("id\x1f%d", j)]
			sum := 0.0
			for _, p := range e.Prob {
				sum += p
			}
			if !ok || len(e.Prob) != left || math.Abs(sum-1) > 4*0x1p-53 || !slices.Contains(e.Prob, e.PScore) {
				t.Fatalf("slot %d logged as %v %v (%v)", j, e.PScore, e.Prob, ok)
			}
		}

		before := h.state("pz")
		act := func(id string) string { return fmt.Sprintf(`{"id":%q,"features":[]}`, id) }
		many := make([]string, 51)
		for i := range many {
			many[i] = act(fmt.Sprint(i))
		}
		slot := func(id, base string, excluded ...string) string {
			return fmt.Sprintf(`{"id":%q,"baselineAction":%q,"excludedActions":%s}`, id, base, must(json.Marshal(excluded)))
		}
		ab := act("a") + "," + act("b")
		manySlots := make([]string, 51)
		for i := range manySlots {
			manySlots[i] = slot(fmt.Sprint(i), "a")
		}
		for _, bad := range []struct{ what, path, body, field string }{
			{"a slot with no actions", "/multislot/rank", `{"actions":[` + ab + `],"slots":[` + slot("s", "a", "a", "b") + `]}`, "slots[0].excludedActions"},
			{"duplicate slot ids", "/multislot/rank", `{"actions":[` + ab + `],"slots":[` + slot("s", "a") + "," + slot("s", "b") + `]}`, "slots[1].id"},
			{"baselineAction not among the actions", "/multislot/rank", `{"actions":[` + ab + `],"slots":[` + slot("s", "z") + `]}`, "slots[0].baselineAction"},
			{"no baselineAction", "/multislot/rank", `{"actions":[` + ab + `],"slots":[{"id":"s"}]}`, "slots[0].baselineAction"},
			{"an excluded baselineAction", "/multislot/rank", `{"actions":[` + ab + `],"slots":[` + slot("s", "a", "a") + `]}`, "slots[0].baselineAction"},
			{"two slots of one baseline", "/multislot/rank", `{"actions":[` + ab + `],"slots":[` + slot("s", "a") + "," + slot("t", "a") + `]}`, "slots[1].baselineAction"},
			{"an unknown excluded action", "/multislot/rank", `{"actions":[` + ab + `],"slots":[` + slot("s", "a", "z") + `]}`, "slots[0].excludedActions[0]"},
			{"51 actions", "/multislot/rank", `{"actions":[` + strings.Join(many, ",") + `],"slots":[` + slot("s", "0") + `]}`, "actions"},
			{"no slots", "/multislot/rank", `{"actions":[` + ab + `],"slots":[]}`, "slots"},
			{"51 slots", "/multislot/rank", `{"actions":[` + ab + `],"slots":[` + strings.Join(manySlots, ",") + `]}`, "slots"},
			{"an infinite slot feature", "/multislot/rank", `{"actions":[` + ab + `],"slots":[{"id":"s","baselineAction":"a","features":[{"x":1e999}]}]}`, "slots[0].features[0]"},
			{"an unknown field", "/multislot/rank", `{"actions":[` + ab + `],"slots":[` + slot("s", "a") + `],"slotz":1}`, "slotz"},
			{"a slot of a rank", "/rank", `{"actions":[` + ab + `],"slot":{"event":"x","index":0,"id":"s"}}`, "slot"},
			{"an unknown slot's reward", "/multislot/events/id/reward", `{"reward":[{"slotId":"SideBar","value":1},{"slotId":"Nope","value":1}]}`, "reward[1].slotId"},
			{"a reward above 1", "/multislot/events/id/reward", `{"reward":[{"slotId":"SideBar","value":0},{"slotId":"Heroposition","value":1.5}]}`, "reward[1].value"},
			{"a reward without value", "/multislot/events/id/reward", `{"reward":[{"slotId":"SideBar"}]}`, "reward[0].value"},
			{"a reward without slotId", "/multislot/events/id/reward", `{"reward":[{"value":1}]}`, "reward[0].slotId"},
			{"no reward", "/multislot/events/id/reward", `{}`, "reward"},
		} {
			code, b := c.postAt(pzPreview, bad.path, bad.body)
			wantError(t, bad.what, code, b, 400, "BadRequest")
			valid(bad.what, "ErrorResponse", b)
			var e pzErrorResponse
			if json.Unmarshal(b, &e) == nil && !strings.Contains(e.Error.Message, bad.field) {
				t.Errorf("%s: the message %q does not name %s", bad.what, e.Error.Message, bad.field)
			}
		}
		for path, body := range map[string]any{"/multislot/events/nope/reward": specMultiSlotReward, "/multislot/events/nope/activate": nil} {
			code, b := c.postAt(pzPreview, path, body)
			wantError(t, path, code, b, 404, "ResourceNotFound")
			valid(path, "ErrorResponse", b)
		}
		if after := h.state("pz"); fmt.Sprint(after.Counts, after.Releases, after.Pulls) != fmt.Sprint(before.Counts, before.Releases, before.Pulls) {
			t.Fatalf("bad requests changed the state:\n%+v\n%+v", before.Counts, after.Counts)
		}
		h.restart()
		c = pzClient{t, h.http.URL, "pz", h.http.Client()}
		if after := h.state("pz"); fmt.Sprint(after.Counts, after.Releases, after.Recent, after.Pulls) != fmt.Sprint(before.Counts, before.Releases, before.Recent, before.Pulls) {
			t.Fatalf("restart changed the state:\n%+v\n%+v", before, after)
		}
		if code, again := c.postAt(pzPreview, "/multislot/rank", specMultiSlotRank); code != 201 || !bytes.Equal(again, first) {
			t.Fatalf("retry after the restart: %d %s, first %+v", code, again, ms)
		}
		pythonScript(t, h.http.URL, "pz", "multislot")
	})
}

// TestSlatesSite: a simulated site with four articles and three slots,
// half its events through the native slates route and half through
// Personalizer's multislot rank, with random exclusions per slot: no
// event puts one article in two slots, each slot's probabilities
// (native answer) are 0 for the articles excluded from it or taken by
// the slots before and sum to 1 over the others, and equal the logged
// propensity and distribution of the slot's event to the bit; each
// slot's reward (native, with "slot", or multislot reward) is its own;
// a restart reproduces the state.
func TestSlatesSite(t *testing.T) {
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := start(t, dsn, Config{KeepLog: true})
		sp := pzSpec("site")
		sp["max_rewards_per_unit"] = 3
		h.create(sp)
		c := pzClient{t, h.http.URL, "site", h.http.Client()}
		r := rand.New(rand.NewPCG(52, 7))
		arts := []string{"sports", "politics", "recipes", "weather"}
		var acts []pzAction
		for _, a := range arts {
			acts = append(acts, pzAction{ID: a, Features: []map[string]any{{"topic": a}}})
		}
		const n = 60
		answers := map[string]rank.Slate{}
		for i := range n {
			ev := fmt.Sprint("page", i)
			var slots []map[string]any
			excluded := make([][]string, 3)
			for j := range 3 {
				base := arts[j]
				for _, a := range arts {
					if a != base && r.IntN(4) == 0 && len(excluded[j]) < 1 { // one at most: the third slot keeps an article
						excluded[j] = append(excluded[j], a)
					}
				}
				slots = append(slots, map[string]any{"id": fmt.Sprint("slot", j), "features": []map[string]any{{"position": j}},
					"excludedActions": excluded[j], "baselineAction": base})
			}
			body := map[string]any{"contextFeatures": []map[string]any{{"weather": weathers[r.IntN(3)]}, {"device": devices[r.IntN(2)]}},
				"actions": acts, "slots": slots}
			if i%2 == 1 {
				body["eventId"] = ev
				code, b := c.postAt(pzPreview, "/multislot/rank", body)
				var ms pzMultiSlotResponse
				if code != 201 || json.Unmarshal(b, &ms) != nil || ms.EventID != ev {
					t.Fatalf("multislot rank: %d %s", code, b)
				}
				rewards := []map[string]any{}
				seen := map[string]bool{}
				for j, s := range ms.Slots {
					if s.RewardActionID == "" || seen[s.RewardActionID] || slices.Contains(excluded[j], s.RewardActionID) {
						t.Fatalf("event %s: %s", ev, b)
					}
					seen[s.RewardActionID] = true
					rewards = append(rewards, map[string]any{"slotId": s.ID, "value": r.IntN(2)})
				}
				if code, b := c.postAt(pzPreview, "/multislot/events/"+ev+"/reward", map[string]any{"reward": rewards}); code != 204 {
					t.Fatalf("multislot reward: %d %s", code, b)
				}
				continue
			}
			var s rank.Slate
			h.call("POST", "/v1/experiments/site/slates", map[string]any{"event_id": ev, "unit_id": ev, "context": body}, 200, &s)
			var taken []string
			for j, sl := range s.Slots {
				if sl.ActionID == "" || slices.Contains(taken, sl.ActionID) || slices.Contains(excluded[j], sl.ActionID) || sl.Ranking[0].Probability != sl.Probability {
					t.Fatalf("event %s slot %d: %+v", ev, j, s)
				}
				sum := 0.0
				for _, a := range sl.Ranking {
					if out := slices.Contains(taken, a.ID) || slices.Contains(excluded[j], a.ID); out != (a.Probability == 0) {
						t.Fatalf("event %s slot %d: %s has probability %v", ev, j, a.ID, a.Probability)
					}
					sum += a.Probability
				}
				if math.Abs(sum-1) > 8*0x1p-53 {
					t.Fatalf("event %s slot %d: probabilities sum to %v", ev, j, sum)
				}
				taken = append(taken, sl.ActionID)
				var res outcome.RewardResult
				h.call("POST", "/v1/experiments/site/rewards", map[string]any{"event_id": ev, "slot": sl.ID, "reward": r.IntN(2)}, 200, &res)
				if res.EventID != ev || res.Slot != sl.ID {
					t.Fatalf("reward of slot %s: %+v", sl.ID, res)
				}
			}
			answers[ev] = s
		}
		// A slate's event id may be 1,024 bytes (its slots' ids are longer);
		// rewards in an x-ndjson batch name their slots; a native decision
		// whose context carries a slot is refused.
		long := strings.Repeat("p", 1024)
		slots := []map[string]any{{"id": "top", "baselineAction": "sports"}, {"id": "bottom", "baselineAction": "recipes"}}
		h.call("POST", "/v1/experiments/site/slates", map[string]any{"event_id": long, "unit_id": "u", "context": map[string]any{"actions": acts, "slots": slots}}, 200, nil)
		batch := fmt.Sprintf("{\"event_id\":%q,\"slot\":\"top\",\"reward\":1}\n{\"event_id\":%q,\"slot\":\"bottom\",\"reward\":0}\n", long, long)
		if code, b := h.do("POST", "/v1/experiments/site/rewards", "application/x-ndjson", []byte(batch)); code != 200 || bytes.Count(b, []byte(`"code":200`)) != 2 || !bytes.Contains(b, []byte(`"slot":"bottom"`)) {
			t.Fatalf("batch of slot rewards: %d %s", code, b)
		}
		code, b := h.do("POST", "/v1/experiments/site/decisions", "application/json", must(json.Marshal(map[string]any{"event_id": "x", "unit_id": "u",
			"context": map[string]any{"actions": acts, "slot": map[string]any{"event": long, "index": 1, "id": "bottom"}}})))
		if code != 400 {
			t.Fatalf("a decision carrying a slot: %d %s", code, b)
		}
		log := readLog(t, h, "site")
		delete(log, long+"\x1f0")
		delete(log, long+"\x1f1")
		if len(log) != 3*n {
			t.Fatalf("%d logged slots, want %d", len(log), 3*n)
		}
		for ev, s := range answers {
			for j, sl := range s.Slots {
				e := log[fmt.Sprintf("%s\x1f%d", ev, j)]
				var want []float64 // the ranking's probabilities of the slot's eligible articles, in the request's order
				for _, a := range arts {
					for _, ra := range sl.Ranking {
						if ra.ID == a && ra.Probability > 0 {
							want = append(want, ra.Probability)
						}
					}
				}
				if e.PScore != sl.Probability || fmt.Sprint(e.Prob) != fmt.Sprint(want) {
					t.Fatalf("event %s slot %d: logged %v %v, answered %v %v", ev, j, e.PScore, e.Prob, sl.Probability, want)
				}
			}
		}
		before := h.state("site")
		if before.Decisions != 3*n+2 || before.Rewards != 3*n+2 {
			t.Fatalf("counts %+v", before.Counts)
		}
		h.restart()
		if after := h.state("site"); fmt.Sprint(after.Counts, after.Releases, after.Recent, after.Pulls) != fmt.Sprint(before.Counts, before.Releases, before.Recent, before.Pulls) {
			t.Fatalf("restart changed the state:\n%+v\n%+v", before, after)
		}
	})
}
