// Package mab holds policies for finite-armed stochastic bandits: the
// non-private baselines and the private algorithms of the source papers.
//
// Every policy implements bandit.Policy. Rewards are taken in the declared
// range of the bandit.Setting: single rewards outside it are clipped,
// impossible sums are rejected, NaN and infinite rewards are errors.
package mab

import (
	"math"

	"github.com/dpbandit/dpbandit/bandit"
)

// UCB1 is the index policy of Auer, Cesa-Bianchi and Fischer ("Finite-time
// analysis of the multiarmed bandit problem", 2002): play each arm once,
// then at step t+1 the arm maximising
//
//	mean_a + sqrt(2 ln t / N_a)
//
// where N_a is the arm's count and mean_a its mean reward normalised to
// [0,1] by the declared range (for rewards in [0,1], the paper's index).
// It is non-private and plays one step per plan.
//
// Its choices are those of computing every arm's index at every step,
// bit for bit, at a fraction of the cost. An arm's index only grows
// between its pulls, in floating point too (division, square root and
// addition are correctly rounded, hence monotone, and math.Log is
// monotone on integers below 2^40, whose logarithms lie many units in
// the last place apart). So over a window of steps [from, to] each
// arm's index lies between its values at from and at to. UCB1 keeps
// bounds on those two values, computed when the window opens and for the
// played arm after each pull, each within a few units in the last place
// of the value it bounds and widened by a relative 2^-40 to be sure of
// its side. An arm whose bound from above is below another's bound from
// below cannot be chosen; when one arm is left it is the choice, and
// otherwise the exact indices of those left decide, first arm first as
// in the full computation.
type UCB1 struct {
	counts
	lo, hi   []float64 // bounds on each arm's index at from and at to
	from, to int64     // the window; to = -1 before the first and after a restore
	rFrom    float64   // sqrt(2 ln from)
	rTo      float64   // sqrt(2 ln to)
}

// NewUCB1 returns UCB1 for the setting.
func NewUCB1(s bandit.Setting) (*UCB1, error) {
	c, err := newCounts(s)
	if err != nil {
		return nil, err
	}
	k := len(c.n)
	return &UCB1{counts: c, lo: make([]float64, k), hi: make([]float64, k), to: -1}, nil
}

// checkSetting validates what every policy of this package needs.
func checkSetting(s bandit.Setting) error {
	if s.Arms < 2 {
		return inputf("a bandit needs at least 2 arms, got %d", s.Arms)
	}
	if s.Horizon < 0 {
		return inputf("horizon must be non-negative, got %d", s.Horizon)
	}
	return s.Bounds.Validate()
}

// ucbWindowShift sets a window's length to about t/2^ucbWindowShift
// steps: longer windows open less often, shorter ones leave fewer arms
// whose exact index is needed.
const ucbWindowShift = 10

// ucbLogMonotone is the step below which math.Log of consecutive integers
// is strictly increasing with room to spare; later, the window is a
// single step and the bounds are the indices themselves.
const ucbLogMonotone = 1 << 40

// Next returns the arm of highest index, for one step.
func (u *UCB1) Next() bandit.Plan {
	if u.t > u.to {
		// A window opens once every arm is played.
		if a := u.unplayed(); a >= 0 {
			return bandit.Plan{Arm: a, Count: 1}
		}
		u.open()
	}
	top, topLo := 0, u.lo[0]
	for a, lo := range u.lo {
		if lo > topLo {
			top, topLo = a, lo
		}
	}
	left := 0
	for _, hi := range u.hi {
		if hi >= topLo {
			left++
		}
	}
	if left == 1 {
		return bandit.Plan{Arm: top, Count: 1}
	}
	l := 2 * math.Log(float64(u.t))
	best, bestIdx := 0, math.Inf(-1)
	for a, n := range u.n {
		if u.hi[a] < topLo {
			continue
		}
		nf := float64(n)
		if idx := u.s[a]/nf + math.Sqrt(l/nf); idx > bestIdx {
			best, bestIdx = a, idx
		}
	}
	return bandit.Plan{Arm: best, Count: 1}
}

// open starts a window at the current step and bounds every arm's index.
func (u *UCB1) open() {
	u.from, u.to = u.t, u.t+u.t>>ucbWindowShift
	if u.to >= ucbLogMonotone {
		u.to = u.t
	}
	u.rFrom, u.rTo = math.Sqrt(2*math.Log(float64(u.from))), math.Sqrt(2*math.Log(float64(u.to)))
	for a := range u.n {
		u.bound(a)
	}
}

// ucbMargin widens the bounds: each is a sum of two non-negative terms
// of at most four roundings each, like the index it bounds, so both lie
// within 10 units in the last place (2^-49.6) of the exact value.
const ucbMargin = 0x1p-40

// bound sets an arm's index bounds over the window: with r = 1/N_a,
// mean = s r and the bonus sqrt(2 ln t) sqrt(r), one division and one
// square root where the index itself takes two divisions.
func (u *UCB1) bound(a int) {
	r := 1 / float64(u.n[a])
	mean, sr := u.s[a]*r, math.Sqrt(r)
	u.lo[a] = (mean + u.rFrom*sr) * (1 - ucbMargin)
	u.hi[a] = (mean + u.rTo*sr) * (1 + ucbMargin)
}

// Update records the rewards of Count pulls of Arm. UCB1 accepts any
// count, so a caller may also feed it batches.
func (u *UCB1) Update(f bandit.Feedback) error {
	norm, err := u.add(f)
	if err != nil {
		return err
	}
	u.s[f.Arm] += norm
	if u.t <= u.to {
		u.bound(f.Arm)
	}
	return nil
}

// UnmarshalBinary restores what MarshalBinary returned.
func (u *UCB1) UnmarshalBinary(b []byte) error {
	u.to = -1
	return u.counts.UnmarshalBinary(b)
}

// Counts returns the number of pulls of each arm so far.
func (c *counts) Counts() []int64 { return append([]int64(nil), c.n...) }
