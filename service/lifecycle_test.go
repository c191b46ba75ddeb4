package service

import (
	"testing"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

// TestLifecycle: a paused experiment refuses decisions (409) and still
// learns the rewards of earlier ones; resumed, it decides again; an
// archived one answers 410 to everything, keeps its ledger rows, stays
// archived across a restart, and its id is not taken again. Lifecycle
// changes are admin's; both stores.
func TestLifecycle(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, h *harness) {
		h.create(storetest.BernoulliSpec("e", 3, 0.5))
		h.decide("e", "a", "u1")
		h.call("POST", "/v1/experiments/e/pause", nil, 200, nil)
		h.call("POST", "/v1/experiments/e/decisions", map[string]string{"event_id": "b", "unit_id": "u2"}, 409, nil)
		h.call("POST", "/v1/experiments/e/rewards", map[string]any{"event_id": "a", "reward": 1}, 200, nil)
		if st := h.state("e"); st.Status != store.Paused || st.Learned != 1 {
			t.Fatalf("paused: status %q, %d learned", st.Status, st.Learned)
		}
		h.call("POST", "/v1/experiments/e/pause", nil, 200, nil) // idempotent
		h.restart()
		if st := h.state("e"); st.Status != store.Paused {
			t.Fatalf("after a restart: status %q", st.Status)
		}
		h.call("POST", "/v1/experiments/e/resume", nil, 200, nil)
		h.decide("e", "b", "u2")
		h.call("POST", "/v1/experiments/e/resume", nil, 200, nil)
		h.call("POST", "/v1/experiments/e/archive", nil, 200, nil)
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"POST", "/v1/experiments/e/decisions", map[string]string{"event_id": "c", "unit_id": "u3"}},
			{"POST", "/v1/experiments/e/rewards", map[string]any{"event_id": "b", "reward": 1}},
			{"GET", "/v1/experiments/e", nil},
			{"POST", "/v1/experiments/e/resume", nil},
			{"POST", "/v1/experiments/e/pause", nil},
		} {
			h.call(c.method, c.path, c.body, 410, nil)
		}
		led := h.ledger("u1")
		if len(led.Experiments) != 1 || led.Experiments[0].Rewards != 1 {
			t.Fatalf("the archived experiment's ledger: %+v", led)
		}
		h.restart()
		h.call("GET", "/v1/experiments/e", nil, 410, nil)
		h.call("POST", "/v1/experiments", storetest.BernoulliSpec("e", 3, 0.5), 409, nil)
		h.call("POST", "/v1/experiments/nope/archive", nil, 404, nil)
	})
}
