package robust_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/dpbandit/dpbandit/robust"
)

// Filter recovers the mean of points in the plane of which a fifth sit
// far away: lambda bounds the inliers' covariance (unit variance here),
// known in advance. The mean printed is within 0.05 of the inliers'
// (it rounds to -0.0); the plain mean would be about (200, 200).
func ExampleFilter() {
	r := rand.New(rand.NewPCG(1, 2))
	var pts [][]float64
	for i := range 10000 {
		if i%5 == 0 {
			pts = append(pts, []float64{1000, 1000}) // outliers
			continue
		}
		pts = append(pts, []float64{r.NormFloat64(), r.NormFloat64()})
	}
	mean, removed, err := robust.Filter(pts, 1, r)
	if err != nil {
		panic(err)
	}
	// The filter also removes some inliers (those far from the
	// outlier-pulled mean); it removes more outliers than inliers.
	fmt.Printf("mean (%.1f, %.1f); removed %d points, the 2000 outliers among them\n", mean[0], mean[1], removed)
	// Output: mean (-0.0, -0.0); removed 2260 points, the 2000 outliers among them
}
