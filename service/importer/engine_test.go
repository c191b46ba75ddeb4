package importer_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/importer"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// bernoulliLog is a log of n events of a uniform logging policy over the
// arms of means, Bernoulli rewards (seeded), each event its own unit.
func bernoulliLog(means []float64, n int, seed uint64) []importer.Event {
	r := rand.New(rand.NewPCG(seed, 1))
	logged := make([]importer.Event, n)
	for i := range logged {
		a := r.IntN(len(means))
		x := 0.0
		if r.Float64() < means[a] {
			x = 1
		}
		id := fmt.Sprintf("e%d", i)
		logged[i] = importer.Event{ID: id, Unit: "u" + id, Arm: a, Reward: x, Line: i + 1}
	}
	return logged
}

// TestImportOnTheEngine: a log imported into a finite-armed experiment on
// each store is counted in its state as in the import's result (before
// and after a restart, which replays the imported operations), and the
// same log again, before or after the restart, changes nothing.
func TestImportOnTheEngine(t *testing.T) {
	enginetest.ForAllStores(t, func(t *testing.T, dsn string) {
		h := enginetest.Start(t, dsn, enginetest.Config{})
		h.Create(storetest.BernoulliSpec("warm", 2, 1))
		logged := bernoulliLog([]float64{0.8, 0.2}, 60, 7)
		res, err := importer.Import(context.Background(), h.Get("warm"), logged)
		if err != nil {
			t.Fatal(err)
		}
		decided := res.Events + res.NoLoggedReward
		if res.Events == 0 || int(res.Events)+res.Unused != len(logged) || res.Operations < 2*res.Events || res.UnitsDebited != int(res.Learned) {
			t.Fatalf("import %+v: want every logged event used or unused, each learned one debiting its own unit", res)
		}
		for restarted := range 2 {
			st := h.State("warm")
			if st.Imported == nil || *st.Imported != res.Totals || st.Decisions != decided {
				t.Fatalf("restarted %d: state %+v, imported %+v; want %d decisions and the import's totals %+v", restarted, st.Counts, st.Imported, decided, res.Totals)
			}
			again, err := importer.Import(context.Background(), h.Get("warm"), logged)
			if err != nil || again.Operations != 0 || again.AlreadyImported != int(res.Events) || again.Unused != res.Unused {
				t.Fatalf("restarted %d: the same log again: %+v, %v; want nothing done", restarted, again, err)
			}
			h.Restart()
		}
	})
}

// TestFailedImportReportsNothing: an import whose commit fails stored
// nothing, and its result says so: no unit debited, nothing learned, no
// operation, only the events given.
func TestFailedImportReportsNothing(t *testing.T) {
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{})
	h.Create(storetest.BernoulliSpec("warm", 2, 1))
	logged := bernoulliLog([]float64{0.8, 0.2}, 20, 8)
	h.Failing("Commit")
	res, err := importer.Import(context.Background(), h.Get("warm"), logged)
	if fault.Of(err) != fault.Unavailable {
		t.Fatalf("an import whose commit fails: %v (kind %v), want Unavailable", err, fault.Of(err))
	}
	if want := (importer.Result{Logged: len(logged)}); fmt.Sprint(res) != fmt.Sprint(want) {
		t.Fatalf("a failed import's result %+v, want %+v", res, want)
	}
}
