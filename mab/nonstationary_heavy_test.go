//go:build heavy

package mab

import "testing"

// TestNonStationarySweep: the comparison of TestNonStationaryQuick at
// T = 10^5, rho in {0.1, 1, 10}, 20 runs each, on the rotating instance
// (4 breakpoints) and on the late-change one (1 breakpoint at 3T/4) (go
// test -tags heavy -run TestNonStationarySweep -v ./mab).
func TestNonStationarySweep(t *testing.T) {
	const T = 100000
	for _, rho := range []float64{0.1, 1, 10} {
		nsReport(t, "rotating", T, 4, rho, nsCompare(t, rotating(T, 4), T, 4, rho, 20))
		nsReport(t, "late", T, 1, rho, nsCompare(t, late(T), T, 1, rho, 20))
	}
}
