package service

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// apprenticeUpdate is a configurations/service update to apprentice
// mode at exploration e, the other settings the defaults.
func apprenticeUpdate(mode string, e float64) string {
	return fmt.Sprintf(`{"rewardWaitTime":"PT10M","defaultReward":0,"rewardAggregation":"earliest","explorationPercentage":%v,
	  "modelExportFrequency":"PT5M","logRetentionDays":-1,"learningMode":%q}`, e, mode)
}

// siteRank ranks event id on the test site's context (w, d), its three
// articles in order (sports, the baseline, first).
func siteRank(c pzClient, id string, w, d int) pzRankResponse {
	var acts []pzAction
	for _, a := range articles {
		acts = append(acts, pzAction{ID: a, Features: []map[string]any{{"topic": a}}})
	}
	return c.rank(pzRankRequest{ContextFeatures: []map[string]any{{"weather": weathers[w]}, {"device": devices[d]}}, Actions: acts, EventID: id})
}

// baselineRanks ranks n events (ids prefix-i) on the test site's
// random contexts and rewards event i with reward(i), and fails unless
// each ranking serves the baseline (sports, the first action) with
// exploration e around it (the baseline's probability 1 - p + p/3, the
// others' p/3), the baseline was served at least half the time, and
// the experiment "pz"'s log holds the same probabilities.
func baselineRanks(t *testing.T, h *harness, c pzClient, prefix string, n int, e float64, r *rand.Rand, reward func(i int) float64) {
	t.Helper()
	p := define.ExploreProb(e)
	base, other := 1-p+p/3, p/3
	served := 0
	for i := range n {
		res := siteRank(c, fmt.Sprint(prefix, i), r.IntN(3), r.IntN(2))
		for _, a := range res.Ranking {
			if want := map[bool]float64{true: base, false: other}[a.ID == "sports"]; a.Probability != want {
				t.Fatalf("rank %d: %s has probability %v, want %v", i, a.ID, a.Probability, want)
			}
		}
		if res.RewardActionID == "sports" {
			served++
		}
		c.reward(res.EventID, reward(i))
	}
	if served < n/2 {
		t.Fatalf("the baseline served %d times of %d", served, n)
	}
	for i, e := range logLines(t, h, "pz") {
		if len(e.Prob) != 3 || e.Prob[0] != base || e.Prob[e.Action] != e.PScore {
			t.Fatalf("log line %d: %+v", i, e)
		}
	}
}

// TestPersonalizerApprentice: in apprentice mode the baseline (a rank's
// first action) is served with exploration around it: every ranking's
// probabilities are the baseline's 1 - p + p/3 and p/3, equal to the
// log's; a learned reward debits its unit twice (learner and test); the
// state shows the test; an exploration above 1/2 is refused; a restart
// keeps it all.
func TestPersonalizerApprentice(t *testing.T) {
	t.Parallel() // light: a few dozen requests
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := start(t, dsn, Config{KeepLog: true, SnapshotEvery: 9})
		c := createPZ(t, h)
		code, _, b := c.call("PUT", pzV11, "/configurations/service", apprenticeUpdate("Apprentice", 0.6))
		wantError(t, "exploration 0.6", code, b, 400, "BadRequest")
		if !strings.Contains(string(b), "explorationPercentage") {
			t.Fatalf("the message does not name explorationPercentage: %s", b)
		}
		if code, _, b := c.call("PUT", pzV11, "/configurations/service", apprenticeUpdate("Apprentice", 0.2)); code != 200 || !strings.Contains(string(b), `"learningMode":"Apprentice"`) {
			t.Fatalf("update: %d %s", code, b)
		}
		baselineRanks(t, h, c, "ap-", 60, 0.2, rand.New(rand.NewPCG(7, 7)), func(i int) float64 { return float64(i % 2) })
		var l struct {
			Total int64 `json:"total_nano_rho"`
		}
		h.call("GET", "/v1/units/ap-0/ledger", nil, 200, &l)
		if l.Total != 2e9 && l.Total != 1e9 {
			t.Fatalf("ap-0 debited %d nano-rho", l.Total)
		}
		st := h.state("pz")
		if st.Apprentice == nil || st.Apprentice.Switched {
			t.Fatalf("apprentice state %+v", st.Apprentice)
		}
		restartSame(t, h, &c)
		if again := h.state("pz"); fmt.Sprint(*again.Apprentice) != fmt.Sprint(*st.Apprentice) {
			t.Fatalf("after a restart %+v, before %+v", again.Apprentice, st.Apprentice)
		}
		// It goes on after the restart (from the snapshot saved at the stop).
		for i := range 5 {
			c.reward(siteRank(c, fmt.Sprint("ap-after-", i), 0, 0).EventID, 1)
		}
		if code, _, b := c.call("PUT", pzV11, "/configurations/service", apprenticeUpdate("Online", 0.2)); code != 200 {
			t.Fatalf("back online: %d %s", code, b)
		}
		if st := h.state("pz"); st.Apprentice != nil {
			t.Fatalf("online, the state shows %+v", st.Apprentice)
		}
	})
}

// TestPersonalizerApprenticeSwitches: on the test site (the baseline,
// sports, is the weather's article a third of the time: a click rate of
// 0.35) at rho = 1 and exploration 0.5, apprentice mode serves the
// baseline until its test's lower bound is positive, then the learner's
// choices: the switch comes within 10,000 events (its checks come as the
// counted rewards grow by half or more: about 2,600, 4,200 and 6,400
// events here;
// six runs switched at 2,600 to 4,200), and the click rate of
// the 1,500 events after it beats the baseline's expected rate on the
// same contexts by more than 3.1 standard deviations of a mean of 1,500
// rewards in [0, 1] (one-sided level 1e-3). Not parallel.
func TestPersonalizerApprenticeSwitches(t *testing.T) {
	h := start(t, storetest.SQLite(t), Config{})
	h.create(pzSpec("site"))
	c := pzClient{t, h.http.URL, "site", h.http.Client()}
	if code, _, b := c.call("PUT", pzV11, "/configurations/service", apprenticeUpdate("Apprentice", 0.5)); code != 200 {
		t.Fatalf("update: %d %s", code, b)
	}
	index := map[string]int{}
	for i, a := range articles {
		index[a] = i
	}
	r := rand.New(rand.NewPCG(53, 1))
	event := func(i int) (got, baseline float64) {
		w, d := r.IntN(3), r.IntN(2)
		res := siteRank(c, fmt.Sprint("e", i), w, d)
		x := 0.0
		if r.Float64() < click(w, d, index[res.RewardActionID]) {
			x = 1
		}
		c.reward(res.EventID, x)
		return x, click(w, d, 0)
	}
	n := 0
	for ; n < 10000; n++ {
		event(n)
		if n%100 == 99 && h.state("site").Apprentice.Switched {
			break
		}
	}
	st := h.state("site")
	t.Logf("apprentice after %d events: %+v", n+1, *st.Apprentice)
	if !st.Apprentice.Switched {
		t.Fatalf("no switch after %d events: %+v", n, *st.Apprentice)
	}
	const m = 1500
	var got, baseline float64
	for i := range m {
		g, b := event(n + 1 + i)
		got, baseline = got+g, baseline+b
	}
	got, baseline = got/m, baseline/m
	margin := 3.1 * math.Sqrt(1.0/(4*m))
	t.Logf("after the switch: click rate %.4f, the baseline's %.4f, margin %.4f", got, baseline, margin)
	if !(got > baseline+margin) {
		t.Fatalf("after the switch the click rate %.4f does not beat the baseline's %.4f by %.4f", got, baseline, margin)
	}
}
