package service

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/dpbandit/dpbandit/service/outcome"
)

// Exchanges that the other HTTP tests do not make, so that the contract
// check (internal/contract, through the harness) sees them against the
// OpenAPI document: the state of a best-arm identification that has
// stopped, and Personalizer v1.1-preview.3's single-slot activate.

// TestStateShowsIdentified: an AdaP-TT experiment whose arm 0 always pays
// 1 and arm 1 always 0 takes decisions until its stopping rule fires;
// then a decision is 409 and the state's identified names arm 0, the
// pulls it took (at most the decisions answered) and its delta.
func TestStateShowsIdentified(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, h *harness) {
		h.create(map[string]any{"id": "bai", "algorithm": "adap-tt:delta=0.05", "arms": 2, "reward_range": []float64{0, 1}, "privacy": map[string]any{"rho": 1}})
		if st := h.state("bai"); st.Identified != nil {
			t.Fatalf("identified %+v before any decision", st.Identified)
		}
		stopped := -1
		for i := range 5000 {
			ev := fmt.Sprint("e", i)
			body, _ := json.Marshal(map[string]string{"event_id": ev, "unit_id": ev})
			code, b := h.do("POST", "/v1/experiments/bai/decisions", "application/json", body)
			if code == 409 {
				stopped = i
				break
			}
			var d outcome.Decision
			if code != 200 || json.Unmarshal(b, &d) != nil {
				t.Fatalf("decision %d: %d %s", i, code, b)
			}
			h.reward("bai", ev, float64(1-d.Arm))
		}
		if stopped < 0 {
			t.Fatal("no stop in 5000 decisions")
		}
		w := h.state("bai").Identified
		if w == nil || w.Arm != 0 || w.Delta != 0.05 || w.Pulls <= 0 || w.Pulls > int64(stopped) {
			t.Fatalf("identified %+v after %d decisions, want arm 0 at delta 0.05 within them", w, stopped)
		}
	})
}

// TestPersonalizerPreviewActivate: v1.1-preview.3's single-slot activate
// is v1.0's: 204 for a deferred event ranked under the preview's prefix,
// which then takes its reward (204), and 404 ResourceNotFound for an
// event never ranked.
func TestPersonalizerPreviewActivate(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, h *harness) {
		c := createPZ(t, h)
		req := pzRankRequest{Actions: []pzAction{{ID: "x"}, {ID: "y"}}, EventID: "deferred", DeferActivation: true}
		if code, b := c.postAt(pzPreview, "/rank", req); code != 201 {
			t.Fatalf("rank: %d %s", code, b)
		}
		if code, b := c.postAt(pzPreview, "/events/deferred/activate", nil); code != 204 || len(b) != 0 {
			t.Fatalf("activate: %d %s", code, b)
		}
		if code, b := c.postAt(pzPreview, "/events/deferred/reward", `{"value":1}`); code != 204 || len(b) != 0 {
			t.Fatalf("reward: %d %s", code, b)
		}
		if st := h.state("pz"); st.Decisions != 1 || st.Rewards != 1 {
			t.Fatalf("counts %+v, want 1 decision and 1 reward", st.Counts)
		}
		code, b := c.postAt(pzPreview, "/events/nope/activate", nil)
		wantError(t, "activate of an unknown event", code, b, 404, "ResourceNotFound")
	})
}
