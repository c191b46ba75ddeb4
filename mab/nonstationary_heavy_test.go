//go:build heavy

package mab

import "testing"

// TestNonStationarySweep: the comparison of TestNonStationaryQuick at
// T = 10^5 with 4 breakpoints, rho in {0.1, 1, 10}, 20 runs each (go test
// -tags heavy -run TestNonStationarySweep -v ./mab).
func TestNonStationarySweep(t *testing.T) {
	for _, rho := range []float64{0.1, 1, 10} {
		nsReport(t, 100000, 4, rho, nsCompare(t, 100000, 4, rho, 20))
	}
}
