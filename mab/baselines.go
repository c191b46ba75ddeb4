package mab

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mechanism"
)

// counts holds per-arm counts and sums of rewards normalised to [0,1]:
// the state of the per-step non-private baselines.
type counts struct {
	bounds mechanism.Bounds
	n      []int64
	s      []float64 // sums of normalised rewards
	t      int64
}

func newCounts(s bandit.Setting) (counts, error) {
	if err := checkSetting(s); err != nil {
		return counts{}, err
	}
	return counts{bounds: s.Bounds, n: make([]int64, s.Arms), s: make([]float64, s.Arms)}, nil
}

// add records feedback and returns the normalised reward sum.
func (c *counts) add(f bandit.Feedback) (float64, error) {
	if f.Arm < 0 || f.Arm >= len(c.n) {
		return 0, inputf("feedback for arm %d of %d", f.Arm, len(c.n))
	}
	sum, err := c.bounds.Sum(f.Count, f.Sum, f.Samples)
	if err != nil {
		return 0, err
	}
	norm := sum
	if c.bounds != mechanism.Unit {
		// In [0, 1] the normalisation is the identity (to the bit:
		// sum - 0 and x/1 are exact); elsewhere it divides.
		norm = (sum - float64(f.Count)*c.bounds.Lo) / c.bounds.Width()
	}
	c.n[f.Arm] += f.Count
	c.t += f.Count
	return norm, nil
}

// unplayed returns an arm not yet played, or -1.
func (c *counts) unplayed() int {
	for a, n := range c.n {
		if n == 0 {
			return a
		}
	}
	return -1
}

// Thompson is Thompson sampling with Beta(1,1) priors (Thompson 1933;
// Agrawal and Goyal 2012): at each step draw theta_a ~ Beta(1 + S_a,
// 1 + N_a - S_a) for every arm and play the largest. Rewards in a general
// range [lo, hi] are normalised to [0,1] and, unless they are 0 or 1,
// replaced by a Bernoulli draw of that mean (Agrawal and Goyal's
// binarisation), which keeps the Beta posterior exact. Non-private; one
// step per plan.
type Thompson struct {
	counts
	r *rand.Rand
}

// NewThompson returns Thompson sampling for the setting.
func NewThompson(s bandit.Setting) (*Thompson, error) {
	c, err := newCounts(s)
	if s.Rand == nil && err == nil {
		err = inputf("Thompson sampling needs a random source")
	}
	return &Thompson{c, s.Rand}, err
}

// Next samples the posteriors and returns the best arm for one step.
func (p *Thompson) Next() bandit.Plan {
	best, bestV := 0, math.Inf(-1)
	for a := range p.n {
		v := distuv.Beta{Alpha: 1 + p.s[a], Beta: 1 + float64(p.n[a]) - p.s[a], Src: p.r}.Rand()
		if v > bestV {
			best, bestV = a, v
		}
	}
	return bandit.Plan{Arm: best, Count: 1}
}

// Update records the rewards. A batch of several rewards must carry its
// samples unless every reward is 0 or 1 (then the sum counts successes).
func (p *Thompson) Update(f bandit.Feedback) error {
	norm, err := p.add(f)
	if err != nil {
		return err
	}
	switch {
	case f.Samples != nil:
		for _, x := range f.Samples {
			c, _ := p.bounds.Clip(x)
			if noise01(p.r, (c-p.bounds.Lo)/p.bounds.Width()) {
				p.s[f.Arm]++
			}
		}
	case f.Count == 1:
		if noise01(p.r, norm) {
			p.s[f.Arm]++
		}
	case norm == math.Trunc(norm):
		p.s[f.Arm] += norm
	default:
		p.n[f.Arm] -= f.Count
		p.t -= f.Count
		return inputf("Thompson sampling needs the individual rewards of a batch that are not all 0 or 1")
	}
	return nil
}

// noise01 binarises a reward x in [0,1]: exactly for 0 and 1, by a
// Bernoulli(x) draw otherwise.
func noise01(r *rand.Rand, x float64) bool {
	if x == 0 || x == 1 {
		return x == 1
	}
	return r.Float64() < x
}

// KLUCB is KL-UCB (Garivier and Cappe, "The KL-UCB algorithm for bounded
// stochastic bandits and beyond", 2011): play each arm once, then at step
// t+1 the arm maximising
//
//	max { q in [p_a, 1] : N_a kl(p_a, q) <= ln t + c ln ln t },
//
// where p_a is the arm's mean reward normalised to [0,1] and kl the
// Bernoulli Kullback-Leibler divergence. The paper proves its bound for
// c = 3 and recommends c = 0 in practice. The index is found by bisection
// to 1e-9. Non-private; one step per plan.
type KLUCB struct {
	counts
	c float64
}

// NewKLUCB returns KL-UCB with exploration constant c >= 0.
func NewKLUCB(s bandit.Setting, c float64) (*KLUCB, error) {
	cs, err := newCounts(s)
	if err == nil && !(c >= 0) {
		err = inputf("c must be non-negative, got %v", c)
	}
	return &KLUCB{cs, c}, err
}

// Next returns the arm of highest KL-UCB index for one step.
func (p *KLUCB) Next() bandit.Plan {
	if a := p.unplayed(); a >= 0 {
		return bandit.Plan{Arm: a, Count: 1}
	}
	lt := math.Log(float64(p.t))
	budget := lt
	if p.c > 0 && lt > 1 {
		budget += p.c * math.Log(lt)
	}
	best, bestIdx := 0, math.Inf(-1)
	for a, n := range p.n {
		// An arm whose index cannot exceed the best so far needs no exact
		// index (klIndex stops once it knows).
		if idx := klIndex(p.s[a]/float64(n), budget/float64(n), bestIdx); idx > bestIdx {
			best, bestIdx = a, idx
		}
	}
	return bandit.Plan{Arm: best, Count: 1}
}

// Update records the rewards.
func (p *KLUCB) Update(f bandit.Feedback) error {
	norm, err := p.add(f)
	if err == nil {
		p.s[f.Arm] += norm
	}
	return err
}

// bernoulliKL is kl(p, q) with 0 ln 0 = 0.
func bernoulliKL(p, q float64) float64 {
	const eps = 1e-15
	q = min(max(q, eps), 1-eps)
	k := 0.0
	if p > 0 {
		k += p * math.Log(p/q)
	}
	if p < 1 {
		k += (1 - p) * math.Log((1-p)/(1-q))
	}
	return k
}

// klIndex returns max { q in [p, 1] : kl(p, q) <= d }, to within 1e-9,
// or, once it knows that this is at most floor, a value at most floor.
// kl(p, .) is convex and increasing on [p, 1], so Newton's method started
// above the root, at Pinsker's bound p + sqrt(d/2) (kl >= 2 (q-p)^2),
// descends to it: every iterate bounds the result from above, and the
// first at most floor ends the search (the result is the same as
// without a floor whenever it exceeds floor). Near q = 1 it bisects
// instead, whose upper end bounds the result.
func klIndex(p, d, floor float64) float64 {
	if d <= 0 {
		return p
	}
	if q := p + math.Sqrt(d/2); q < 0.999 {
		for range 50 {
			if q <= floor {
				return q
			}
			f := bernoulliKL(p, q) - d
			if f <= 1e-12 {
				return q
			}
			step := f * q * (1 - q) / (q - p) // f / (d kl/dq)
			q -= step
			if step < 1e-10 {
				return q
			}
		}
	}
	lo, hi := p, 1.0
	for hi-lo > 1e-9 {
		if hi <= floor {
			return hi
		}
		mid := (lo + hi) / 2
		if bernoulliKL(p, mid) <= d {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}
