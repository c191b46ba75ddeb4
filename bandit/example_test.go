package bandit_test

import (
	"fmt"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mab"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// ExampleDelayed takes decisions with AdaC-UCB while rewards are late:
// the first plan (each arm once) has one slot, so a second decision
// before the first reward is overflow, and its reward is not learned.
func ExampleDelayed() {
	b, _ := privacy.NewZCDP(0.5)
	p, _ := mab.NewAdaCUCB(bandit.Setting{Arms: 3, Bounds: mechanism.Unit, Rand: noise.Stream(1), Noise: noise.NewFast(1)}, b, 1)
	d := bandit.NewDelayed(p)
	first := d.Decide()
	second := d.Decide()
	fmt.Println(first.Arm, first.Learns(), second.Learns())
	_ = d.Reward(first, 1) // the first plan is complete
	third := d.Decide()
	fmt.Println(third.Arm, third.Learns())
	// Output:
	// 0 true false
	// 1 true
}
