package sim

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/internal/stattest"
	"github.com/dpbandit/dpbandit/mab"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/olo"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/theory"
)

var fiveArms, _ = env.NewBernoulli([]float64{0.75, 0.625, 0.5, 0.375, 0.25})

func adac(rho, beta float64) Entry {
	b := privacy.None()
	if rho > 0 {
		b, _ = privacy.NewZCDP(rho)
	}
	return Entry{Name: "adac-ucb " + b.String(), New: func(s bandit.Setting) (bandit.Policy, error) {
		return mab.NewAdaCUCB(s, b, beta)
	}}
}

func ucb1() Entry {
	return Entry{Name: "ucb1", New: func(s bandit.Setting) (bandit.Policy, error) { return mab.NewUCB1(s) }}
}

func final(x [][]float64) []float64 {
	out := make([]float64, len(x))
	for i, r := range x {
		out[i] = r[len(r)-1]
	}
	return out
}

// TestBatchedMatchesIndependentInDistribution is the check of the foundation
// issue: the batched path on the dyadic bridge and the naive per-step path
// with independently drawn rewards give the same regret distribution
// (two-sample Kolmogorov-Smirnov over 600 runs each, T = 10^4).
func TestBatchedMatchesIndependentInDistribution(t *testing.T) {
	const runs, T = 600, 10000
	entries := []Entry{adac(0.1, 1), ucb1()}
	b, err := Run(context.Background(), Config{Env: fiveArms, Horizon: T, Runs: runs, Seed: 1}, entries)
	if err != nil {
		t.Fatal(err)
	}
	n, err := Run(context.Background(), Config{Env: fiveArms, Horizon: T, Runs: runs, Seed: 2, Mode: Independent}, entries)
	if err != nil {
		t.Fatal(err)
	}
	for j, e := range entries {
		d, p := stattest.KSTwo(final(b.Regret(j)), final(n.Regret(j)))
		if p < 1e-3 {
			t.Errorf("%s: batched and independent regret differ: KS D=%v p=%v", e.Name, d, p)
		}
	}
	// The test has power: a different policy is told apart.
	other, _ := Run(context.Background(), Config{Env: fiveArms, Horizon: T, Runs: runs, Seed: 2, Mode: Independent}, []Entry{adac(0.01, 1)})
	if _, p := stattest.KSTwo(final(b.Regret(0)), final(other.Regret(0))); p >= 1e-3 {
		t.Error("KS did not tell rho=0.1 from rho=0.01")
	}
}

// TestSteppedEqualsBatched: unrolling every plan one decision at a time on
// the same stack of rewards changes nothing, bit for bit.
func TestSteppedEqualsBatched(t *testing.T) {
	entries := []Entry{adac(0.5, 4), adac(0, 4), ucb1()}
	cfg := Config{Env: fiveArms, Horizon: 5000, Runs: 20, Seed: 3}
	b, _ := Run(context.Background(), cfg, entries)
	cfg.Mode = Stepped
	s, _ := Run(context.Background(), cfg, entries)
	for j := range entries {
		for r := range b.Regret(j) {
			if !slices.Equal(b.Regret(j)[r], s.Regret(j)[r]) {
				t.Fatalf("%s run %d: stepped %v != batched %v", entries[j].Name, r, s.Regret(j)[r][len(s.Checkpoints)-1], b.Regret(j)[r][len(b.Checkpoints)-1])
			}
		}
	}
}

func TestWorkersDoNotChangeResults(t *testing.T) {
	entries := []Entry{adac(0.1, 1), adac(0, 1)}
	cfg := Config{Env: fiveArms, Horizon: 100000, Runs: 16, Seed: 7, Workers: 1}
	a, _ := Run(context.Background(), cfg, entries)
	cfg.Workers = 3
	b, _ := Run(context.Background(), cfg, entries)
	for j := range entries {
		for r := range a.Regret(j) {
			if !slices.Equal(a.Regret(j)[r], b.Regret(j)[r]) {
				t.Fatalf("entry %d run %d differs with 3 workers", j, r)
			}
		}
		if !slices.Equal(a.Episodes(j), b.Episodes(j)) {
			t.Fatal("episodes differ")
		}
	}
}

// fixed always plays arm 1 in plans of 1000 steps.
type fixed struct{}

func (fixed) Next() bandit.Plan            { return bandit.Plan{Arm: 1, Count: 1000} }
func (fixed) Update(bandit.Feedback) error { return nil }

func TestCheckpointsInterpolateWithinPlans(t *testing.T) {
	e := Entry{Name: "fixed", New: func(bandit.Setting) (bandit.Policy, error) { return fixed{}, nil }}
	res, err := Run(context.Background(), Config{Env: fiveArms, Horizon: 12345, Runs: 1, Checkpoints: []int64{1, 999, 1000, 1001, 12345}}, []Entry{e})
	if err != nil {
		t.Fatal(err)
	}
	for c, tt := range res.Checkpoints {
		if want := 0.125 * float64(tt); math.Abs(res.Regret(0)[0][c]-want) > 1e-9 {
			t.Errorf("regret at %d = %v, want %v", tt, res.Regret(0)[0][c], want)
		}
	}
}

func TestCancelKeepsFinishedRuns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cfg := Config{Env: fiveArms, Horizon: 200000, Runs: 1000, Seed: 1, Workers: 2,
		Progress: func(done int) {
			if done == 5 {
				cancel()
			}
		}}
	res, err := Run(ctx, cfg, []Entry{ucb1()})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(res.Runs) < 5 || len(res.Runs) >= 1000 || len(res.Regret(0)) != len(res.Runs) {
		t.Fatalf("kept %d runs", len(res.Runs))
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	for _, c := range []Config{
		{Env: fiveArms, Horizon: 0, Runs: 1},
		{Env: fiveArms, Horizon: 10, Runs: 0},
		{Horizon: 10, Runs: 1},
		{Env: fiveArms, Horizon: 10, Runs: 1, Checkpoints: []int64{5, 3}},
		{Env: fiveArms, Horizon: 10, Runs: 1, Workers: -1},
	} {
		if _, err := Run(context.Background(), c, []Entry{ucb1()}); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	bad := Entry{Name: "bad", New: func(s bandit.Setting) (bandit.Policy, error) { return mab.NewAdaCUCB(s, privacy.None(), -1) }}
	if _, err := Run(context.Background(), Config{Env: fiveArms, Horizon: 10, Runs: 2}, []Entry{bad}); err == nil {
		t.Error("policy error not returned")
	}
}

func TestStats(t *testing.T) {
	x := [][]float64{{1, 10}, {2, 20}, {3, 30}, {4, 40}}
	s := Summarize(x)
	if s.Mean[0] != 2.5 || s.Mean[1] != 25 {
		t.Errorf("mean %v", s.Mean)
	}
	sd := math.Sqrt(5.0 / 3)
	if math.Abs(s.Std[0]-sd) > 1e-12 {
		t.Errorf("std %v, want %v", s.Std[0], sd)
	}
	// t_{0.975, 3} = 3.182446305284263.
	if half := s.CIHi[0] - s.Mean[0]; math.Abs(half-3.182446305284263*sd/2) > 1e-9 {
		t.Errorf("CI half-width %v", half)
	}
	if s.Q05[0] != 1 || s.Q95[0] != 4 {
		t.Errorf("quantiles %v %v", s.Q05, s.Q95)
	}
	m, se := Paired([][]float64{{3}, {5}, {4}}, [][]float64{{1}, {2}, {3}})
	if m[0] != 2 || math.Abs(se[0]-1/math.Sqrt(3)) > 1e-12 {
		t.Errorf("paired %v %v", m, se)
	}
	if p := PriceOfPrivacy([]float64{3, 1}, []float64{2, 0}); p[0] != 0.5 || !math.IsNaN(p[1]) {
		t.Errorf("PoP %v", p)
	}
	g := LogGrid(1000000, 100)
	if g[0] != 1 || g[len(g)-1] != 1000000 || len(g) < 80 || !slices.IsSorted(g) {
		t.Errorf("grid %v", g)
	}
}

// BenchmarkAdaCUCBBillion measures one batched run of AdaC-UCB at T = 10^9
// on the 5-arm instance of seed 001's Figure 4.
func BenchmarkAdaCUCBBillion(b *testing.B) {
	cfg := Config{Env: fiveArms, Horizon: 1_000_000_000, Runs: 1, Workers: 1, Checkpoints: []int64{1_000_000_000}}
	e := []Entry{adac(0.1, 4)}
	for i := 0; b.Loop(); i++ {
		cfg.Seed = uint64(i)
		if _, err := Run(context.Background(), cfg, e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUCB1Steps measures per-step simulation of UCB1; steps/s is
// reported as a custom metric.
func BenchmarkUCB1Steps(b *testing.B) { benchmarkSteps(b, ucb1(), Batched) }

// BenchmarkUCB1IndependentSteps is BenchmarkUCB1Steps with a fresh
// reward per step (Independent mode), the path of
// `dpbandit run --mode iid --algo ucb1`, the machine's unit before
// bench/unit (docs/performance.md#the-unit-u).
func BenchmarkUCB1IndependentSteps(b *testing.B) { benchmarkSteps(b, ucb1(), Independent) }

// BenchmarkKLUCBSteps is BenchmarkUCB1Steps for KL-UCB (c = 0).
func BenchmarkKLUCBSteps(b *testing.B) {
	benchmarkSteps(b, Entry{Name: "kl-ucb", New: func(s bandit.Setting) (bandit.Policy, error) { return mab.NewKLUCB(s, 0) }}, Batched)
}

// benchmarkSteps measures the per-step simulation of one policy on the
// five-armed Bernoulli instance, in steps per second.
func benchmarkSteps(b *testing.B, e Entry, mode Mode) {
	const T = 1_000_000
	cfg := Config{Env: fiveArms, Horizon: T, Runs: 1, Workers: 1, Mode: mode}
	es := []Entry{e}
	for i := 0; b.Loop(); i++ {
		cfg.Seed = uint64(i)
		if _, err := Run(context.Background(), cfg, es); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(T)*float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

// TestAdaCUCBUnderTheorem10: with beta > 3, AdaC-UCB's mean regret stays
// under the bound of Theorem 10 (seed 001), at every checkpoint, upper
// confidence limit included.
func TestAdaCUCBUnderTheorem10(t *testing.T) {
	for _, rho := range []float64{0.01, 1} {
		res, err := Run(context.Background(), Config{Env: fiveArms, Horizon: 200000, Runs: 100, Seed: 5}, []Entry{adac(rho, 4)})
		if err != nil {
			t.Fatal(err)
		}
		s := Summarize(res.Regret(0))
		for c, tt := range res.Checkpoints {
			if tt < 2 {
				continue
			}
			bound, _ := theory.AdaCUCB(env.Gaps(fiveArms.Means()), tt, rho, 4)
			if s.CIHi[c] > bound {
				t.Errorf("rho=%v t=%d: regret %v above Theorem 10's %v", rho, tt, s.Mean[c], bound)
			}
		}
	}
}

// BenchmarkDPFTRLExpertsRun is one whole run of private FTRL-experts
// (eps = 1) with N = 100 experts and T = 10^6 on one core: the losses, the
// learner and the exact regret (issue target: under 2 s).
func BenchmarkDPFTRLExpertsRun(b *testing.B) {
	losses, err := olo.ParseLosses("experts-iid:n=100", 1)
	if err != nil {
		b.Fatal(err)
	}
	eps, _ := privacy.NewPure(1)
	cfg := OLOConfig{Env: losses, Steps: Steps{Horizon: 1_000_000, Runs: 1, Workers: 1, Checkpoints: []int64{1_000_000}}}
	e := []OLOEntry{{Name: "dp-ftrl-experts", New: func(s olo.Setting) (olo.Learner, error) { return olo.NewFTRLExperts(s, eps) }}}
	for i := 0; b.Loop(); i++ {
		cfg.Seed = uint64(i)
		if _, err := RunOLO(context.Background(), cfg, e); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDelayZeroIsStepped(t *testing.T) {
	in, _ := env.NewBernoulli([]float64{0.75, 0.625, 0.5, 0.375, 0.25})
	b, _ := privacy.NewZCDP(0.5)
	e := []Entry{{Name: "adac-ucb", New: func(s bandit.Setting) (bandit.Policy, error) { return mab.NewAdaCUCB(s, b, 1) }}}
	cfg := Config{Env: in, Horizon: 20000, Runs: 4, Seed: 3, Mode: Stepped}
	step, err := Run(context.Background(), cfg, e)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Mode, cfg.Delay = Batched, Delay{Fixed: 0}
	zero, err := Run(context.Background(), cfg, e)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(step.Records, zero.Records) {
		t.Fatal("a zero delay must reproduce the stepped run")
	}
	// Rewards 500 decisions late: each plan's rewards come 500
	// decisions after its decisions, taken meanwhile on released
	// information only; the policy learns later and regret grows.
	cfg.Delay = Delay{Fixed: 500}
	late, err := Run(context.Background(), cfg, e)
	if err != nil {
		t.Fatal(err)
	}
	mean := func(r *Result) float64 {
		var s float64
		for _, run := range r.Regret(0) {
			s += run[len(r.Checkpoints)-1]
		}
		return s / float64(len(r.Regret(0)))
	}
	if mean(late) <= mean(zero) {
		t.Fatalf("mean regret %v under delay 500, not above %v without delay", mean(late), mean(zero))
	}
}

func TestGeometricDelay(t *testing.T) {
	d, err := ParseDelay("geom:9")
	if err != nil {
		t.Fatal(err)
	}
	r := noise.Stream(1)
	const n = 200000
	var sum, zeros float64
	for range n {
		x := d.draw(r)
		sum += float64(x)
		if x == 0 {
			zeros++
		}
	}
	// Mean 9, variance m(m+1) = 90: the sample mean's sd is sqrt(90/n).
	if m := sum / n; math.Abs(m-9) > 5*math.Sqrt(90.0/n) {
		t.Fatalf("mean %v, want 9", m)
	}
	// P(D = 0) = p = 0.1, sd sqrt(p(1-p)/n).
	if p := zeros / n; math.Abs(p-0.1) > 5*math.Sqrt(0.09/n) {
		t.Fatalf("P(0) = %v, want 0.1", p)
	}
	for _, bad := range []string{"-1", "geom:0", "geom:x", "1.5", "", "0,miss=1", "0,miss=x", "0,miss=NaN", "0,default=1,default=2", "0,foo=1", "0,", "0,window=0", "0,window=1.5", "0,window=1,window=2"} {
		if _, err := ParseDelay(bad); err == nil {
			t.Errorf("ParseDelay(%q) accepted", bad)
		}
	}
	for _, good := range []string{"geom:100,miss=0.01", "5,miss=0.2,default=0", "0,default=-1", "3,miss=0.1,default=0,window=500"} {
		d, err := ParseDelay(good)
		if err != nil || d.String() != good {
			t.Errorf("ParseDelay(%q) = %+v (%q), %v", good, d, d.String(), err)
		}
	}
}

// TestMissingRewardsDoNotStallTheSimulation: with 1% of the rewards
// never coming, AdaC-UCB's regret (T = 10^5, 40 runs, rewards at once)
// stays within noise of the run where all come: a decision whose reward
// is missing is replaced once it is overdue (bandit.Pooled) instead of
// stalling its plan until the window ends. The tolerance is 4 standard errors of the difference of
// the two means.
func TestMissingRewardsDoNotStallTheSimulation(t *testing.T) {
	inst, _ := env.NewBernoulli([]float64{0.75, 0.625, 0.5, 0.375, 0.25})
	b, _ := privacy.NewZCDP(0.5)
	entry := []Entry{{Name: "adac-ucb", New: func(s bandit.Setting) (bandit.Policy, error) { return mab.NewAdaCUCB(s, b, 1) }}}
	stats := func(d string) (mean, se float64) {
		delay, err := ParseDelay(d)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), Config{Env: inst, Horizon: 100000, Runs: 40, Seed: 3, Workers: 2, Mode: Stepped, Delay: delay, Checkpoints: []int64{100000}}, entry)
		if err != nil {
			t.Fatal(err)
		}
		var xs []float64
		for _, r := range res.Regret(0) {
			xs = append(xs, r[0])
		}
		m, sd := stat.MeanStdDev(xs, nil)
		return m, sd / math.Sqrt(float64(len(xs)))
	}
	m0, s0 := stats("0,default=0")
	m1, s1 := stats("0,miss=0.01")
	t.Logf("regret %.1f ± %.1f with every reward, %.1f ± %.1f with 1%% missing", m0, s0, m1, s1)
	if math.Abs(m1-m0) > 4*math.Hypot(s0, s1) {
		t.Errorf("regret %.1f with 1%% of rewards missing, %.1f without", m1, m0)
	}
}

func TestContextualDelay(t *testing.T) {
	cfg, e := adacOnGauss(t, Steps{Horizon: 5000, Runs: 3, Seed: 2})
	plain, err := RunContextual(context.Background(), cfg, e)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Checkpoints, cfg.Delay = nil, Delay{Fixed: 0}
	zero, err := RunContextual(context.Background(), cfg, e)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plain.Records, zero.Records) {
		t.Fatal("a zero delay must reproduce the plain run")
	}
	cfg.Checkpoints, cfg.Delay = nil, Delay{Fixed: 50}
	late, err := RunContextual(context.Background(), cfg, e)
	if err != nil {
		t.Fatal(err)
	}
	last := len(late.Checkpoints) - 1
	var sl, sp float64
	for r := range late.Regret(0) {
		sl += late.Regret(0)[r][last]
		sp += plain.Regret(0)[r][last]
	}
	if sl <= sp {
		t.Fatalf("regret %v under delay 50, not above %v without", sl, sp)
	}
}
