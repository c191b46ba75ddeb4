//go:build heavy

package mechanism

import "testing"

// TestCounterMSESweep: the mean squared error of every counter's prefix
// sums against the truth, T = 2^10, 2^12, ..., 2^20, 40 runs each (the
// factorisation mechanism up to 2^14: see MaxFactorisationT), with the
// ratios to the binary tree and their 95% intervals (go test -tags heavy
// -run TestCounterMSESweep -v ./mechanism).
func TestCounterMSESweep(t *testing.T) {
	sweepMSE(t, []int{10, 12, 14, 16, 18, 20}, 40, 1<<14)
}
