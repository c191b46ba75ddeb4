package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/importer"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

// TestEventsHook: Events' lookup gives a copy of a decided event (a
// change to it changes nothing in the experiment) and nil for an id the
// experiment does not know; a stopped experiment answers Unavailable
// without running f.
func TestEventsHook(t *testing.T) {
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{})
	h.Create(personalizerSpec("pz"))
	x := h.Get("pz")
	res := rank(t, h, "pz", storetest.RankBody("e", nil, false))
	read := func(id string) *store.Event {
		t.Helper()
		ev, err := event(h, "pz", id)
		if err != nil {
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
	// An import that fails once it took a decision stops the experiment,
	// as a failed policy does (RunImport).
	failure := errors.New("an import failure of the test")
	if _, err := x.RunImport(context.Background(), func(s importer.Session) error {
		if _, err := s.Decide(nil, func(int) (string, string) { return "imp", "imp" }); err != nil {
			return err
		}
		return failure
	}); fault.Of(err) != fault.Unavailable {
		t.Fatalf("an import that failed after a decision: %v (kind %v), want the experiment stopped", err, fault.Of(err))
	}
	ran := false
	err := x.Events(func(func(string) (*store.Event, error)) error { ran = true; return nil })
	if fault.Of(err) != fault.Unavailable || ran {
		t.Fatalf("a stopped experiment: %v (kind %v), f ran: %v", err, fault.Of(err), ran)
	}
}
