package engine_test

import (
	"testing"

	"github.com/dpbandit/dpbandit/service/fault"
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
	h.Stop("pz")
	ran := false
	err := x.Events(func(func(string) (*store.Event, error)) error { ran = true; return nil })
	if fault.Of(err) != fault.Unavailable || ran {
		t.Fatalf("a stopped experiment: %v (kind %v), f ran: %v", err, fault.Of(err), ran)
	}
}

// TestLearnedStopped: the learner of a stopped experiment is not read
// (its policy may hold a draw never stored): Learned answers
// Unavailable with no estimate, and its settings and last release only.
func TestLearnedStopped(t *testing.T) {
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{})
	h.Create(personalizerSpec("pz"))
	x := h.Get("pz")
	rank(t, h, "pz", storetest.RankBody("e", nil, false))
	before, _, err := x.Learned()
	if err != nil || before.Estimate == nil {
		t.Fatalf("a running experiment's learner: %+v, %v", before, err)
	}
	h.Stop("pz")
	l, last, err := x.Learned()
	if fault.Of(err) != fault.Unavailable || l.Estimate != nil || l.Episodes != 0 || last != nil {
		t.Fatalf("a stopped experiment: %v (kind %v), estimate %v, %d episodes, wait %v", err, fault.Of(err), l.Estimate, l.Episodes, last)
	}
	if l.Cur != before.Cur || l.Last != before.Last || l.Def.ID != "pz" {
		t.Fatalf("a stopped experiment's settings %+v and last release %+v, before %+v and %+v", l.Cur, l.Last, before.Cur, before.Last)
	}
}
