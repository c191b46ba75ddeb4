package privacy_test

import (
	"fmt"

	"github.com/dpbandit/dpbandit/privacy"
)

// Calibrate the Gaussian mechanism for the mean of 100 rewards in [0,1]
// (L2 sensitivity 1/100) to 0.5-zCDP, and state the guarantee as
// (eps,delta)-DP.
func ExampleGaussianSigma() {
	b, _ := privacy.NewZCDP(0.5)
	sigma, _ := privacy.GaussianSigma(b, 1.0/100)
	eps, _ := b.ToApprox(1e-6)
	fmt.Printf("sigma = %.4f, (%.3f, 1e-6)-DP\n", sigma, eps)
	// Output: sigma = 0.0100, (5.757, 1e-6)-DP
}

func ExampleNewApprox() {
	_, err := privacy.NewApprox(1, 1.5)
	fmt.Println(err)
	// Output: privacy: delta must lie in (0,1), got 1.5
}
