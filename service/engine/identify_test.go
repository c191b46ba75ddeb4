package engine_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
)

// TestIdentificationStops: an experiment of a best-arm identification
// (AdaP-TT, Azize et al. 2023) takes decisions until its private stopping
// rule fires; then its state names the winner, the pulls it took and
// the risk delta, and a new decision is refused (Conflict) naming the
// winner; a restart, which replays the history, finds the same. With
// means 0.9 and 0.1 and delta 0.05 the winner is arm 0 but with
// probability at most 0.05 (the run is seeded: it is).
func TestIdentificationStops(t *testing.T) {
	t.Parallel()
	enginetest.ForAllStores(t, func(t *testing.T, dsn string) {
		h := enginetest.Start(t, dsn, enginetest.Config{})
		h.Create(map[string]any{"id": "bai", "algorithm": "adap-tt:delta=0.05", "arms": 2, "reward_range": []float64{0, 1}, "privacy": map[string]any{"rho": 1}})
		r := rand.New(rand.NewPCG(7, 7))
		means := []float64{0.9, 0.1}
		stopped := -1
		for i := range 100000 {
			ev := fmt.Sprint("e", i)
			d, err := h.DecideWith("bai", ev, ev, nil)
			if err != nil {
				if fault.Of(err) != fault.Conflict {
					t.Fatalf("decision %d: %v, want Conflict once identified", i, err)
				}
				stopped = i
				break
			}
			x := 0.0
			if r.Float64() < means[d.Arm] {
				x = 1
			}
			h.Reward("bai", ev, x)
		}
		if stopped < 0 {
			t.Fatal("no stop in 100000 decisions")
		}
		check := func(when string) {
			st := h.State("bai")
			w := st.Identified
			if w == nil || w.Arm != 0 || w.Delta != 0.05 || w.Pulls <= 0 || w.Pulls > int64(stopped) {
				t.Fatalf("%s: identified %+v after %d decisions, want arm 0 at delta 0.05 within them", when, w, stopped)
			}
			if _, err := h.DecideWith("bai", "late", "late", nil); fault.Of(err) != fault.Conflict {
				t.Fatalf("%s: a decision after the stop: %v, want Conflict", when, err)
			}
		}
		t.Logf("stopped after %d decisions: %+v", stopped, h.State("bai").Identified)
		check("before the restart")
		before := h.State("bai").Identified
		h.Restart()
		check("after the restart")
		if after := h.State("bai").Identified; *after != *before {
			t.Fatalf("identified %+v before the restart, %+v after", before, after)
		}
	})
}
