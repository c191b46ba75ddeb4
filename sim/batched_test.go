package sim

import (
	"context"
	"math"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/linear"
	"github.com/dpbandit/dpbandit/privacy"
)

// spy plays one batch of n pulls of action 0, reports the rewards
// unchanged, counts the observations the adversary replaced, and then
// plays action 1.
type spy struct {
	n        int64
	done     bool
	far      float64
	replaced int
}

func (s *spy) Next() ([]int, []int64, bool, error) {
	if s.done {
		return nil, nil, false, nil
	}
	return []int{0}, []int64{s.n}, true, nil
}

func (s *spy) Report(_ int, r []float64) ([]float64, error) { return append([]float64(nil), r...), nil }

func (s *spy) Observe(obs [][]float64) error {
	for _, y := range obs[0] {
		if y == s.far {
			s.replaced++
		}
	}
	s.done = true
	return nil
}

func (s *spy) Best() int { return 1 }

// TestRunBatchedCorruptsObservations: the adversary replaces each
// observation with probability alpha (the count is within 4.5 standard
// deviations of the binomial mean), and regret is the pseudo-regret of
// the batch's pulls, then of the best action's, at every checkpoint.
func TestRunBatchedCorruptsObservations(t *testing.T) {
	inst, err := env.Parse("linear-sphere:k=5,d=3,corrupt=0.1,adversary=far", 3)
	if err != nil {
		t.Fatal(err)
	}
	c := inst.(*env.Corrupted)
	const n, T = 20000, 100000
	s := &spy{n: n, far: c.Range.Hi + 1000*c.Range.Width()}
	res, err := RunBatched(context.Background(), BatchedConfig{Env: c.Linear, Adversary: c,
		Steps: Steps{Horizon: T, Runs: 1, Seed: 1, Workers: 1, Checkpoints: []int64{1, n, n + 1, T}}},
		[]BatchedEntry{{Name: "spy", New: func(bandit.Setting) (bandit.BatchPolicy, error) { return s, nil }}})
	if err != nil {
		t.Fatal(err)
	}
	sd := math.Sqrt(n * 0.1 * 0.9)
	if math.Abs(float64(s.replaced)-n*0.1) > 4.5*sd {
		t.Errorf("%d of %d observations replaced, want about %v", s.replaced, n, n*0.1)
	}
	g := env.Gaps(c.Means())
	want := []float64{g[0], n * g[0], n*g[0] + g[1], n*g[0] + (T-n)*g[1]}
	for i, w := range want {
		if got := res.Regret(0)[0][i]; math.Abs(got-w) > 1e-9*(1+w) {
			t.Errorf("regret at checkpoint %d: %v, want %v", i, got, w)
		}
	}
	if res.Episodes(0)[0] != 1 {
		t.Errorf("episodes %v, want 1 batch", res.Episodes(0)[0])
	}
}

// BenchmarkRobustAERun is one robust-ae run (M1, eps = 1, B = 4) at
// T = 10^7 on 50 actions in R^5 with 10% far corruption: about 1.8 10^5
// rewards reach the clients and the Filter, the rest go to the best
// action in O(1).
func BenchmarkRobustAERun(b *testing.B) {
	inst, err := env.Parse("linear-sphere:k=50,d=5,instance=4,corrupt=0.1,adversary=far", 1)
	if err != nil {
		b.Fatal(err)
	}
	c := inst.(*env.Corrupted)
	eps, _ := privacy.NewPure(1)
	entry := BatchedEntry{Name: "robust-ae", New: func(s bandit.Setting) (bandit.BatchPolicy, error) {
		return linear.NewBatched(s, eps, linear.BatchedConfig{Model: linear.M1, Robust: true, Batches: 4, Alpha: 0.1, Delta: 0.001, Nu: 0.05, Tol: 1})
	}}
	seed := uint64(0)
	for b.Loop() {
		seed++
		if _, err := RunBatched(context.Background(), BatchedConfig{Env: c.Linear, Adversary: c,
			Steps: Steps{Horizon: 10_000_000, Runs: 1, Seed: seed, Workers: 1}}, []BatchedEntry{entry}); err != nil {
			b.Fatal(err)
		}
	}
}

// recorder passes a Batched policy through and adds up what its Filter
// removed and how many observations it saw.
type recorder struct {
	*linear.Batched
	removed, seen int
}

func (r *recorder) Observe(obs [][]float64) error {
	for _, o := range obs {
		r.seen += len(o)
	}
	err := r.Batched.Observe(obs)
	r.removed += r.Last().Removed
	return err
}

// TestEdgeAdversaryEvadesTheFilter: on the robust preset's instance (50
// actions in R^5, M1 at eps = 1, alpha = 0.05, T = 10^5, 10 runs), the far
// adversary's values are caught by the Filter (it removes at least half
// as many points as were corrupted) and robust-ae's regret stays far
// below always playing the worst action; the edge adversary's values,
// placed just below the Filter's trigger (env.EdgeFactor), are not: the
// Filter removes fewer than a tenth of the corrupted points, and
// robust-ae commits to a bad action: its regret is above a quarter of
// the worst action's (linear in T), under both of 004's readings of the
// corruption term.
func TestEdgeAdversaryEvadesTheFilter(t *testing.T) {
	const T, runs, alpha = 100000, 10, 0.05
	eps, _ := privacy.NewPure(1)
	for _, c := range []struct {
		adv  string
		eq50 bool
	}{{"far", false}, {"edge", false}, {"edge", true}} {
		inst, err := env.Parse("linear-sphere:k=50,d=5,instance=4,corrupt=0.05,adversary="+c.adv, 1)
		if err != nil {
			t.Fatal(err)
		}
		ci := inst.(*env.Corrupted)
		var recs []*recorder
		entry := BatchedEntry{Name: "robust-ae", New: func(s bandit.Setting) (bandit.BatchPolicy, error) {
			p, err := linear.NewBatched(s, eps, linear.BatchedConfig{Model: linear.M1, Robust: true, Batches: 4, Alpha: alpha, Delta: 0.001, Nu: 0.05, Tol: 1, Eq50: c.eq50})
			r := &recorder{Batched: p}
			recs = append(recs, r)
			return r, err
		}}
		res, err := RunBatched(context.Background(), BatchedConfig{Env: ci.Linear, Adversary: ci,
			Steps: Steps{Horizon: T, Runs: runs, Seed: 7, Workers: 1, Checkpoints: []int64{T}}}, []BatchedEntry{entry})
		if err != nil {
			t.Fatal(err)
		}
		removed, seen := 0, 0
		for _, r := range recs {
			removed, seen = removed+r.removed, seen+r.seen
		}
		worst := 0.0
		for _, g := range env.Gaps(ci.Means()) {
			worst = max(worst, g)
		}
		mean := 0.0
		for _, r := range res.Regret(0) {
			mean += r[0] / runs
		}
		corrupted := alpha * float64(seen)
		t.Logf("%s (eq50 %v): the Filter removed %d of about %.0f corrupted points; regret %.0f, worst action %.0f", c.adv, c.eq50, removed, corrupted, mean, worst*T)
		switch c.adv {
		case "far":
			if float64(removed) < corrupted/2 || mean > worst*T/4 {
				t.Errorf("far: removed %d of %.0f, regret %.0f", removed, corrupted, mean)
			}
		case "edge":
			if float64(removed) > corrupted/10 || mean < worst*T/4 {
				t.Errorf("edge: removed %d of %.0f, regret %.0f against %.0f", removed, corrupted, mean, worst*T)
			}
		}
	}
}
