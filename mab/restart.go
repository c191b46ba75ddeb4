package mab

import (
	"math"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mechanism"
)

// DUCB is discounted UCB (Garivier and Moulines, ALT 2011), in the form
// of Lattimore and Szepesvari, Bandit Algorithms, section 31.3: with
// discount gamma in (0, 1) and rewards normalised to [0, 1], discounted
// counts N_i = sum_s gamma^(t-s) 1{A_s = i} and sums S_i likewise; play
// each arm once, then the arm maximising
//
//	S_i/N_i + sqrt(alpha ln(sum_j N_j)/N_i).
//
// Non-private; one step per plan.
type DUCB struct {
	bounds       mechanism.Bounds
	gamma, alpha float64
	n, s         []float64
	played       []bool
}

// NewDUCB returns discounted UCB.
func NewDUCB(s bandit.Setting, gamma, alpha float64) (*DUCB, error) {
	if err := checkSetting(s); err != nil {
		return nil, err
	}
	if !(gamma > 0 && gamma < 1) || !(alpha > 0) || math.IsInf(alpha, 1) {
		return nil, inputf("discounted UCB needs gamma in (0, 1) and a finite alpha > 0, got %v and %v", gamma, alpha)
	}
	return &DUCB{bounds: s.Bounds, gamma: gamma, alpha: alpha,
		n: make([]float64, s.Arms), s: make([]float64, s.Arms), played: make([]bool, s.Arms)}, nil
}

// Next returns the arm of highest index, for one step.
func (p *DUCB) Next() bandit.Plan {
	tot := 0.0
	for a, n := range p.n {
		if !p.played[a] {
			return bandit.Plan{Arm: a, Count: 1}
		}
		tot += n
	}
	l := p.alpha * math.Log(math.Max(tot, 1))
	best, bestIdx := 0, math.Inf(-1)
	for a, n := range p.n {
		if idx := p.s[a]/n + math.Sqrt(l/n); idx > bestIdx {
			best, bestIdx = a, idx
		}
	}
	return bandit.Plan{Arm: best, Count: 1}
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
// budget b (for instance AdaC-UCB built with b). Two neighbouring reward
// tables differ in one reward, of one step, which lies in exactly one
// block j. The decisions of the other blocks are computed from their own
// rewards and noise only (each block's policy is built afresh and never
// sees another block's rewards), so they have the same law under both
// tables, and block j's decisions, given them, are those of a b-private
// policy on tables that differ in one reward. Hence the whole sequence of
// decisions meets b, not (T/H) b. The block boundaries must not depend on
// the data: H is a parameter, never adapted.
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
