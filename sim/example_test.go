package sim_test

import (
	"context"
	"fmt"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/mab"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
)

// Compare AdaC-UCB with its non-private counterpart on paired runs: in
// each run both face the same rewards, so their difference is estimated
// with a small standard error.
func ExampleRun() {
	inst, _ := env.Parse("bernoulli:0.75,0.625,0.5,0.375,0.25", 0)
	rho, _ := privacy.NewZCDP(0.01)
	entries := []sim.Entry{
		{Name: "adac-ucb", New: func(s bandit.Setting) (bandit.Policy, error) { return mab.NewAdaCUCB(s, rho, 4) }},
		{Name: "ucb-doubling", New: func(s bandit.Setting) (bandit.Policy, error) { return mab.NewAdaCUCB(s, privacy.None(), 4) }},
	}
	res, err := sim.Run(context.Background(), sim.Config{Env: inst, Horizon: 1_000_000, Runs: 50, Seed: 7}, entries)
	if err != nil {
		panic(err)
	}
	diff, se := sim.Paired(res.Regret(0), res.Regret(1))
	last := len(diff) - 1
	fmt.Println("private regret higher:", diff[last]-3*se[last] > 0)
	// Output: private regret higher: true
}
