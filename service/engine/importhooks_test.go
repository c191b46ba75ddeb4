package engine_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/importer"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// importSpec is a finite-armed experiment's spec for the import tests.
var importSpec = storetest.BernoulliSpec("imp", 2, 1)

// decideOne is an import session's run that takes one decision, named
// id, and then does then.
func decideOne(id string, then func(s importer.Session) error) func(importer.Session) error {
	return func(s importer.Session) error {
		if _, err := s.Decide(nil, func(int) (string, string) { return id, id }); err != nil {
			return err
		}
		return then(s)
	}
}

// TestRunImportRefusesARewardOutsideTheRange: the session's Reward is
// the engine's own guard of the reward range (the policy's noise is
// scaled to it): a reward outside it, or NaN, is refused as a live one
// is (fault.OutOfRange), the import stops the experiment, and a restart
// finds nothing of it.
func TestRunImportRefusesARewardOutsideTheRange(t *testing.T) {
	for _, r := range []float64{2, -0.5, math.NaN()} {
		h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{})
		h.Create(importSpec)
		_, err := h.Get("imp").RunImport(context.Background(), decideOne("e", func(s importer.Session) error {
			_, err := s.Reward(r)
			return err
		}))
		if fault.Of(err) != fault.Unavailable {
			t.Fatalf("reward %v: err %v (%v), want the experiment stopped (Unavailable)", r, err, fault.Of(err))
		}
		h.Restart()
		if st := h.State("imp"); st.Decisions != 0 || st.Imported != nil {
			t.Fatalf("reward %v: after a restart %+v, imported %+v: want nothing of the import", r, st.Counts, st.Imported)
		}
	}
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{})
	h.Create(importSpec)
	var got error
	_, err := h.Get("imp").RunImport(context.Background(), decideOne("e", func(s importer.Session) error {
		_, got = s.Reward(1.5)
		return nil
	}))
	if fault.Of(got) != fault.OutOfRange || err == nil {
		t.Fatalf("Reward(1.5): %v (%v), RunImport: %v; want OutOfRange and the import refused", got, fault.Of(got), err)
	}
}

// TestRunImportSettlesEachDecisionOnce: a decision taken before the last
// is settled, a settle without a decision and a decision left unsettled
// are refused, and a run that took a decision and failed stops the
// experiment with nothing stored; a run that fails before its first
// decision (it only read) leaves the experiment running.
func TestRunImportSettlesEachDecisionOnce(t *testing.T) {
	twice := decideOne("a", func(s importer.Session) error {
		_, err := s.Decide(nil, func(int) (string, string) { return "b", "b" })
		return err
	})
	unsettled := decideOne("a", func(importer.Session) error { return nil })
	for name, run := range map[string]func(importer.Session) error{"twice": twice, "unsettled": unsettled} {
		h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{})
		h.Create(importSpec)
		if _, err := h.Get("imp").RunImport(context.Background(), run); fault.Of(err) != fault.Unavailable {
			t.Fatalf("%s: %v, want the experiment stopped", name, err)
		}
		if _, err := h.Get("imp").RunImport(context.Background(), func(importer.Session) error { return nil }); fault.Of(err) != fault.Unavailable {
			t.Fatalf("%s: an import after it: %v, want Unavailable (stopped)", name, err)
		}
		h.Restart()
		if st := h.State("imp"); st.Decisions != 0 {
			t.Fatalf("%s: after a restart %+v: want nothing of the import", name, st.Counts)
		}
	}
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{})
	h.Create(importSpec)
	x := h.Get("imp")
	if _, err := x.RunImport(context.Background(), func(s importer.Session) error {
		_, err := s.Expire(importer.NoLoggedReward)
		return err
	}); !errors.Is(err, engine.ErrUnsettled) {
		t.Fatalf("Expire without a decision: %v, want errUnsettled", err)
	}
	if _, err := x.RunImport(context.Background(), func(s importer.Session) error { return errors.New("read failed") }); err == nil || fault.Of(err) == fault.Unavailable {
		t.Fatalf("a run that fails before deciding: %v, want its own error", err)
	}
	h.Decide("imp", "live", "u")
	if st := h.State("imp"); st.Decisions != 1 || st.Failed != "" {
		t.Fatalf("after failed runs that decided nothing: %+v %q, want a running experiment", st.Counts, st.Failed)
	}
}
