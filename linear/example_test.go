package linear_test

import (
	"fmt"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/linear"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// NewBatched runs robust arm elimination under client model M2: each
// batch lists the actions to play and how often; each action's client
// turns its rewards into one noisy mean (Report, eps-LDP); the learner
// observes the reports (here uncorrupted) and eliminates.
func ExampleNewBatched() {
	inst, _ := env.Parse("linear-sphere:k=20,d=3,instance=1", 1)
	l := inst.(*env.Linear)
	eps, _ := privacy.NewPure(1)
	p, err := linear.NewBatched(bandit.Setting{Arms: l.Arms(), Horizon: 100000, Bounds: l.Range, Actions: l.Acts,
		Rand: noise.Stream(1), Noise: noise.NewFast(2)}, eps,
		linear.BatchedConfig{Model: linear.M2, Robust: true, Batches: 4, Alpha: 0, Delta: 0.001, Nu: 0.05, Tol: 1})
	if err != nil {
		panic(err)
	}
	r := noise.Stream(3)
	for {
		arms, counts, ok, err := p.Next()
		if err != nil {
			panic(err)
		}
		if !ok {
			break
		}
		obs := make([][]float64, len(arms))
		for j, a := range arms {
			rewards := make([]float64, counts[j])
			for i := range rewards {
				rewards[i] = l.Draw(r, a)
			}
			if obs[j], err = p.Report(j, rewards); err != nil {
				panic(err)
			}
		}
		if err := p.Observe(obs); err != nil {
			panic(err)
		}
	}
	m := l.Means()
	best := 0
	for a := range m {
		if m[a] > m[best] {
			best = a
		}
	}
	fmt.Println("plays the best action for the rest:", p.Best() == best)
	// Output: plays the best action for the rest: true
}
