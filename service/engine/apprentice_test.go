package engine

import (
	"fmt"
	"math"
	"testing"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
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
		before := h.state("pz")
		h.restart()
		if after := h.state("pz"); fmt.Sprint(*after.Apprentice, after.Counts) != fmt.Sprint(*before.Apprentice, before.Counts) {
			t.Fatalf("after a restart %+v, before %+v", after.Apprentice, before.Apprentice)
		}
	})
}
