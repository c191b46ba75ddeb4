package env_test

import (
	"fmt"

	"github.com/dpbandit/dpbandit/env"
)

// Every policy of run 0 that pulls arm 2 a thousand times sees the same
// thousand rewards: the stack-of-rewards model.
func ExampleParse() {
	inst, err := env.Parse("bernoulli:0.75,0.625,0.5,0.375,0.25", 0)
	if err != nil {
		panic(err)
	}
	a := inst.Stream(7, 0, 2, 1_000_000).Sum(0, 1000)
	b := inst.Stream(7, 0, 2, 1_000_000).Sum(0, 1000)
	fmt.Println(inst.Arms(), env.Gaps(inst.Means())[4], a == b)
	// Output: 5 0.5 true
}
