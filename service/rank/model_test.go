package rank

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

// TestTimes: the model was created when its learner started and modified
// at its last release since (a release before the last reset is not
// its), never before its creation.
func TestTimes(t *testing.T) {
	at := func(ns int64) time.Time { return time.Unix(0, ns).UTC() }
	cur := define.Current{ModelCreated: 1000, LastReset: 5}
	for _, c := range []struct {
		name   string
		recent []store.Release
		mod    int64
	}{
		{"no release", nil, 1000},
		{"a release since the reset", []store.Release{{Seq: 3, At: 900}, {Seq: 7, At: 2000}}, 2000},
		{"the last release before the reset", []store.Release{{Seq: 4, At: 3000}, {Seq: 5, At: 4000}}, 1000},
		{"a release since, timed before the start", []store.Release{{Seq: 6, At: 500}}, 1000},
	} {
		var last store.Release
		if n := len(c.recent); n > 0 {
			last = c.recent[n-1]
		}
		c0, m := times(cur, last)
		if !c0.Equal(at(1000)) || !m.Equal(at(c.mod)) || c0.Location() != time.UTC {
			t.Errorf("%s: created %v, modified %v; want %v, %v (UTC)", c.name, c0, m, at(1000), at(c.mod))
		}
	}
}

// stoppedLearner is an experiment that stopped: its Learned answers err.
type stoppedLearner struct{ err error }

func (s stoppedLearner) Learned() (engine.Learned, chan struct{}, error) {
	return engine.Learned{}, nil, s.err
}

func (stoppedLearner) Wait(context.Context, ...chan struct{}) error { return nil }

// TestExport: a Personalizer experiment's model is its learner's, of the
// definition's hashing, with its times; a finite-armed experiment's is
// NotFound, and a stopped experiment answers its own error.
func TestExport(t *testing.T) {
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{})
	h.Create(personalizerSpec("pz"))
	x := h.Get("pz")
	def := x.Definition()
	m, err := Export(context.Background(), x)
	if err != nil {
		t.Fatal(err)
	}
	created, modified := ModelTimes(x)
	if m.Algorithm != def.Algorithm || m.HashBits != def.HashBits || m.Dim != def.Dim || len(m.Theta) != def.Dim ||
		!m.Created.Equal(created) || !m.Modified.Equal(modified) || !created.Equal(time.Unix(0, def.Created).UTC()) {
		t.Fatalf("model %+v (times %v, %v) of %+v", m, created, modified, def)
	}
	if theta, err := Estimate(context.Background(), x); err != nil || len(theta) != def.Dim {
		t.Fatalf("Estimate: %d values, %v", len(theta), err)
	}
	h.Create(map[string]any{"id": "ab", "algorithm": "dp-se", "arms": 2, "reward_range": []float64{0, 1}, "privacy": map[string]any{"rho": 1}})
	if _, err := Export(context.Background(), h.Get("ab")); fault.Of(err) != fault.NotFound {
		t.Fatalf("the model of a finite-armed experiment: %v, want NotFound", err)
	}
	stopped := fault.Errorf(fault.Unavailable, "stopped")
	if _, err := Export(context.Background(), stoppedLearner{stopped}); !errors.Is(err, stopped) {
		t.Fatalf("a stopped experiment: %v, want %v", err, stopped)
	}
}

// TestStoppedModel: a stopped experiment's model is its error
// (Unavailable), while its model properties answer the times it had, as
// the API did before the engine's split (they are its settings', not its
// learner's).
func TestStoppedModel(t *testing.T) {
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{})
	h.Create(personalizerSpec("pz"))
	x := h.Get("pz")
	if _, err := Decide(context.Background(), x, mustJSON(t, storetest.RankBody("e", nil, false)), "e"); err != nil {
		t.Fatal(err)
	}
	created, modified := ModelTimes(x)
	h.Stop("pz")
	if _, err := Export(context.Background(), x); fault.Of(err) != fault.Unavailable {
		t.Fatalf("a stopped experiment's model: %v (kind %v), want Unavailable", err, fault.Of(err))
	}
	if c, m := ModelTimes(x); !c.Equal(created) || !m.Equal(modified) {
		t.Fatalf("a stopped experiment's model times %v, %v; before it stopped %v, %v", c, m, created, modified)
	}
}
