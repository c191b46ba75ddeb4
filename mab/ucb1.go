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
	"github.com/dpbandit/dpbandit/mechanism"
)

// UCB1 is the index policy of Auer, Cesa-Bianchi and Fischer ("Finite-time
// analysis of the multiarmed bandit problem", 2002): play each arm once,
// then at step t+1 the arm maximising
//
//	mean_a + w sqrt(2 ln t / N_a)
//
// where N_a is the arm's count and w the width of the reward range (1 for
// rewards in [0,1], as in the paper). It is non-private and plays one step
// per plan.
type UCB1 struct {
	bounds mechanism.Bounds
	n      []int64
	sum    []float64
	t      int64
}

// NewUCB1 returns UCB1 for the setting.
func NewUCB1(s bandit.Setting) (*UCB1, error) {
	if err := checkSetting(s); err != nil {
		return nil, err
	}
	return &UCB1{bounds: s.Bounds, n: make([]int64, s.Arms), sum: make([]float64, s.Arms)}, nil
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
	for a, n := range u.n {
		if n == 0 {
			return bandit.Plan{Arm: a, Count: 1}
		}
	}
	w := u.bounds.Width()
	l := 2 * math.Log(float64(u.t))
	best, bestIdx := 0, math.Inf(-1)
	for a, n := range u.n {
		nf := float64(n)
		if idx := u.sum[a]/nf + w*math.Sqrt(l/nf); idx > bestIdx {
			best, bestIdx = a, idx
		}
	}
	return bandit.Plan{Arm: best, Count: 1}
}

// Update records the rewards of Count pulls of Arm. UCB1 accepts any
// count, so a caller may also feed it batches.
func (u *UCB1) Update(f bandit.Feedback) error {
	if f.Arm < 0 || f.Arm >= len(u.n) {
		return fmt.Errorf("mab: feedback for arm %d of %d", f.Arm, len(u.n))
	}
	s, err := u.bounds.Sum(f.Count, f.Sum, f.Samples)
	if err != nil {
		return err
	}
	u.n[f.Arm] += f.Count
	u.sum[f.Arm] += s
	u.t += f.Count
	return nil
}

// Counts returns the number of pulls of each arm so far.
func (u *UCB1) Counts() []int64 { return append([]int64(nil), u.n...) }
