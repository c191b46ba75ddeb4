package mab

import (
	"math"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/privacy"
)

// SWUCB is sliding-window UCB (Garivier and Moulines, "On upper-confidence
// bound policies for switching bandit problems", ALT 2011, section 3.2,
// arXiv 0805.3415): with rewards in [0, B] (here shifted by the declared
// range's Lo, B = Hi - Lo) and window tau, at step t play an arm whose
// window count is 0 (its padding is infinite), else the arm maximising
//
//	X_t(tau, i) + c_t(tau, i),  c_t(tau, i) = B sqrt(xi ln(min(t, tau)) / N_t(tau, i)),
//
// where N_t(tau, i) counts the pulls of arm i among the last tau steps
// and X_t(tau, i) is their mean reward; xi > 1/2 in their theorem (the
// form of Lattimore and Szepesvari, Bandit Algorithms, section 31.3, with
// alpha = xi B^2). The theorem's window is tau = 2B sqrt(T ln T /
// Upsilon_T) for Upsilon_T breakpoints (GMWindow). It plays one step per
// plan. The paper's text was not obtained here: the padding is the
// non-stationary spec's [REC], matched by an independent report of the
// paper; the window's tuning is the spec's alone (docs/algorithms.md,
// "Drifting rewards").
//
// Private (a budget other than privacy.None), it is Design A of the
// non-stationary spec (our design; no published central-DP sliding-window
// bandit was found): the stream x_t = r_t e_{A_t} in R^K (r_t normalised
// to [0, 1]) goes to one K-dimensional continual counter M (mechanism.
// NewCounter, the smooth binary mechanism by default), which releases the
// prefix sums P(t); the window sums are W = P(t) - P(t - tau) (0 for
// t - tau <= 0), and the index gains the width z sqrt(V_W)/N_i, with V_W = (sqrt(Var(t)) +
// sqrt(Var(t - tau)))^2 bounding the variance of a coordinate of the
// difference whatever the correlation of the two releases, and z =
// sqrt(2 ln(2 K T^2)) a Gaussian union bound over arms and steps.
//
// In reward units the private index is Lo + B W_i/N_i + c_t(tau, i) +
// B z sqrt(V_W)/N_i.
//
// Privacy proof (prefix-sum differences of one continual counter). Two
// neighbouring reward tables differ in the rewards of one step s (one
// user). Fix the counter's releases before step s: the decisions up to s
// are the same under both tables, so the inputs x_1, ..., x_{s-1} are too,
// and x_s differs in coordinate A_s only, by at most 1 (rewards are
// normalised to [0, 1] and clipped): L2 sensitivity 1. Every later input
// x_u is the same function of the releases before u under both tables.
// The counter (the smooth binary mechanism of Andersson and Pagh) releases
// nodes: each node's noisy sum is drawn once, when it is first read, after
// all its inputs are in, with Gaussian noise of sigma calibrated so that
// k = d/2 nodes of sensitivity 1 together meet rho (mechanism.NewSmooth);
// x_s enters exactly k nodes. So the sequence of node releases is an
// adaptive composition of Gaussian mechanisms in which, given the earlier
// releases, a node's sum differs between the tables only if it holds x_s,
// by at most 1: its zCDP cost is at most 1/(2 sigma^2), 0 for the other
// nodes, and the composition (Bun and Steinke 2016, Lemma 2.3, which
// allows each mechanism to be chosen from the earlier outputs) costs at
// most k/(2 sigma^2) = rho. The prefix sums P(t) are sums of node
// releases; the window sums P(t) - P(t - tau), the indices and the
// decisions are functions of them, of the counts N_i (functions of the
// earlier decisions) and of data-independent tie-breaking: post-processing.
// The whole run therefore meets rho once, not once per arm or per window;
// an (eps, delta) or Renyi budget is met through its rho
// (privacy.Budget). On a noise source that takes exact statistics
// (noise.Secure) the node sums are kept exactly, so the value released is
// the function of the data the sensitivity is for. The counts are not
// noised: they hold nothing beyond the decisions.
type SWUCB struct {
	bounds  mechanism.Bounds
	k       int
	tau     int64
	xi, z   float64
	t       int64
	acts    []int     // the action of each of the last tau steps, by step mod tau
	rews    []float64 // their normalised rewards (non-private only)
	n       []int64   // window counts
	w       []float64 // window sums (non-private)
	counter mechanism.Counter
	prefix  [][]float64 // the releases P(s) of the last tau+1 steps, by s mod (tau+1)
	x       []float64
}

// NewSWUCB returns sliding-window UCB with window tau >= 1 and
// exploration xi > 0, non-private for privacy.None() and otherwise
// private on the continual counter of the kind (for a budget the Gaussian
// mechanism can meet, and a known horizon).
func NewSWUCB(s bandit.Setting, b privacy.Budget, tau int64, xi float64, kind mechanism.CounterKind) (*SWUCB, error) {
	if err := checkSetting(s); err != nil {
		return nil, err
	}
	if tau < 1 || !(xi > 0) || math.IsInf(xi, 1) {
		return nil, inputf("sliding-window UCB needs tau >= 1 and a finite xi > 0, got %d and %v", tau, xi)
	}
	if s.Horizon > 0 && tau > s.Horizon {
		tau = s.Horizon // the same policy: the window never slides
	}
	p := &SWUCB{bounds: s.Bounds, k: s.Arms, tau: tau, xi: xi,
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

// index returns arm a's index X_t(tau, a) + c_t(tau, a) in reward units
// (plus, when private, B z sqrt(V_W)/N), for the step after p.t, or +Inf
// for an arm of window count 0.
func (p *SWUCB) index(a int) float64 {
	n := p.n[a]
	if n == 0 {
		return math.Inf(1)
	}
	nf, B := float64(n), p.bounds.Width()
	w := p.w[a]
	if p.counter != nil {
		w = p.release(p.t)[a]
		if then := p.release(p.t - p.tau); then != nil {
			w -= then[a]
		}
	}
	pad := B * math.Sqrt(p.xi*math.Log(float64(min(p.t+1, p.tau)))/nf)
	return p.bounds.Lo + B*w/nf + pad + B*p.width()/nf
}

// Next returns the arm of highest index, for one step.
func (p *SWUCB) Next() bandit.Plan {
	return bandit.Plan{Arm: argmaxIndex(p.k, p.index), Count: 1}
}

// argmaxIndex returns the first arm of highest index (the first of
// infinite index, if any).
func argmaxIndex(k int, index func(int) float64) int {
	best, bestIdx := 0, math.Inf(-1)
	for a := range k {
		if idx := index(a); idx > bestIdx {
			best, bestIdx = a, idx
			if math.IsInf(idx, 1) {
				break
			}
		}
	}
	return best
}

// GMWindow returns Garivier and Moulines' window for horizon T and
// Upsilon_T = breakpoints >= 1 breakpoints, rewards in [0, B]:
// tau = ceil(2B sqrt(T ln T / Upsilon_T)) (their Theorem 2 tuning, as the
// spec recalls it), at least 1 and at most T.
func GMWindow(T int64, breakpoints int, B float64) (int64, error) {
	if T < 2 || breakpoints < 1 || !(B > 0) || math.IsInf(B, 1) {
		return 0, inputf("the window's tuning needs T >= 2, breakpoints >= 1 and a finite B > 0, got %d, %d and %v", T, breakpoints, B)
	}
	tau := math.Ceil(2 * B * math.Sqrt(float64(T)*math.Log(float64(T))/float64(breakpoints)))
	return int64(min(max(tau, 1), float64(T))), nil
}

// GMDiscount returns Garivier and Moulines' discount for horizon T and
// Upsilon_T = breakpoints breakpoints, rewards in [0, B]:
// gamma = 1 - sqrt(Upsilon_T / T) / (4B) (their Theorem 1 tuning, as the
// spec recalls it); it must lie in (0, 1).
func GMDiscount(T int64, breakpoints int, B float64) (float64, error) {
	if T < 1 || breakpoints < 1 || !(B > 0) || math.IsInf(B, 1) {
		return 0, inputf("the discount's tuning needs T >= 1, breakpoints >= 1 and a finite B > 0, got %d, %d and %v", T, breakpoints, B)
	}
	g := 1 - math.Sqrt(float64(breakpoints)/float64(T))/(4*B)
	if !(g > 0 && g < 1) {
		return 0, inputf("the discount's tuning 1 - sqrt(%d/%d)/(4 %v) = %v is not in (0, 1)", breakpoints, T, B, g)
	}
	return g, nil
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
