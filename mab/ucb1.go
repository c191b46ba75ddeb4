// Package mab holds policies for finite-armed stochastic bandits: the
// non-private baselines and the private algorithms of the source papers.
//
// Every policy implements bandit.Policy. Rewards are taken in the declared
// range of the bandit.Setting: single rewards outside it are clipped,
// impossible sums are rejected, NaN and infinite rewards are errors.
package mab

import (
	"fmt"
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
type UCB1 struct{ counts }

// NewUCB1 returns UCB1 for the setting.
func NewUCB1(s bandit.Setting) (*UCB1, error) {
	c, err := newCounts(s)
	return &UCB1{c}, err
}

// checkSetting validates what every policy of this package needs.
func checkSetting(s bandit.Setting) error {
	if s.Arms < 2 {
		return fmt.Errorf("mab: a bandit needs at least 2 arms, got %d", s.Arms)
	}
	if s.Horizon < 0 {
		return fmt.Errorf("mab: horizon must be non-negative, got %d", s.Horizon)
	}
	return s.Bounds.Validate()
}

// Next returns the arm of highest index, for one step.
func (u *UCB1) Next() bandit.Plan {
	if a := u.unplayed(); a >= 0 {
		return bandit.Plan{Arm: a, Count: 1}
	}
	l := 2 * math.Log(float64(u.t))
	best, bestIdx := 0, math.Inf(-1)
	for a, n := range u.n {
		nf := float64(n)
		if idx := u.s[a]/nf + math.Sqrt(l/nf); idx > bestIdx {
			best, bestIdx = a, idx
		}
	}
	return bandit.Plan{Arm: best, Count: 1}
}

// Update records the rewards of Count pulls of Arm. UCB1 accepts any
// count, so a caller may also feed it batches.
func (u *UCB1) Update(f bandit.Feedback) error {
	norm, err := u.add(f)
	if err == nil {
		u.s[f.Arm] += norm
	}
	return err
}

// Counts returns the number of pulls of each arm so far.
func (c *counts) Counts() []int64 { return append([]int64(nil), c.n...) }
