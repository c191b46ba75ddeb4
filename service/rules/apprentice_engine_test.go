package rules_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/rank"
	"github.com/dpbandit/dpbandit/service/rules"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// rankOn ranks body in experiment id of the harness.
func rankOn(t *testing.T, h *enginetest.Harness, id string, body map[string]any) rank.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rank.Decide(context.Background(), h.Get(id), b, "")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestApprenticeDebits: in apprentice mode a learned reward debits its
// unit twice the learner's cost when its reward enters the test (the
// learner's greedy choice was not the baseline), once otherwise; the
// served action's propensity is the baseline-centred one; a crash's
// replay keeps the greedy choices of the pending decisions only, and a
// restart replays the test to the same released values.
func TestApprenticeDebits(t *testing.T) {
	ctx := context.Background()
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := enginetest.Start(t, dsn, enginetest.Config{})
		h.Create(map[string]any{"id": "pz", "surface": "personalizer", "privacy": map[string]float64{"rho": 1}})
		x := h.Get("pz")
		if err := x.Configure(ctx, define.Setting{Mode: define.ModeApprentice}); err != nil {
			t.Fatal(err)
		}
		choice := func(ev string) (rules.Greedy, bool) {
			t.Helper()
			g, ok, err := x.ApprenticeChoice(ev)
			if err != nil {
				t.Fatal(err)
			}
			return g, ok
		}
		greedy, prob := map[string]int{}, map[string]float64{}
		for i := range 300 {
			ev := fmt.Sprint("e", i)
			res := rankOn(t, h, "pz", storetest.RankBody(ev, nil, false))
			g, ok := choice(ev)
			if !ok {
				t.Fatalf("event %d: no greedy choice", i)
			}
			greedy[ev], prob[ev] = g.Pi, res.Ranking[0].Probability
			served := slices.Index([]string{"news", "sports", "fun"}, res.RewardActionID)
			h.Reward("pz", ev, float64(min(served, 1))) // the baseline is worse
		}
		folded, err := x.FoldNow()
		if err != nil {
			t.Fatal(err)
		}
		if folded != nil {
			<-folded
		}
		doubled := 0
		for i := range 300 {
			ev := fmt.Sprint("e", i)
			rec, err := h.Store.Event(ctx, x.Key(), ev)
			if err != nil || rec == nil {
				t.Fatalf("event %s: %v, %v", ev, rec, err)
			}
			if rec.PolicyArm != 0 || rec.PScore != prob[ev] {
				t.Fatalf("event %d: policy arm %d, probability %v, stored %v", i, rec.PolicyArm, prob[ev], rec.PScore)
			}
			want := int64(0)
			switch learns := rec.Plan != 0; {
			case learns && greedy[ev] != 0:
				want, doubled = 2e9, doubled+1
			case learns:
				want = 1e9
			}
			rows, err := h.Store.Ledger(ctx, "default", ev)
			if err != nil {
				t.Fatal(err)
			}
			got := int64(0)
			for _, r := range rows {
				got += r.NanoRho
			}
			if got != want {
				t.Fatalf("event %s debited %d nano-rho, want %d", ev, got, want)
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
			rankOn(t, h, "pz", storetest.RankBody(fmt.Sprint("r", i), nil, false))
		}
		if err := x.Configure(ctx, define.Setting{Reset: true}); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			h.Reward("pz", fmt.Sprint("r", i), 1)
		}
		for i := range 2 {
			rankOn(t, h, "pz", storetest.RankBody(fmt.Sprint("p", i), nil, false))
		}
		h.Crash()
		h.Open()
		x = h.Get("pz")
		var kept []string
		for _, ev := range append(slices.Collect(maps.Keys(greedy)), "r0", "r1", "r2", "p0", "p1") {
			if _, ok := choice(ev); ok {
				kept = append(kept, ev)
			}
		}
		slices.Sort(kept)
		if fmt.Sprint(kept) != "[p0 p1]" {
			t.Fatalf("after a crash the greedy choices of %v are kept, want the 2 pending", kept)
		}
		before := h.State("pz")
		h.Restart()
		if after := h.State("pz"); fmt.Sprint(*after.Apprentice, after.Counts) != fmt.Sprint(*before.Apprentice, before.Counts) {
			t.Fatalf("after a restart %+v, before %+v", after.Apprentice, before.Apprentice)
		}
	})
}
