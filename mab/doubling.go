package mab

import (
	"math"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// doubling is the arm-dependent doubling and forgetting scheme of Azize and
// Basu (NeurIPS 2022, ref. [8] of seed 001) shared by AdaC-UCB and
// AdaP-UCB: play each arm once, then in episode l, starting at step t_l,
// play the arm of highest index until its count doubles (or the horizon
// ends). An arm's index uses only the rewards of its last episode, whose
// mean is released once, when that episode ends, by the policy's mechanism,
// and reused until the arm's next episode. Each reward thus enters exactly
// one release, which is what makes the policies private without
// composition.
type doubling struct {
	bounds mechanism.Bounds
	beta   float64
	// release returns the noisy mean of an episode of n rewards with sum
	// s (the mean s/n, exactly from exact sums on a noise source that
	// takes them), and the scale of the noise added (0 without noise).
	release func(s mechanism.Sums, n int64) (float64, float64, error)
	// bonus returns the confidence bonus of an arm whose last episode had
	// n rewards released with noise scale s, at beta log t_l = bl.
	bonus func(n, s, bl float64) float64

	// redraw, set only by BrokenAdaCUCB, re-releases every arm's mean at
	// every index evaluation from exact, the last episodes' sums.
	redraw bool
	exact  []mechanism.Sums
	// private is set when releases add noise (a private budget).
	private bool

	count  []int64        // N_a: pulls of arm a so far
	last   []int64        // n_a: samples in arm a's last complete episode
	mean   []float64      // the released mean of that episode
	scale  []float64      // the scale of that release's noise
	t      int64          // steps played so far
	ep     int64          // episodes started, initial pulls included
	arm    int            // current episode's arm, -1 between episodes
	target int64          // current episode's length
	done   int64          // steps of it played so far
	sum    mechanism.Sums // sum of its (clipped) rewards (one value)
}

func newDoubling(s bandit.Setting, beta float64) (*doubling, error) {
	if err := checkSetting(s); err != nil {
		return nil, err
	}
	if !(beta > 0) || math.IsInf(beta, 0) {
		return nil, inputf("beta must be positive and finite, got %v", beta)
	}
	k := s.Arms
	return &doubling{
		bounds: s.Bounds, beta: beta,
		count: make([]int64, k), last: make([]int64, k),
		mean: make([]float64, k), scale: make([]float64, k), arm: -1,
		sum: mechanism.NewSums(1, mechanism.ExactFor(s.Noise)),
	}, nil
}

// Next returns what remains of the current episode, or starts the next one.
func (p *doubling) Next() bandit.Plan {
	if p.arm < 0 {
		p.arm, p.target = p.choose()
		p.done = 0
		p.ep++
	}
	return bandit.Plan{Arm: p.arm, Count: p.target - p.done}
}

// choose picks the next episode's arm and length.
func (p *doubling) choose() (int, int64) {
	for a, n := range p.count {
		if n == 0 {
			return a, 1 // initialisation: each arm once
		}
	}
	bl := p.beta * math.Log(float64(p.t+1)) // beta log t_l, t_l = t + 1
	if p.redraw {
		for a := range p.count {
			p.mean[a], p.scale[a], _ = p.release(p.exact[a], p.last[a])
		}
	}
	best, bestIdx := 0, math.Inf(-1)
	for a := range p.count {
		if idx := p.mean[a] + p.bonus(float64(p.last[a]), p.scale[a], bl); idx > bestIdx {
			best, bestIdx = a, idx
		}
	}
	return best, p.count[best] // double the arm's count
}

// Update records part or all of the current episode. When the episode is
// complete its mean is released, once.
func (p *doubling) Update(f bandit.Feedback) error {
	if p.arm < 0 {
		return inputf("feedback for arm %d before a plan: call Next first", f.Arm)
	}
	if f.Arm != p.arm {
		return inputf("feedback for arm %d, but the plan is arm %d", f.Arm, p.arm)
	}
	if f.Count > p.target-p.done {
		return inputf("feedback for %d pulls, but %d remain in the plan", f.Count, p.target-p.done)
	}
	s, err := p.bounds.Sum(f.Count, f.Sum, f.Samples)
	if err != nil {
		return err
	}
	p.done += f.Count
	p.sum.Add(0, s)
	p.t += f.Count
	p.count[p.arm] += f.Count
	if p.done < p.target {
		return nil
	}
	m, scale, err := p.release(p.sum, p.target)
	if err != nil {
		return err
	}
	if p.redraw {
		p.exact[p.arm] = mechanism.NewSums(1, p.sum.Exact())
		p.exact[p.arm].AddSums(p.sum)
	}
	p.last[p.arm], p.mean[p.arm], p.scale[p.arm] = p.target, m, scale
	// The episode's exact sum is dropped once released: its rewards may
	// now be deleted (Unreleased), and a snapshot must not keep it.
	p.sum.Reset()
	p.arm = -1
	return nil
}

// Episodes returns the number of episodes started, the K initial pulls
// included.
func (p *doubling) Episodes() int64 { return p.ep }

// Unreleased returns the rewards of the current episode, the only ones
// no release covers (bandit.Forgetter); false without noise, or for the
// broken variant that keeps the exact sums.
func (p *doubling) Unreleased() (int64, bool) {
	if p.arm < 0 {
		return 0, p.private && !p.redraw
	}
	return p.done, p.private && !p.redraw
}

// Released returns, for every arm that has completed an episode, the
// released mean of its last one and the noise's scale (bandit.Releaser).
func (p *doubling) Released() []bandit.ArmStat {
	var out []bandit.ArmStat
	for a, n := range p.last {
		if n > 0 {
			out = append(out, bandit.ArmStat{Arm: a, Samples: n, Mean: p.mean[a], Noise: p.scale[a]})
		}
	}
	return out
}

// Counts returns the number of pulls of each arm so far.
func (p *doubling) Counts() []int64 { return append([]int64(nil), p.count...) }

// AdaCUCB is AdaC-UCB, Algorithm 4 of Azize and Basu, "Concentrated
// Differential Privacy for Bandits" (seed 001, Appendix C), and, with a
// non-private budget, its non-private counterpart "UCB with arm-dependent
// doubling and forgetting" of the paper's Section VII.
//
// It runs the doubling and forgetting scheme (each arm once, then episodes
// that double the chosen arm's count). Episode l, starting at step t_l,
// plays the arm maximising the index of Eq. (14),
//
//	I_a = mu~_a + sqrt((w^2/(2 n_a) + 2 sigma_a^2) beta log t_l),
//
// where n_a is the number of samples of arm a's last episode (1 after the
// initial pull, N_a/2 afterwards), mu~_a is the mean of that episode's
// rewards released once, when the episode ended, by the Gaussian mechanism
// with sensitivity w/n_a (w the width of the reward range), and sigma_a is
// the standard deviation of that release. Samples of earlier episodes are
// forgotten.
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
type AdaCUCB struct{ *doubling }

// NewAdaCUCB returns AdaC-UCB with optimism parameter beta > 0 for the
// budget (zCDP, approximate or Renyi; privacy.None() for the non-private
// counterpart).
//
// Private policies rely on Feedback's privacy obligation: report rewards
// one at a time or with Samples, or sums of rewards already clipped to
// the declared range (see bandit.Feedback).
func NewAdaCUCB(s bandit.Setting, b privacy.Budget, beta float64) (*AdaCUCB, error) {
	d, err := newDoubling(s, beta)
	if err != nil {
		return nil, err
	}
	cal, err := calibrated(s, b, mechanism.CalibrateGaussian)
	if err != nil {
		return nil, err
	}
	d.private = b.IsPrivate()
	w2 := s.Bounds.Width() * s.Bounds.Width()
	d.bonus = func(n, sigma, bl float64) float64 { return math.Sqrt((w2/(2*n) + 2*sigma*sigma) * bl) }
	d.release = func(sum mechanism.Sums, n int64) (float64, float64, error) { return sum.F[0] / float64(n), 0, nil }
	if d.private {
		d.release = releaseMean(s.Bounds, cal.At, mechanism.Gaussian.Sigma)
	}
	return &AdaCUCB{d}, nil
}

// BrokenAdaCUCB returns AdaC-UCB broken the way docs/privacy.md warns
// against: at every index evaluation it re-draws the noise of every arm's
// mean from the same samples, which spends the budget again at each
// episode. It exists so that audits can show they catch the mistake;
// never deploy it.
func BrokenAdaCUCB(s bandit.Setting, b privacy.Budget, beta float64) (*AdaCUCB, error) {
	p, err := NewAdaCUCB(s, b, beta)
	if err == nil {
		p.redraw, p.exact = true, make([]mechanism.Sums, s.Arms)
	}
	return p, err
}

// calibrated validates b and, for a private budget, that the setting has
// a noise source, and returns the mechanism calibrate calibrates to the
// budget, once for the policy, having tried it at sensitivity 1 (the
// zero C for a non-private budget).
func calibrated[C interface{ At(float64) (M, error) }, M any](s bandit.Setting, b privacy.Budget,
	calibrate func(privacy.Budget, noise.Noise) (C, error)) (C, error) {
	var none C
	if err := b.Validate(); err != nil {
		return none, err
	}
	if !b.IsPrivate() {
		return none, nil
	}
	if err := noise.Check(s.Noise); err != nil {
		return none, inputf("a private policy: %w", err)
	}
	c, err := calibrate(b, s.Noise)
	if err != nil {
		return none, err
	}
	_, err = c.At(1)
	return c, err
}

// releaseMean returns a private doubling policy's release: the mean of
// an episode's n rewards, with the noise of the mechanism that at builds
// at the mean's sensitivity, and that noise's scale. The mechanism is
// calibrated to the budget once, by the policy's constructor; at only
// scales it to the episode.
func releaseMean[M interface {
	ReleaseSums(mechanism.Sums, int64) ([]float64, error)
}](bounds mechanism.Bounds, at func(float64) (M, error), scale func(M) float64) func(mechanism.Sums, int64) (float64, float64, error) {
	return func(sum mechanism.Sums, n int64) (float64, float64, error) {
		m, err := at(bounds.MeanSensitivity(n))
		if err != nil {
			return 0, 0, err
		}
		x, err := m.ReleaseSums(sum, n)
		if err != nil {
			return 0, 0, err
		}
		return x[0], scale(m), nil
	}
}

// AdaPUCB is AdaP-UCB, the pure eps-DP member of the doubling and
// forgetting family (Azize and Basu, NeurIPS 2022, ref. [8] of seed 001,
// described in its Section II-b). It differs from AdaC-UCB only in its
// mechanism and bonus: the mean of an episode of n rewards is released
// once with Laplace noise Lap(b_n), b_n = w/(eps n) from package privacy
// (for a rho-zCDP budget, eps = sqrt(2 rho): eps-DP implies
// (eps^2/2)-zCDP), and the index is
//
//	I_a = mu~_a + w sqrt(beta log t_l / (2 n_a)) + b_a beta log t_l.
//
// Derivation of the bonus. With x = beta log t_l, Hoeffding's inequality
// for n rewards of range w gives P(mean - mu >= w sqrt(x/(2n))) <= e^-x,
// and the Laplace tail gives P(L >= b x) = e^-x / 2. By a union bound the
// released mean exceeds mu by more than the bonus with probability at most
// (3/2) t_l^-beta, the same order as AdaC-UCB's Gaussian bound; the
// Laplace term enters linearly because its tail is exponential, not
// sub-Gaussian. With b = 1/(eps n) this is the index of AdaP-UCB.
type AdaPUCB struct{ *doubling }

// NewAdaPUCB returns AdaP-UCB with optimism parameter beta > 0 for a pure
// eps-DP (or rho-zCDP, converted) budget.
//
// Private policies rely on Feedback's privacy obligation: report rewards
// one at a time or with Samples, or sums of rewards already clipped to
// the declared range (see bandit.Feedback).
func NewAdaPUCB(s bandit.Setting, b privacy.Budget, beta float64) (*AdaPUCB, error) {
	d, err := newDoubling(s, beta)
	if err != nil {
		return nil, err
	}
	if !b.IsPrivate() {
		return nil, inputf("AdaP-UCB needs a privacy budget; its non-private counterpart is ucb-doubling")
	}
	cal, err := calibrated(s, b, mechanism.CalibrateLaplace)
	if err != nil {
		return nil, err
	}
	d.private = true
	w := s.Bounds.Width()
	d.bonus = func(n, scale, bl float64) float64 { return w*math.Sqrt(bl/(2*n)) + scale*bl }
	d.release = releaseMean(s.Bounds, cal.At, mechanism.Laplace.Scale)
	return &AdaPUCB{d}, nil
}
