package service

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/mab"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
)

// TestLearningMatchesSimulation drives AdaC-UCB (rho = 0.5, beta = 1)
// through the service on the 5-arm Bernoulli instance of 001's Figure 4
// for 10^5 decisions, each rewarded before the next (what the simulator
// does; the test does not wait for each commit before the next
// decision, so that the writer groups them), and checks that its pseudo-regret lies in the simulator's 95%
// interval for one run: between the 2.5% and 97.5% quantiles of 400
// simulated runs of the same configuration.
func TestLearningMatchesSimulation(t *testing.T) {
	const T = 100000
	means := []float64{0.75, 0.625, 0.5, 0.375, 0.25}
	gaps := env.Gaps(means)
	inst, _ := env.NewBernoulli(means)
	b, _ := privacy.NewZCDP(0.5)
	res, err := sim.Run(context.Background(), sim.Config{Env: inst, Horizon: T, Runs: 400, Seed: 11, Checkpoints: []int64{T}},
		[]sim.Entry{{Name: "adac-ucb", New: func(s bandit.Setting) (bandit.Policy, error) { return mab.NewAdaCUCB(s, b, 1) }}})
	if err != nil {
		t.Fatal(err)
	}
	var regrets []float64
	for _, r := range res.Regret(0) {
		regrets = append(regrets, r[0])
	}
	slices.Sort(regrets)
	lo, hi := regrets[len(regrets)*25/1000], regrets[len(regrets)*975/1000]

	// Seeded entropy: the test is reproducible (the service uses crypto/rand).
	h := start(t, sqliteDSN(t), Config{Entropy: rand.NewChaCha8([32]byte{1})})
	h.create(bernoulliSpec("fig4", len(means), 0.5))
	l, _ := h.srv.get("default", "fig4")
	r := rand.New(rand.NewPCG(5, 5))
	ctx := context.Background()
	var regret float64
	var last chan struct{}
	for i := range T {
		ev := fmt.Sprint(i)
		d, _, err := h.srv.startDecide(l, ev, ev, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		regret += gaps[d.Arm]
		x := 0.0
		if r.Float64() < means[d.Arm] {
			x = 1
		}
		res, durable, err := h.srv.startReward(l, ev, x)
		if err != nil || !res.Learned {
			t.Fatalf("reward %d: %+v %v", i, res, err)
		}
		last = durable
	}
	if err := h.srv.w.wait(ctx, last); err != nil {
		t.Fatal(err)
	}
	if st := h.state("fig4"); st.Learned != T {
		t.Fatalf("%d rewards learned of %d", st.Learned, T)
	}
	t.Logf("service regret %.1f; simulator 95%% interval of one run [%.1f, %.1f], median %.1f", regret, lo, hi, regrets[len(regrets)/2])
	if regret < lo || regret > hi {
		t.Fatalf("service regret %.1f outside the simulator's 95%% interval [%.1f, %.1f]", regret, lo, hi)
	}
}

// TestMissingRewardsDoNotStall is the measurement: AdaC-UCB on
// the 5-arm Bernoulli instance, 20 000 decisions, each rewarded at once
// except 1% whose rewards are never sent, with the default window (600
// s, which the run never reaches). Before the rule for overdue slots
// (bandit.Waits) the first missing reward stalled its plan for the whole
// window: 13 rewards were learned. Now at least 90% of the rewards that
// come are learned, and the best arm gets most decisions.
func TestMissingRewardsDoNotStall(t *testing.T) {
	const T = 20000
	means := []float64{0.75, 0.625, 0.5, 0.375, 0.25}
	h := start(t, sqliteDSN(t), Config{Entropy: rand.NewChaCha8([32]byte{2})})
	h.create(bernoulliSpec("miss", len(means), 0.5)) // the default window
	l, _ := h.srv.get("default", "miss")
	r := rand.New(rand.NewPCG(6, 6))
	sent := 0
	var last chan struct{}
	for i := range T {
		ev := fmt.Sprint(i)
		d, _, err := h.srv.startDecide(l, ev, ev, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Float64() < 0.01 {
			continue // never sent
		}
		x := 0.0
		if r.Float64() < means[d.Arm] {
			x = 1
		}
		_, durable, err := h.srv.startReward(l, ev, x)
		if err != nil {
			t.Fatalf("reward %d: %v", i, err)
		}
		sent++
		last = durable
	}
	if err := h.srv.w.wait(context.Background(), last); err != nil {
		t.Fatal(err)
	}
	st := h.state("miss")
	t.Logf("%d rewards sent, %d learned, %d ignored, %d expired; pulls %v", sent, st.Learned, st.Ignored, st.Expired, st.Pulls)
	if float64(st.Learned) < 0.9*float64(sent) {
		t.Errorf("%d of %d rewards that came were learned, want at least 90%%", st.Learned, sent)
	}
	if 2*st.Pulls[0] < int64(T) {
		t.Errorf("the best arm got %d of %d decisions", st.Pulls[0], T)
	}
}
