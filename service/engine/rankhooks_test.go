package engine

import (
	"errors"
	"testing"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

// TestEventsHook: Events' lookup gives a copy of a decided event (a
// change to it changes nothing in the experiment) and nil for an id the
// experiment does not know; a stopped experiment answers Unavailable
// without running f; Model is NotFound on an experiment of another
// surface.
func TestEventsHook(t *testing.T) {
	h := start(t, memDSN, config{})
	h.create(personalizerSpec("pz"))
	x := h.get("pz")
	res := h.rank("pz", storetest.RankBody("e", nil, false))
	read := func(id string) *store.Event {
		t.Helper()
		var ev *store.Event
		if err := x.Events(func(get func(string) (*store.Event, error)) error {
			var err error
			ev, err = get(id)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	ev := read("e")
	if ev == nil || ev.PScore != res.Ranking[0].Probability {
		t.Fatalf("event %+v, answered probability %v", ev, res.Ranking[0].Probability)
	}
	ev.PScore, ev.Status = 0, store.Learned
	if again := read("e"); again.PScore != res.Ranking[0].Probability || again.Status != store.Pending {
		t.Fatalf("a change to the copy reached the experiment: %+v", again)
	}
	if ev := read("nope"); ev != nil {
		t.Fatalf("an unknown id: %+v", ev)
	}
	x.mu.Lock()
	x.fail(errors.New("a policy failure of the test"))
	x.mu.Unlock()
	ran := false
	err := x.Events(func(func(string) (*store.Event, error)) error { ran = true; return nil })
	if fault.Of(err) != fault.Unavailable || ran {
		t.Fatalf("a stopped experiment: %v (kind %v), f ran: %v", err, fault.Of(err), ran)
	}
	h.create(map[string]any{"id": "ab", "algorithm": "dp-se", "arms": 2, "reward_range": []float64{0, 1}, "privacy": map[string]any{"rho": 1}})
	if _, err := h.get("ab").Model(contextBG()); fault.Of(err) != fault.NotFound {
		t.Fatalf("the model of a finite-armed experiment: %v, want NotFound", err)
	}
}
