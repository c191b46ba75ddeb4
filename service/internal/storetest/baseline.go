package storetest

import "slices"

// SlotBaseline returns the baseline of a slot whose slate has actions,
// given the actions the slots before it were given (taken): its
// baselineAction, or its first eligible action when a slot before took
// that (define.Baseline), and the probability of each action under the
// logging policy of apprentice mode and logging only at the exploration
// coin's probability p: the baseline 1 - p + p/k, every other eligible
// action p/k (k the eligible ones), a taken one 0.
func SlotBaseline(actions, taken []string, baselineAction string, p float64) (string, map[string]float64) {
	eligible := slices.DeleteFunc(slices.Clone(actions), func(a string) bool { return slices.Contains(taken, a) })
	base := baselineAction
	if !slices.Contains(eligible, base) {
		base = eligible[0]
	}
	k := float64(len(eligible))
	prob := make(map[string]float64, len(actions))
	for _, a := range eligible {
		prob[a] = p / k
	}
	prob[base] = 1 - p + p/k
	return base, prob
}
