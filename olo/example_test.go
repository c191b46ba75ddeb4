package olo_test

import (
	"fmt"

	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/olo"
	"github.com/dpbandit/dpbandit/privacy"
)

// Private FTRL over 10 experts (seed 003, Algorithm 1) on i.i.d. losses:
// play, observe, and compare the regret with the explicit bound.
func ExampleNewFTRLExperts() {
	eps, _ := privacy.NewPure(1)
	losses, _ := olo.ParseLosses("experts-iid:n=10", 1)
	const T = 10000
	f, _ := olo.NewFTRLExperts(olo.Setting{N: losses.N, T: T, Noise: noise.NewFast(1)}, eps)
	run := losses.NewRun(1, 0)
	cum := make([]float64, losses.N)
	incurred := 0.0
	for range T {
		l := run.Next()
		x, _, _ := f.Play()
		for i := range x {
			incurred += x[i] * l[i]
			cum[i] += l[i]
		}
		_ = f.Observe(l)
	}
	regret := incurred - losses.Best(cum)
	fmt.Printf("regret below the bound: %v (bound %.0f)\n", regret <= f.Bound(T), f.Bound(T))
	// Output: regret below the bound: true (bound 3605)
}
