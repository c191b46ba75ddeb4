package bandit

import (
	"math"
	"math/bits"
)

// Waits keeps what the rule for missing rewards needs (Delayed): the
// decisions taken, the slots waiting for a reward, and how long the
// rewards that came took, in decisions. The zero value is ready; its
// memory is bounded by the pending slots.
type Waits struct {
	decided int64
	queue   []int64        // pending slots' decision numbers, in order, resolved ones included until they reach the front
	open    map[int64]bool // the pending slots
	hist    [65]int64      // rewards' delays: bucket b holds delays in [2^(b-1), 2^b), bucket 0 the delay 0
	arrived int64
}

// minArrivals is the number of rewards that must have come before
// decisions can make a slot overdue: until then only the caller's window
// can.
const minArrivals = 32

// Decide counts a decision and returns its number, from 1.
func (w *Waits) Decide() int64 {
	w.decided++
	return w.decided
}

// Take marks decision seq as a slot waiting for its reward.
func (w *Waits) Take(seq int64) {
	if w.open == nil {
		w.open = map[int64]bool{}
	}
	w.open[seq] = true
	w.queue = append(w.queue, seq)
}

// Pending reports whether decision seq waits for its reward.
func (w *Waits) Pending(seq int64) bool { return w.open[seq] }

// Arrive resolves slot seq: by its reward (learned, whose delay counts)
// or otherwise.
func (w *Waits) Arrive(seq int64, learned bool) {
	delete(w.open, seq)
	if learned {
		w.Saw(seq)
	}
	for len(w.queue) > 0 && !w.open[w.queue[0]] {
		w.queue = w.queue[1:]
	}
}

// Saw counts the delay of a reward that came for decision seq, learned
// or not (an overflow decision's): every reward that comes tells how
// long rewards take, so that a plan whose only reward never comes is
// not waited for forever.
func (w *Waits) Saw(seq int64) {
	if seq < 1 || seq > w.decided {
		return
	}
	w.hist[bits.Len64(uint64(w.decided-seq))]++
	w.arrived++
	if w.arrived >= 2*memory {
		// Forget geometrically: the histogram weighs the last memory
		// arrivals or so, so that the patience follows delays that
		// change (traffic that grows makes a delay in seconds more
		// decisions).
		w.arrived = 0
		for b := range w.hist {
			w.hist[b] /= 2
			w.arrived += w.hist[b]
		}
	}
}

// memory is about how many recent arrivals the delay histogram weighs.
const memory = 4096

// Patience returns the number of decisions after which a pending slot
// is overdue: twice the 99th percentile of the delays of the rewards
// that came (the upper end of its power-of-two bucket) plus 8, once
// minArrivals have come; before that, never (math.MaxInt64).
func (w *Waits) Patience() int64 {
	if w.arrived < minArrivals {
		return math.MaxInt64
	}
	need, sum := int64(math.Ceil(0.99*float64(w.arrived))), int64(0)
	for b, c := range w.hist {
		if sum += c; sum >= need {
			return 2*(int64(1)<<b) + 8
		}
	}
	return math.MaxInt64
}

// Overdue returns the pending slots taken more than Patience decisions
// ago, oldest first. They stay pending until resolved.
func (w *Waits) Overdue() []int64 {
	p := w.Patience()
	var out []int64
	for _, seq := range w.queue {
		if w.decided-seq <= p {
			break
		}
		if w.open[seq] {
			out = append(out, seq)
		}
	}
	return out
}
