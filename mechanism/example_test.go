package mechanism_test

import (
	"fmt"

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
