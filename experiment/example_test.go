package experiment_test

import (
	"context"
	"fmt"

	"github.com/dpbandit/dpbandit/experiment"
)

// An experiment as `dpbandit run` builds it: algorithms by spec, a budget
// sweep, and paired differences to the non-private counterpart.
func ExampleRun() {
	c := experiment.Defaults()
	c.Env = "bernoulli:0.75,0.625,0.5,0.375,0.25"
	c.Algos = []string{"adac-ucb:beta=4", "ucb-doubling:beta=4"}
	c.Rho = []float64{0.01, 10}
	c.Horizon, c.Runs, c.Seed = 100000, 20, 7
	rep, err := experiment.Run(context.Background(), c, experiment.Options{}) // Out: "dir" writes files
	if err != nil {
		panic(err)
	}
	for _, r := range rep.Summary.Results {
		fmt.Println(r.Label, "paired with", r.DiffVs)
	}
	// Output:
	// adac-ucb:beta=4 rho=0.01 paired with ucb-doubling:beta=4
	// adac-ucb:beta=4 rho=10 paired with ucb-doubling:beta=4
	// ucb-doubling:beta=4 paired with
}
