package define

import (
	"math"
	"testing"
)

// TestExploreProbIsExact: the probability that a decision explores, with
// the coin u < e on the 2^53 grid of a tape word, is ceil(e 2^53)/2^53,
// and the propensities are computed from it: for e = 1e-20 that is
// 2^-53 (the propensities said 1e-20, 10^4 times too small; found by a
// stranger's review). The coin and the formula agree at the grid's
// points around e.
func TestExploreProbIsExact(t *testing.T) {
	for e, want := range map[float64]float64{1e-20: 0x1p-53, 0.25: 0.25, 1: 1, 0x1p-53: 0x1p-53, 0.2: math.Ceil(0.2*(1<<53)) / (1 << 53)} {
		if p := ExploreProb(e); p != want {
			t.Errorf("e = %v: %v, want %v", e, p, want)
		}
	}
	for _, e := range []float64{1e-20, 0.2, 1.0 / 3, 0.999999} {
		n := uint64(ExploreProb(e) * (1 << 53)) // the words m < n explore
		for _, m := range []uint64{n - 1, n} {
			if m >= 1<<53 {
				continue
			}
			if explores := float64(m)/(1<<53) < e; explores != (m < n) {
				t.Errorf("e = %v, word %d: the coin explores %v", e, m, explores)
			}
		}
	}
}
