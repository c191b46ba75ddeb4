package experiment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dpbandit/dpbandit/experiment"
	"github.com/dpbandit/dpbandit/sim"
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

// An experiment split into shards (as a Kubernetes Indexed Job or a
// Slurm array would run it) and merged: the merge computes exactly what
// the unsharded run computes.
func ExampleMerge() {
	c := experiment.Defaults()
	c.Env, c.Algos, c.Horizon, c.Runs = "bernoulli:0.6,0.4", []string{"ucb1"}, 10000, 6
	dir, _ := os.MkdirTemp("", "shards")
	defer os.RemoveAll(dir)
	for i := range 3 {
		o := experiment.Options{Out: filepath.Join(dir, fmt.Sprint(i)), Shard: sim.Shard{Index: i, Count: 3}}
		if _, err := experiment.Run(context.Background(), c, o); err != nil {
			panic(err)
		}
	}
	out := filepath.Join(dir, "merged")
	_, err := experiment.Merge([]string{filepath.Join(dir, "0"), filepath.Join(dir, "1"), filepath.Join(dir, "2")}, out, nil)
	full, _ := experiment.Run(context.Background(), c, experiment.Options{})
	b, _ := os.ReadFile(filepath.Join(out, "summary.json"))
	var merged experiment.Summary
	_ = json.Unmarshal(b, &merged)
	fmt.Println(err, merged.Runs, merged.Results[0].RegretMean == full.Summary.Results[0].RegretMean)
	// Output:
	// <nil> 6 true
}
