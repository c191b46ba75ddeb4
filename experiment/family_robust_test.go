package experiment

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// robustRun runs the robust family's algorithms on the preset's instance
// at corruption alpha, eps = 1, horizon T, 30 runs, and returns the mean
// regret by label.
func robustRun(t *testing.T, alpha float64, T int64, algos ...string) map[string]Result {
	t.Helper()
	c := Defaults()
	c.Env, c.Algos, c.Eps = robustEnv(alpha), algos, []float64{1}
	c.Horizon, c.Runs, c.Seed, c.Out = T, 30, 5, ""
	rep, err := Run(context.Background(), c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Result{}
	for _, r := range rep.Summary.Results {
		out[r.Label] = r
	}
	return out
}

// TestRobustSublinearUnderCorruption: at alpha = 0.1 and eps = 1 (M1),
// robust-ae's regret grows from T = 10^5 to 10^6 by well below 10 (its
// exploration, B = 4 batches, costs T^(3/4): a factor 5.6), the
// non-robust baseline's by about 10 (linear: the far observations make
// its least squares pick a bad action).
func TestRobustSublinearUnderCorruption(t *testing.T) {
	t.Parallel()
	algos := []string{"robust-ae:model=m1:alpha=0.1", "batched-ae:model=m1"}
	lo, hi := robustRun(t, 0.1, 100_000, algos...), robustRun(t, 0.1, 1_000_000, algos...)
	rob := "robust-ae:alpha=0.1:model=m1 eps=1,local"
	base := "batched-ae:model=m1 eps=1,local"
	if r := hi[rob].RegretMean / lo[rob].RegretMean; r > 8 {
		t.Errorf("robust-ae: regret ratio %v from T = 10^5 to 10^6, want sublinear (< 8)", r)
	}
	if r := hi[base].RegretMean / lo[base].RegretMean; r < 9 {
		t.Errorf("batched-ae: regret ratio %v, want linear growth (>= 9)", r)
	}
	if hi[base].RegretMean < 10*hi[rob].RegretMean {
		t.Errorf("at T = 10^6 batched-ae's regret %v is not far above robust-ae's %v", hi[base].RegretMean, hi[rob].RegretMean)
	}
}

// TestRobustM2BeatsM1: without corruption, at the same eps, M2's batch
// means carry noise w/(n_a eps) instead of w/eps per reward, and its
// regret is lower (004, Theorem 3.9 against 3.4).
func TestRobustM2BeatsM1(t *testing.T) {
	res := robustRun(t, 0, 100_000, "robust-ae:model=m1:alpha=0", "robust-ae:model=m2:alpha=0")
	m1, m2 := res["robust-ae:alpha=0:model=m1 eps=1,local"], res["robust-ae:alpha=0:model=m2 eps=1,local"]
	if m2.RegretCI95[1] >= m1.RegretCI95[0] {
		t.Errorf("M2 regret %v (CI %v) not below M1's %v (CI %v)", m2.RegretMean, m2.RegretCI95, m1.RegretMean, m1.RegretCI95)
	}
}

// TestRobustLocalNotion: the robust family's results carry the notion
// "ldp" with the eps its randomisers meet (a zCDP budget rho gives
// sqrt(2 rho)); model=none runs once, without a budget.
func TestRobustLocalNotion(t *testing.T) {
	dir := t.TempDir()
	c := Defaults()
	c.Env, c.Horizon, c.Runs, c.Out = robustEnv(0.05), 10000, 2, dir
	c.Algos, c.Rho = []string{"robust-ae:model=m2", "robust-ae:model=none"}, []float64{0.5}
	if _, err := Run(context.Background(), c, Options{Out: dir}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	var s struct {
		Results []struct {
			Label   string
			Privacy struct {
				Notion string  `json:"notion"`
				Eps    float64 `json:"eps"`
			} `json:"privacy"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Results) != 2 {
		t.Fatalf("results %+v", s.Results)
	}
	if p := s.Results[0].Privacy; p.Notion != "ldp" || p.Eps < 0.999999 || p.Eps > 1 {
		t.Errorf("%s: privacy %+v, want ldp with eps = sqrt(2 rho) = 1", s.Results[0].Label, p)
	}
	if p := s.Results[1].Privacy; p.Notion != "none" {
		t.Errorf("%s: privacy %+v, want none", s.Results[1].Label, p)
	}
}

// robustEnv is the robust preset's instance with corruption probability
// alpha (presets.yaml).
func robustEnv(alpha float64) string {
	return "linear-sphere:k=50,d=5,instance=4,corrupt=" + trimFloat(alpha) + ",adversary=far"
}
