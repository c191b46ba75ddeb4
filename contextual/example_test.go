package contextual_test

import (
	"fmt"

	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// AdaC-OFUL (seed 001, Algorithm 3) on the decision sets of Figure 4
// (right): choose from each step's actions, report the reward.
func ExampleNew() {
	rho, _ := privacy.NewZCDP(1)
	world, _ := env.ParseContextual("contextual-gauss:k=10,d=3", 1)
	const T = 10000
	p, _ := contextual.New(
		contextual.Setting{Dim: 3, Horizon: T, Bounds: mechanism.Bounds{Lo: -1, Hi: 1}, Noise: noise.NewFast(1)},
		contextual.Config{Lambda: 0.1, Delta: 0.001, S: 1, C: 1, Budget: rho})
	run := world.NewRun(1, 0)
	for range T {
		actions := run.Next()
		k, _ := p.Choose(actions)
		_ = p.Update(run.Reward(k))
	}
	fmt.Println("re-estimations:", p.Episodes())
	// Output: re-estimations: 35
}
