package mab_test

import (
	"fmt"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mab"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// A deployment calls the policy once per decision: Next says which arm to
// play, Update reports the reward. The noise source would be
// noise.NewSecure() in production; a seeded stream keeps the example
// reproducible.
func ExampleNewAdaCUCB() {
	budget, err := privacy.NewZCDP(0.5)
	if err != nil {
		panic(err)
	}
	policy, err := mab.NewAdaCUCB(bandit.Setting{
		Arms:   3,
		Bounds: mechanism.Unit, // rewards in [0,1]; others are clipped
		Rand:   noise.Stream(1),
		Noise:  noise.Fast{R: noise.Stream(2)},
	}, budget, 4)
	if err != nil {
		panic(err)
	}
	patients := noise.Stream(3) // stands in for the real outcomes
	means := []float64{0.3, 0.6, 0.45}
	for range 20000 {
		arm := policy.Next().Arm
		reward := 0.0
		if noise.Bernoulli(patients, means[arm]) {
			reward = 1
		}
		if err := policy.Update(bandit.Feedback{Arm: arm, Count: 1, Sum: reward}); err != nil {
			panic(err)
		}
	}
	c := policy.Counts()
	fmt.Println("best arm played most:", c[1] > c[0] && c[1] > c[2])
	// Output: best arm played most: true
}
