package catalog_test

import (
	"fmt"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// Build AdaC-UCB from its spec, as the CLI and the service do, and ask
// for its first plan.
func ExampleParse() {
	spec, err := catalog.Parse("adac-ucb:beta=4")
	if err != nil {
		panic(err)
	}
	b, _ := privacy.NewZCDP(0.5)
	p, err := spec.NewPolicy(b, bandit.Setting{Arms: 3, Horizon: 1000, Bounds: mechanism.Unit,
		Rand: noise.Stream(1), Noise: noise.NewFast(1)})
	if err != nil {
		panic(err)
	}
	fmt.Println(spec.Canonical, spec.Kind, spec.Private, spec.Counterpart)
	fmt.Printf("%+v\n", p.Next())
	// Output:
	// adac-ucb:beta=4 finite-armed bandits true ucb-doubling
	// {Arm:0 Count:1}
}
