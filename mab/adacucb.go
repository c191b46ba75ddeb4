package mab

import (
	"fmt"
	"math"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// AdaCUCB is AdaC-UCB, Algorithm 4 of Azize and Basu, "Concentrated
// Differential Privacy for Bandits" (seed 001, Appendix C), and, with a
// non-private budget, its non-private counterpart "UCB with arm-dependent
// doubling and forgetting" of the paper's Section VII.
//
// The policy plays each arm once, then runs episodes. Episode l starts at
// step t_l; it plays the arm maximising the index of Eq. (14),
//
//	I_a = mu~_a + sqrt((w^2/(2 n_a) + 2 sigma_a^2) beta log t_l),
//
// until the arm's count doubles (or the horizon ends). Here n_a is the
// number of samples of arm a's last episode (1 after the initial pull,
// N_a/2 afterwards), mu~_a is the mean of that episode's rewards released
// once, when the episode ended, by the Gaussian mechanism with sensitivity
// w/n_a (w the width of the reward range), and sigma_a is the standard
// deviation of that release. Samples of earlier episodes are forgotten.
//
// For rewards in [0,1] (w = 1) and rho-zCDP, sigma_a^2 = 1/(2 rho n_a^2)
// and the index is exactly Eq. (14): the bonus is
// sqrt((1/(2n) + 1/(rho n^2)) beta log t_l). With (eps,delta)-DP or Renyi
// budgets the factor 1/(2 rho) becomes that of Theorem 18 (Appendix C-E);
// package privacy computes it. With privacy.None() no noise is added and
// sigma_a = 0: the non-private counterpart.
//
// By Theorem 12 the policy is rho-Interactive zCDP for rewards in the
// declared range: each reward enters exactly one released mean.
// Theorem 10 bounds its regret for beta > 3; the paper's experiments use
// beta = 1.
type AdaCUCB struct {
	bounds mechanism.Bounds
	budget privacy.Budget
	beta   float64
	nz     noise.Noise

	count  []int64   // N_a: pulls of arm a so far
	last   []int64   // n_a: samples in arm a's last complete episode
	mean   []float64 // mu~_a: the released mean of that episode
	sigma  []float64 // standard deviation of that release's noise
	t      int64     // steps played so far
	ep     int64     // episodes started, initial pulls included
	arm    int       // current episode's arm, -1 between episodes
	target int64     // current episode's length
	done   int64     // steps of it played so far
	sum    float64   // sum of its (clipped) rewards
}

// NewAdaCUCB returns AdaC-UCB with optimism parameter beta > 0 for the
// budget (zCDP, approximate or Renyi; privacy.None() for the non-private
// counterpart).
func NewAdaCUCB(s bandit.Setting, b privacy.Budget, beta float64) (*AdaCUCB, error) {
	if err := checkSetting(s); err != nil {
		return nil, err
	}
	if !(beta > 0) || math.IsInf(beta, 0) {
		return nil, fmt.Errorf("mab: beta must be positive and finite, got %v", beta)
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	if b.IsPrivate() {
		if s.Noise == nil {
			return nil, fmt.Errorf("mab: a private policy needs a noise source")
		}
		if _, err := mechanism.NewGaussian(b, s.Bounds.Width(), s.Noise); err != nil {
			return nil, err
		}
	}
	k := s.Arms
	return &AdaCUCB{
		bounds: s.Bounds, budget: b, beta: beta, nz: s.Noise,
		count: make([]int64, k), last: make([]int64, k),
		mean: make([]float64, k), sigma: make([]float64, k), arm: -1,
	}, nil
}

// Next returns what remains of the current episode, or starts the next one.
func (p *AdaCUCB) Next() bandit.Plan {
	if p.arm < 0 {
		p.arm, p.target, p.done, p.sum = p.choose()
		p.ep++
	}
	return bandit.Plan{Arm: p.arm, Count: p.target - p.done}
}

// choose picks the next episode's arm and length (Algorithm 4, lines 3-7).
func (p *AdaCUCB) choose() (int, int64, int64, float64) {
	for a, n := range p.count {
		if n == 0 {
			return a, 1, 0, 0 // initialisation: each arm once
		}
	}
	w2 := p.bounds.Width() * p.bounds.Width()
	logt := p.beta * math.Log(float64(p.t+1)) // beta log t_l, t_l = t + 1
	best, bestIdx := 0, math.Inf(-1)
	for a := range p.count {
		n := float64(p.last[a])
		idx := p.mean[a] + math.Sqrt((w2/(2*n)+2*p.sigma[a]*p.sigma[a])*logt)
		if idx > bestIdx {
			best, bestIdx = a, idx
		}
	}
	return best, p.count[best], 0, 0 // double the arm's count
}

// Update records part or all of the current episode. When the episode is
// complete its mean is released, once, through the Gaussian mechanism.
func (p *AdaCUCB) Update(f bandit.Feedback) error {
	if p.arm < 0 || f.Arm != p.arm {
		return fmt.Errorf("mab: feedback for arm %d, but the plan is arm %d", f.Arm, p.arm)
	}
	if f.Count > p.target-p.done {
		return fmt.Errorf("mab: feedback for %d pulls, but %d remain in the plan", f.Count, p.target-p.done)
	}
	s, err := p.bounds.Sum(f.Count, f.Sum, f.Samples)
	if err != nil {
		return err
	}
	p.done += f.Count
	p.sum += s
	p.t += f.Count
	p.count[p.arm] += f.Count
	if p.done < p.target {
		return nil
	}
	n := p.target
	m, sigma := p.sum/float64(n), 0.0
	if p.budget.IsPrivate() {
		g, err := mechanism.NewGaussian(p.budget, p.bounds.MeanSensitivity(n), p.nz)
		if err != nil {
			return err
		}
		if m, err = g.Release(m); err != nil {
			return err
		}
		sigma = g.Sigma()
	}
	p.last[p.arm], p.mean[p.arm], p.sigma[p.arm] = n, m, sigma
	p.arm = -1
	return nil
}

// Episodes returns the number of episodes started, the K initial pulls
// included.
func (p *AdaCUCB) Episodes() int64 { return p.ep }

// Counts returns the number of pulls of each arm so far.
func (p *AdaCUCB) Counts() []int64 { return append([]int64(nil), p.count...) }
