package rules

import "math"

// Explore is the exploration draw of every decision of every experiment
// with exploration e (define's exploration, the effective setting): it
// returns the action served among k, served, the action the decision
// serves without exploring (online, the policy's arm; in apprentice and
// logging only mode, the baseline), unless the exploration coin (the top
// 53 bits of a word m, exploring when m/2^53 < e) explores, then one
// drawn uniformly from the next words (rejection: a word at or above the
// largest multiple of k is drawn again), which may be served again. word
// is the engine's tape, so that every word is recorded once and replayed:
// one word when the coin does not explore, two or more when it does.
func Explore(k, served int, e float64, word func() uint64) int {
	if float64(word()>>11)/(1<<53) >= e {
		return served
	}
	limit := math.MaxUint64 - math.MaxUint64%uint64(k) // rejection: uniform on [0, k)
	w := word()
	for w >= limit {
		w = word()
	}
	return int(w % uint64(k))
}
