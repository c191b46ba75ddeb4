package mechanism_test

import (
	"fmt"
	"math"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// TreeBasedAgg releases the prefix sums of a stream of loss vectors; every
// release carries exactly Levels() noise draws per coordinate.
func ExampleNewTreeAgg() {
	eps, _ := privacy.NewPure(1)
	// Vectors in [0,1]^3 (L1 sensitivity 3) over T = 100 steps.
	tree, _ := mechanism.NewTreeAgg(eps, 3, 3, 100, noise.NewFast(1))
	fmt.Printf("levels %d, node scale %.0f\n", tree.Levels(), tree.Scale())
	for range 5 {
		_, _ = tree.Add([]float64{1, 0, 0.5})
		fmt.Print(tree.Draws, " ")
	}
	fmt.Println()
	// Output:
	// levels 7, node scale 21
	// 7 7 7 7 7
}

// Under a zCDP budget the tree's levels share rho; NewTreeAggFor picks
// Gaussian nodes, whose variance is below the Laplace nodes' for the
// same budget.
func ExampleNewTreeAggFor() {
	rho, _ := privacy.NewZCDP(0.5)
	// Losses in [0,1]^10: L1 sensitivity 10, L2 sensitivity sqrt(10).
	g, _ := mechanism.NewTreeAggFor(rho, 10, math.Sqrt(10), 10, 10000, noise.NewFast(1))
	l, _ := mechanism.NewTreeAgg(rho, 10, 10, 10000, noise.NewFast(1))
	fmt.Printf("gaussian %v: sd %.1f per coordinate; laplace: sd %.1f\n", g.Gaussian(), g.SD(), l.SD())
	// Output:
	// gaussian true: sd 44.3 per coordinate; laplace: sd 198.0
}

// On a noise source that takes exact statistics (noise.Secure), Sums
// keeps the sums exactly and ReleaseSums releases the exact mean: the
// float sum below has lost every 2^-60; the released value is the exact
// mean plus discrete noise on the grid.
func ExampleSums() {
	rho, _ := privacy.NewZCDP(1)
	nz := noise.Secure{}
	s := mechanism.NewSums(1, mechanism.ExactFor(nz))
	s.Add(0, 1)
	for range 1000 {
		s.Add(0, 0x1p-60)
	}
	g, _ := mechanism.NewGaussian(rho, mechanism.Unit.MeanSensitivity(1001), nz)
	out, err := g.ReleaseSums(s, 1001)
	fmt.Println(s.Exact(), s.F[0] == 1, err == nil, out[0] > -1 && out[0] < 1)
	// Output:
	// true true true true
}
