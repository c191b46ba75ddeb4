package sparse_test

import (
	"fmt"

	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/sparse"
)

// NewLassoBandit learns the support of a 5-sparse theta* in R^100 from
// the rewards of its greedy choices.
func ExampleNewLassoBandit() {
	c, _ := env.ParseContextual("sparse-gauss:k=10,d=100,s=5,instance=3", 1)
	p, err := sparse.NewLassoBandit(contextual.Setting{Dim: c.D, Horizon: 3000, Bounds: c.Range},
		sparse.Config{Lambda0: 0.05, CTheta: 1, Ridge: 1e-3})
	if err != nil {
		panic(err)
	}
	run := c.NewRun(1, 0)
	for range 3000 {
		acts := run.Next()
		k, err := p.Choose(acts)
		if err != nil {
			panic(err)
		}
		if err := p.Update(run.Reward(k)); err != nil {
			panic(err)
		}
	}
	fmt.Println(p.Support(), c.Support())
	// Output: [9 29 33 54 72] [9 29 33 54 72]
}
