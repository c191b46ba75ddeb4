package env

import "testing"

// TestStreamSumAfterPathMoved: a range sum that starts in the leaf block
// a stream holds and ends on a block boundary (a plan to a horizon that is
// a multiple of 64, 10^6 or 10^7 say) read the prefix of its start from a
// root-to-leaf path that the end's prefix had just moved: arm 1 (mean 1)
// gave -1 for 10^7 - 1 rewards, and a "sum out of range" error stopped
// the simulation. Every Bernoulli mean is affected; with means 0 and 1
// the sums are known.
func TestStreamSumAfterPathMoved(t *testing.T) {
	inst, err := NewBernoulli([]float64{0, 0.3, 1})
	if err != nil {
		t.Fatal(err)
	}
	const capacity = 10_000_000
	for _, a := range []int{0, 1, 2} {
		for _, from := range []int64{1, 100, 3000, 6000} {
			s := inst.Stream(1, 0, a, capacity)
			fresh := inst.Stream(1, 0, a, capacity)
			head := s.Sum(0, from) // holds from's leaf block
			got := s.Sum(from, capacity)
			want := fresh.Sum(0, capacity) - head
			if got != want {
				t.Errorf("arm %d: sum of [%d, %d) = %v after reading [0, %d), want %v", a, from, capacity, got, from, want)
			}
			if m := inst.Means()[a]; (m == 0 || m == 1) && got != m*float64(capacity-from) {
				t.Errorf("arm %d (mean %v): sum of [%d, %d) = %v", a, m, from, capacity, got)
			}
		}
	}
}
