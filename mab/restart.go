package mab

import (
	"math"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mechanism"
)

// DUCB is discounted UCB (Garivier and Moulines, ALT 2011, section 3.1,
// arXiv 0805.3415; first proposed by Kocsis and Szepesvari, 2006): with
// rewards in [0, B] (shifted by the declared range's Lo, B = Hi - Lo) and
// discount gamma in (0, 1), the discounted counts and means after t steps
//
//	N_t(gamma, i) = sum_{s<=t} gamma^(t-s) 1{I_s = i},
//	X_t(gamma, i) = sum_{s<=t} gamma^(t-s) X_s 1{I_s = i} / N_t(gamma, i),
//	n_t(gamma) = sum_i N_t(gamma, i);
//
// play each arm once, then the arm maximising
//
//	X_t(gamma, i) + c_t(gamma, i),  c_t(gamma, i) = 2B sqrt(xi ln n_t(gamma) / N_t(gamma, i)),
//
// with xi > 1/2 in their theorem (Lattimore and Szepesvari's alpha =
// 4 xi B^2). The theorem's discount is gamma = 1 - sqrt(Upsilon_T/T)/(4B)
// (GMDiscount). The paper's text was not obtained here: the padding and
// the tuning are the spec's [REC], matched by an independent report of
// the paper and by SMPyBandits' docstring (docs/algorithms.md).
// Non-private; one step per plan.
type DUCB struct {
	bounds    mechanism.Bounds
	gamma, xi float64
	n, s      []float64
	played    []bool
}

// NewDUCB returns discounted UCB with discount gamma in (0, 1) and
// exploration xi > 0.
func NewDUCB(s bandit.Setting, gamma, xi float64) (*DUCB, error) {
	if err := checkSetting(s); err != nil {
		return nil, err
	}
	if !(gamma > 0 && gamma < 1) || !(xi > 0) || math.IsInf(xi, 1) {
		return nil, inputf("discounted UCB needs gamma in (0, 1) and a finite xi > 0, got %v and %v", gamma, xi)
	}
	return &DUCB{bounds: s.Bounds, gamma: gamma, xi: xi,
		n: make([]float64, s.Arms), s: make([]float64, s.Arms), played: make([]bool, s.Arms)}, nil
}

// index returns arm a's index X_t(gamma, a) + c_t(gamma, a) in reward
// units, +Inf for an arm not played yet or whose discounted count has
// underflowed to 0 (its padding is then infinite).
func (p *DUCB) index(a int) float64 {
	if !p.played[a] || p.n[a] == 0 {
		return math.Inf(1)
	}
	tot := 0.0
	for _, n := range p.n {
		tot += n
	}
	B, n := p.bounds.Width(), p.n[a]
	return p.bounds.Lo + B*p.s[a]/n + 2*B*math.Sqrt(p.xi*math.Log(math.Max(tot, 1))/n)
}

// Next returns the arm of highest index, for one step.
func (p *DUCB) Next() bandit.Plan {
	return bandit.Plan{Arm: argmaxIndex(len(p.n), p.index), Count: 1}
}

// Update discounts every arm and records one pull.
func (p *DUCB) Update(f bandit.Feedback) error {
	if f.Count == 0 {
		return nil
	}
	if f.Arm < 0 || f.Arm >= len(p.n) || f.Count != 1 {
		return inputf("discounted UCB takes one pull of an arm of %d at a time, got %d pulls of arm %d", len(p.n), f.Count, f.Arm)
	}
	r, err := p.bounds.Sum(1, f.Sum, f.Samples)
	if err != nil {
		return err
	}
	for a := range p.n {
		p.n[a] *= p.gamma
		p.s[a] *= p.gamma
	}
	p.n[f.Arm]++
	p.s[f.Arm] += min(max((r-p.bounds.Lo)/p.bounds.Width(), 0), 1)
	p.played[f.Arm] = true
	return nil
}

// Restart runs a fresh policy in each block of H steps (Design B of the
// non-stationary spec, our design): the blocks [1, H], [H+1, 2H], ... are
// fixed before the run, and the policy of a block is built when the block
// starts (with the setting's horizon set to H) and sees that block's
// rewards only; a plan is cut at the block's end.
//
// Privacy proof (parallel composition). Let each block's policy meet a
// budget b (AdaC-UCB built with b: rho-zCDP). Two neighbouring reward
// tables D, D' differ in the rewards of one step s (one user), which lies
// in exactly one block j, fixed before the run. Block i's decisions o_i
// are a randomised function of block i's rows D_i and of fresh randomness
// only: its policy is built afresh when the block starts, takes no input
// from another block's decisions or rewards, and its noise draws are
// independent of every other block's (the position of a draw in a
// seeded stream does not change its law). So the law of the whole run
// factorises, P(o_1, ..., o_m | D) = prod_i P_i(o_i | D_i), and for
// every alpha > 1 the Renyi divergence between the runs on D and D' is
// that of block j alone, D_alpha(P_j(. | D_j) || P_j(. | D'_j)) <= rho
// alpha: the run meets b, not (T/H) b. The same factorisation gives the
// guarantee for pure eps-DP (the likelihood ratio is block j's) and for
// (eps, delta). The block boundaries must not depend on the data: H is a
// parameter, never adapted; a change detector that restarted blocks from
// the data would have to be private itself and its cost added.
type Restart struct {
	build func(bandit.Setting) (bandit.Policy, error)
	s     bandit.Setting
	h     int64
	t     int64 // steps played
	cur   bandit.Policy
}

// NewRestart returns the restart policy with blocks of h >= 1 steps, each
// played by a policy of build.
func NewRestart(s bandit.Setting, h int64, build func(bandit.Setting) (bandit.Policy, error)) (*Restart, error) {
	if err := checkSetting(s); err != nil {
		return nil, err
	}
	if h < 1 {
		return nil, inputf("restarts need a block of at least 1 step, got %d", h)
	}
	inner := s
	inner.Horizon = h
	cur, err := build(inner)
	if err != nil {
		return nil, err
	}
	return &Restart{build: build, s: inner, h: h, cur: cur}, nil
}

// Next returns the block's policy's plan, cut at the block's end.
func (p *Restart) Next() bandit.Plan {
	pl := p.cur.Next()
	pl.Count = min(pl.Count, p.h-p.t%p.h)
	return pl
}

// Update passes the feedback to the block's policy and starts a new
// block when this one is complete.
func (p *Restart) Update(f bandit.Feedback) error {
	if f.Count > p.h-p.t%p.h {
		return inputf("feedback for %d pulls crosses the block's end", f.Count)
	}
	if err := p.cur.Update(f); err != nil {
		return err
	}
	p.t += f.Count
	if p.t%p.h == 0 && f.Count > 0 {
		cur, err := p.build(p.s)
		if err != nil {
			return err
		}
		p.cur = cur
	}
	return nil
}

// Blocks returns the number of blocks started.
func (p *Restart) Blocks() int64 { return p.t/p.h + 1 }

// NeedsSamples forwards the block policy's wish for the rewards.
func (p *Restart) NeedsSamples() bool {
	su, ok := p.cur.(bandit.SampleUser)
	return ok && su.NeedsSamples()
}
