package engine

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

// TestApprenticeLCB: the test's bound, against the formula of
// apprentice.go's comment written out again (delta_j = 6 delta/(pi^2
// j^2), L = ln(2 G^2/delta_j) with G = 600 grid points, the grid
// (9/8)^i), at a point computed by hand: any other constant fails.
func TestApprenticeLCB(t *testing.T) {
	sum, n, v, m, blocks, sigma, delta := 1000.0, 4000.0, 20000.0, 16.0, int64(8), 20/math.Sqrt2, 0.05
	dj := 6 * delta / (math.Pi * math.Pi * 64)
	l := math.Log(2 * 600 * 600 / dj)
	vg := math.Pow(1.125, 85) // ln 20000 / ln 1.125 = 84.08
	mg := math.Pow(1.125, 24) // ln 16 / ln 1.125 = 23.54
	want := (sum - math.Sqrt(2*8*sigma*sigma*math.Log(2/dj)) - math.Sqrt(2*vg*l) - 2*mg*l/3) / n
	if got := apprenticeLCB(sum, n, v, m, blocks, sigma, delta); math.Abs(got-want) > 1e-12 {
		t.Fatalf("LCB %v, want %v", got, want)
	}
	if got := apprenticeSigma(1e9); math.Abs(got-20/math.Sqrt2) > 1e-12 {
		t.Fatalf("sigma at rho = 1: %v, want C/sqrt(2) = %v", got, 20/math.Sqrt2)
	}
	if got := apprenticeLCB(0, 0, 0, 0, 1, sigma, delta); !math.IsInf(got, -1) {
		t.Fatalf("LCB of nothing: %v", got)
	}
}

// TestApprenticeDebits: in apprentice mode a learned reward debits its
// unit twice the learner's cost when its reward enters the test (the
// learner's greedy choice was not the baseline), once otherwise; the
// served action's propensity is the baseline-centred one; a restart
// replays the test to the same released values.
func TestApprenticeDebits(t *testing.T) {
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := start(t, dsn, config{})
		h.create(personalizerSpec("pz"))
		x := h.get("pz")
		if err := x.Configure(contextBG(), define.Setting{Mode: define.ModeApprentice}); err != nil {
			t.Fatal(err)
		}
		doubled, want := 0, map[string]int64{}
		for i := range 300 {
			ev := fmt.Sprint("e", i)
			res := h.rank("pz", storetest.RankBody(ev, nil, false))
			x.mu.Lock()
			rec := x.events[ev]
			g, ok := x.appr.Greedy[rec.Seq]
			pi := g.Pi
			learns, served := rec.tk.Learns(), rec.Arm
			x.mu.Unlock()
			if !ok || rec.PolicyArm != 0 {
				t.Fatalf("event %d: greedy %v (%v), policy arm %d", i, pi, ok, rec.PolicyArm)
			}
			h.reward("pz", ev, float64(min(served, 1))) // the baseline is worse
			switch {
			case learns && pi != 0:
				want[ev], doubled = 2e9, doubled+1
			case learns:
				want[ev] = 1e9
			}
			x.mu.Lock()
			pscore := x.events[ev].PScore
			x.mu.Unlock()
			if res.Ranking[0].Probability != pscore {
				t.Fatalf("event %d: probability %v, stored %v", i, res.Ranking[0].Probability, pscore)
			}
		}
		folded, err := x.FoldNow()
		if err != nil {
			t.Fatal(err)
		}
		if folded != nil {
			<-folded
		}
		for i := range 300 {
			ev := fmt.Sprint("e", i)
			rows, err := h.store.Ledger(contextBG(), "default", ev)
			if err != nil {
				t.Fatal(err)
			}
			got := int64(0)
			for _, r := range rows {
				got += r.NanoRho
			}
			if got != want[ev] {
				t.Fatalf("event %s debited %d nano-rho, want %d", ev, got, want[ev])
			}
		}
		if doubled == 0 {
			t.Fatal("no reward entered the test")
		}
		// Three decisions pending at a reset, rewarded after it (no
		// operation: not learned), two decided after it and pending: a
		// crash's replay (through the reset, which starts the test over)
		// keeps the greedy choices of those two only.
		for i := range 3 {
			h.rank("pz", storetest.RankBody(fmt.Sprint("r", i), nil, false))
		}
		if err := x.Configure(contextBG(), define.Setting{Reset: true}); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			h.reward("pz", fmt.Sprint("r", i), 1)
		}
		for i := range 2 {
			h.rank("pz", storetest.RankBody(fmt.Sprint("p", i), nil, false))
		}
		h.crash()
		h.open()
		x = h.get("pz")
		x.mu.Lock()
		kept := len(x.appr.Greedy)
		x.mu.Unlock()
		if kept != 2 {
			t.Fatalf("after a crash %d greedy choices are kept, want the 2 pending", kept)
		}
		before := h.state("pz")
		h.restart()
		if after := h.state("pz"); fmt.Sprint(*after.Apprentice, after.Counts) != fmt.Sprint(*before.Apprentice, before.Counts) {
			t.Fatalf("after a restart %+v, before %+v", after.Apprentice, before.Apprentice)
		}
	})
}

// TestChangesWithoutDrawsReplay: an activation and a retired event's
// reward are changes that draw nothing: after a crash (no snapshot at
// the stop) the history replays, the random words of the decisions
// before them stored once.
func TestChangesWithoutDrawsReplay(t *testing.T) {
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := start(t, dsn, config{})
		h.create(personalizerSpec("pz"))
		x := h.get("pz")
		h.rank("pz", storetest.RankBody("deferred", nil, true))
		if err := x.Activate(contextBG(), "deferred"); err != nil {
			t.Fatal(err)
		}
		h.rank("pz", storetest.RankBody("retired", nil, false))
		if err := x.Configure(contextBG(), define.Setting{Reset: true}); err != nil {
			t.Fatal(err)
		}
		h.reward("pz", "retired", 1)
		h.crash()
		h.open()
		if st := h.state("pz"); st.Failed != "" || st.Decisions != 2 || st.Ignored != 1 {
			t.Fatalf("after a crash: %+v, %s", st.Counts, st.Failed)
		}
	})
}

// TestWindowAndDefaultChange: a change of the reward window and of the
// default reward applies at once, to the events still waiting too: an
// event decided under a 10-minute window is settled 2 s after a change to
// 1 s, with the new default reward.
func TestWindowAndDefaultChange(t *testing.T) {
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		clock := storetest.NewClock(time.Unix(1e9, 0))
		h := start(t, dsn, config{Now: clock.Now, KeepLog: true})
		sp := personalizerSpec("pz")
		sp["exploration"] = 1e-12 // the first decision learns (TestDeferredActivation)
		h.create(sp)
		h.rank("pz", storetest.RankBody("waits", nil, false))
		half := 0.5
		if err := h.get("pz").Configure(contextBG(), define.Setting{RewardWindowSeconds: 1, DefaultReward: &half}); err != nil {
			t.Fatal(err)
		}
		clock.Add(2 * time.Second)
		h.expire(clock.Now())
		x := h.get("pz")
		x.mu.Lock()
		rec := x.events["waits"]
		x.mu.Unlock()
		if rec.Status != store.Defaulted || rec.Reward == nil || *rec.Reward != 0.5 {
			t.Fatalf("after the change and 2 s: %+v", rec.Event)
		}
	})
}
