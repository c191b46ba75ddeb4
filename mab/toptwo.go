package mab

import (
	"math"
	"math/rand/v2"

	"github.com/dpbandit/dpbandit/bandit"
)

// TTUCB is the non-private Top Two baseline of AdaP-TT's experiments
// (Azize, Jourdan, Al Marjani and Basu, NeurIPS 2023), as the authors
// coded it (github.com/achraf-azize/DP-BAI, commit c8d8be2,
// algorithms/toptwo_ucb.py), for best-arm identification with fixed
// confidence. Rewards are normalised to [0,1] and every sample is kept.
// Every arm is pulled once first; then, at each step, the leader B is
// the empirical best arm (argmax of the means, despite the name), the
// challenger is
//
//	argmin_{j != B} (mu^_B - mu^_j + kappa(t)) / sqrt(1/N_B + 1/N_j),  kappa(t) = ln(1+t)^(-1/4)
//
// (TTUCBKappa, t the samples so far), and the leader is played with
// probability beta, else the challenger. After every pull past the first
// K the rule stops when, for every j != B,
//
//	(mu^_B - mu^_j)^2 / (2 (1/N_B + 1/N_j)) >= ln((1 + ln t)/delta)
//
// (TTUCBThreshold, the code's emp_c), and recommends argmax of the means.
type TTUCB struct {
	counts
	delta, beta float64
	r           *rand.Rand
	steps
}

// NewTTUCB returns TT-UCB with risk delta in (0,1) and leader probability
// beta in (0,1). The setting's Rand draws the leader-or-challenger coin.
func NewTTUCB(s bandit.Setting, delta, beta float64) (*TTUCB, error) {
	if err := checkTopTwo(s, delta, beta); err != nil {
		return nil, err
	}
	c, err := newCounts(s)
	if err != nil {
		return nil, err
	}
	return &TTUCB{counts: c, delta: delta, beta: beta, r: s.Rand, steps: steps{horizon: s.Horizon}}, nil
}

// TTUCBKappa returns kappa(t) = ln(1+t)^(-1/4), the slack of TT-UCB's
// challenger after t samples.
func TTUCBKappa(t int64) float64 { return math.Pow(math.Log1p(float64(t)), -0.25) }

// TTUCBThreshold returns TT-UCB's stopping threshold ln((1 + ln t)/delta)
// after t samples.
func TTUCBThreshold(t int64, delta float64) float64 {
	return math.Log((1 + math.Log(float64(t))) / delta)
}

// means returns the empirical means (normalised).
func (p *TTUCB) means() []float64 {
	mu := make([]float64, len(p.n))
	for a, n := range p.n {
		mu[a] = p.s[a] / float64(n)
	}
	return mu
}

// Next returns the next single pull (every arm once first), or the
// recommended arm for the rest of the horizon after the stop. The step's
// coin is drawn once: Next returns the same plan until Update.
func (p *TTUCB) Next() bandit.Plan {
	return p.next(p.t, func() int {
		if a := p.unplayed(); a >= 0 {
			return a
		}
		mu := p.means()
		b := argmax(mu)
		if p.r.Float64() <= p.beta {
			return b
		}
		return challenger(mu, b, func(j int) float64 { return float64(p.n[j]) }, TTUCBKappa(p.t))
	})
}

// Update records the pull and checks the stopping rule.
func (p *TTUCB) Update(f bandit.Feedback) error {
	if err := p.Next().Check(f); err != nil {
		return inputf("%w", err)
	}
	stopped := p.done
	s, err := p.add(f)
	if err != nil || stopped {
		return err
	}
	p.ready = false
	p.s[f.Arm] += s
	if p.unplayed() >= 0 || p.t <= int64(len(p.n)) {
		return nil
	}
	mu := p.means()
	b := argmax(mu)
	c := TTUCBThreshold(p.t, p.delta)
	for j, v := range mu {
		d := mu[b] - v
		if j != b && 0.5*d*d/(1/float64(p.n[b])+1/float64(p.n[j])) < c {
			return nil
		}
	}
	p.decide(b, p.t, p.t)
	return nil
}
