package mab

import (
	"math"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/privacy"
)

// SWUCB is sliding-window UCB (Garivier and Moulines, "On upper-confidence
// bound policies for switching bandit problems", ALT 2011), in the form of
// Lattimore and Szepesvari, Bandit Algorithms, section 31.3: with window
// tau and rewards normalised to [0, 1] by the declared range, play every
// arm of the window's count 0, else at step t the arm maximising
//
//	W_i/N_i + sqrt(alpha ln(min(t, tau))/N_i)
//
// where N_i counts the pulls of arm i among the last tau steps and W_i
// sums their rewards. It plays one step per plan.
//
// Private (a budget other than privacy.None), it is Design A of the
// non-stationary spec (our design; no published central-DP sliding-window
// bandit was found): the stream x_t = r_t e_{A_t} in R^K (r_t normalised
// to [0, 1]) goes to one K-dimensional continual counter M (mechanism.
// NewCounter, the smooth binary mechanism by default), which releases the
// prefix sums P(t); the window sums are W = P(t) - P(t - tau), and the
// index gains the width z sqrt(V_W)/N_i, with V_W = (sqrt(Var(t)) +
// sqrt(Var(t - tau)))^2 bounding the variance of a coordinate of the
// difference whatever the correlation of the two releases, and z =
// sqrt(2 ln(2 K T^2)) a Gaussian union bound over arms and steps.
//
// Privacy proof. Two neighbouring reward tables differ in one reward, so
// the streams they induce, for the same decisions so far, differ in one
// input x_t, in one coordinate, by at most 1: L2 sensitivity 1. M meets
// the budget for the whole sequence of its releases, also when each x_t
// is chosen from the earlier releases (each node of the trees is a
// Gaussian mechanism on inputs fixed before it is drawn; see the
// counter's doc comment). The decisions are functions of the releases,
// of the counts N_i, which are functions of earlier decisions, and of
// data-independent tie-breaking: post-processing. So the whole run meets
// the budget once, not once per arm or per window. The counts are not
// noised: they hold nothing beyond the decisions.
type SWUCB struct {
	bounds   mechanism.Bounds
	k        int
	tau      int64
	alpha, z float64
	t        int64
	acts     []int     // the action of each of the last tau steps, by step mod tau
	rews     []float64 // their normalised rewards (non-private only)
	n        []int64   // window counts
	w        []float64 // window sums (non-private)
	counter  mechanism.Counter
	prefix   [][]float64 // the releases P(s) of the last tau+1 steps, by s mod (tau+1)
	x        []float64
}

// NewSWUCB returns sliding-window UCB with window tau >= 1 and
// exploration alpha > 0, non-private for privacy.None() and otherwise
// private on the continual counter of the kind (for a budget the Gaussian
// mechanism can meet, and a known horizon).
func NewSWUCB(s bandit.Setting, b privacy.Budget, tau int64, alpha float64, kind mechanism.CounterKind) (*SWUCB, error) {
	if err := checkSetting(s); err != nil {
		return nil, err
	}
	if tau < 1 || !(alpha > 0) || math.IsInf(alpha, 1) {
		return nil, inputf("sliding-window UCB needs tau >= 1 and a finite alpha > 0, got %d and %v", tau, alpha)
	}
	if s.Horizon > 0 && tau > s.Horizon {
		tau = s.Horizon // the same policy: the window never slides
	}
	p := &SWUCB{bounds: s.Bounds, k: s.Arms, tau: tau, alpha: alpha,
		acts: make([]int, tau), rews: make([]float64, tau), n: make([]int64, s.Arms), w: make([]float64, s.Arms)}
	if !b.IsPrivate() {
		return p, nil
	}
	if s.Horizon < 1 {
		return nil, inputf("private sliding-window UCB needs the horizon")
	}
	c, err := mechanism.NewCounter(kind, b, 1, s.Arms, s.Horizon, s.Noise)
	if err != nil {
		return nil, err
	}
	p.counter, p.x = c, make([]float64, s.Arms)
	p.z = math.Sqrt(2 * math.Log(2*float64(s.Arms)*float64(s.Horizon)*float64(s.Horizon)))
	for range tau + 1 {
		p.prefix = append(p.prefix, make([]float64, s.Arms))
	}
	return p, nil
}

// release returns P(s), 0 for s <= 0.
func (p *SWUCB) release(s int64) []float64 {
	if s <= 0 {
		return nil
	}
	return p.prefix[s%(p.tau+1)]
}

// width returns z sqrt(V_W), the private part of the index's numerator
// after t steps (0 when non-private).
func (p *SWUCB) width() float64 {
	if p.counter == nil {
		return 0
	}
	sd := math.Sqrt(p.counter.Var(p.t))
	if p.t > p.tau {
		sd += math.Sqrt(p.counter.Var(p.t - p.tau))
	}
	return p.z * sd
}

// Next returns the arm of highest index, for one step.
func (p *SWUCB) Next() bandit.Plan {
	for a, n := range p.n {
		if n == 0 {
			return bandit.Plan{Arm: a, Count: 1}
		}
	}
	l := p.alpha * math.Log(float64(min(p.t+1, p.tau)))
	width := p.width()
	var now, then []float64
	if p.counter != nil {
		now, then = p.release(p.t), p.release(p.t-p.tau)
	}
	best, bestIdx := 0, math.Inf(-1)
	for a, n := range p.n {
		nf := float64(n)
		w := p.w[a]
		if now != nil {
			w = now[a]
			if then != nil {
				w -= then[a]
			}
		}
		if idx := w/nf + math.Sqrt(l/nf) + width/nf; idx > bestIdx {
			best, bestIdx = a, idx
		}
	}
	return bandit.Plan{Arm: best, Count: 1}
}

// Update records one pull (a Count of 0 is nothing).
func (p *SWUCB) Update(f bandit.Feedback) error {
	if f.Count == 0 {
		return nil
	}
	if f.Arm < 0 || f.Arm >= p.k || f.Count != 1 {
		return inputf("sliding-window UCB takes one pull of an arm of %d at a time, got %d pulls of arm %d", p.k, f.Count, f.Arm)
	}
	r, err := p.bounds.Sum(1, f.Sum, f.Samples)
	if err != nil {
		return err
	}
	r = min(max((r-p.bounds.Lo)/p.bounds.Width(), 0), 1)
	i := p.t % p.tau
	if p.t >= p.tau { // the step leaving the window
		old := p.acts[i]
		p.n[old]--
		p.w[old] -= p.rews[i]
	}
	p.acts[i] = f.Arm
	p.n[f.Arm]++
	p.t++
	if p.counter == nil {
		p.rews[i] = r
		p.w[f.Arm] += r
		return nil
	}
	clear(p.x)
	p.x[f.Arm] = r
	out, err := p.counter.Add(p.x)
	if err != nil {
		return err
	}
	copy(p.prefix[p.t%(p.tau+1)], out)
	return nil
}
