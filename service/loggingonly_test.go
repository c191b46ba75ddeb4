package service

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/reason"
)

// TestPersonalizerLoggingOnly: with learningMode LoggingOnly (a PUT of
// configurations/service) every rank serves its baseline, the first
// action, with exploration around it (the baseline's probability 1 - p +
// p/3, the others' p/3, equal to the log's), and every slot of a slate
// its baselineAction; nothing is learned (each reward is acknowledged
// and ignored, reason logging_only, nothing released) and nothing spent
// (every unit's ledger 0); the configuration, the state's settings and
// the counts survive a crash and a restart; back Online, the learner
// learns again from the decisions after the change.
func TestPersonalizerLoggingOnly(t *testing.T) {
	t.Parallel() // light: a few dozen requests
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := start(t, dsn, Config{KeepLog: true, SnapshotEvery: 9})
		sp := pzSpec("pz")
		sp["max_rewards_per_unit"] = 2
		h.create(sp)
		c := pzClient{t, h.http.URL, "pz", h.http.Client()}
		if code, _, b := c.call("PUT", pzV11, "/configurations/service", apprenticeUpdate("LoggingOnly", 0.2)); code != 200 || !strings.Contains(string(b), `"learningMode":"LoggingOnly"`) {
			t.Fatalf("update: %d %s", code, b)
		}
		baselineRanks(t, h, c, "lo-", 40, 0.2, rand.New(rand.NewPCG(7, 9)), func(int) float64 { return 1 })
		// A slate: each slot's baseline is its baselineAction.
		slate := map[string]any{"eventId": "page", "contextFeatures": []map[string]any{{"weather": "sunny"}},
			"actions": []map[string]any{{"id": "a", "features": []map[string]any{{"t": "a"}}}, {"id": "b", "features": []map[string]any{{"t": "b"}}}, {"id": "c", "features": []map[string]any{{"t": "c"}}}},
			"slots":   []map[string]any{{"id": "top", "baselineAction": "c"}, {"id": "side", "baselineAction": "b"}}}
		var s struct {
			Slots []struct {
				ActionID string `json:"action_id"`
				Ranking  []struct {
					ID          string  `json:"id"`
					Probability float64 `json:"probability"`
				} `json:"ranking"`
			} `json:"slots"`
		}
		h.call("POST", "/v1/experiments/pz/slates", map[string]any{"event_id": "page", "unit_id": "page", "context": slate}, 200, &s)
		// Slot 1's baseline is its first eligible action when slot 0
		// was given its baselineAction (by exploration).
		p := define.ExploreProb(0.2)
		var taken []string
		for j, base := range []string{"c", "b"} {
			sl := s.Slots[j]
			base, prob := storetest.SlotBaseline([]string{"a", "b", "c"}, taken, base, p)
			for _, a := range sl.Ranking {
				if a.Probability != prob[a.ID] {
					t.Fatalf("slot %d (baseline %s): %s has probability %v, want %v", j, base, a.ID, a.Probability, prob[a.ID])
				}
			}
			taken = append(taken, sl.ActionID)
		}
		for _, slot := range []string{"top", "side"} {
			var res struct {
				Learned bool   `json:"learned"`
				Reason  string `json:"reason"`
			}
			h.call("POST", "/v1/experiments/pz/rewards", map[string]any{"event_id": "page", "slot": slot, "reward": 1}, 200, &res)
			if res.Learned || res.Reason != reason.LoggingOnly {
				t.Fatalf("reward of slot %s: %+v", slot, res)
			}
		}
		st := h.state("pz")
		if st.Learned != 0 || st.Ignored != 42 || st.Releases != 0 || st.Apprentice != nil || !strings.Contains(string(must(json.Marshal(st.Settings))), `"learning_mode":"LoggingOnly"`) {
			t.Fatalf("state after logging only: %+v, releases %d, settings %+v", st.Counts, st.Releases, st.Settings)
		}
		for _, unit := range []string{"lo-0", "lo-39", "page"} {
			var l struct {
				Total int64 `json:"total_nano_rho"`
			}
			h.call("GET", "/v1/units/"+unit+"/ledger", nil, 200, &l)
			if l.Total != 0 {
				t.Fatalf("unit %s debited %d nano-rho in logging only", unit, l.Total)
			}
		}
		restartSame(t, h, &c)
		var got serviceConfig
		c.get(pzV11, "/configurations/service", &got)
		if got.LearningMode != "LoggingOnly" {
			t.Fatalf("after a restart the mode is %q", got.LearningMode)
		}
		// Back online: the learner learns the decisions after the change.
		if code, _, b := c.call("PUT", pzV11, "/configurations/service", apprenticeUpdate("Online", 0.2)); code != 200 {
			t.Fatalf("back online: %d %s", code, b)
		}
		for i := range 10 {
			c.reward(siteRank(c, fmt.Sprint("on-", i), 0, 0).EventID, 1)
		}
		if st := h.state("pz"); st.Learned == 0 {
			t.Fatalf("online again, nothing learned: %+v", st.Counts)
		}
	})
}
