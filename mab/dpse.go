package mab

import (
	"math"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/privacy"
)

// DPSE is DP Successive Elimination (Sajed and Sheffet 2019), Algorithm 3
// of the survey of Chari (seed 000, Section 4), for rewards in a declared
// range of width w.
//
// It runs in epochs e = 1, 2, ... over the set S of surviving arms. Epoch
// e sets Delta_e = 2^-e and
//
//	R_e = max(32 ln(8|S|e^2/beta)/Delta_e^2, 8 ln(4|S|e^2/beta)/(eps Delta_e)) + 1,
//
// pulls every arm of S r = ceil(R_e) times (the loop of lines 9-14), forgets
// all earlier rewards (line 6), releases each arm's epoch mean once with
// Laplace noise Lap(w/(eps r)) (line 19) and removes every arm j with
//
//	mu_max - mu_j > 2 h_e + 2 c_e,  h_e = w sqrt(ln(8|S|e^2/beta)/(2 R_e)),
//	                                c_e = w ln(4|S|e^2/beta)/(R_e eps)
//
// (line 23). When one arm remains it is played to the horizon. Each reward
// enters one release of sensitivity w/r, so the policy is eps-DP. A rho-zCDP
// budget is met with eps = sqrt(2 rho); the Laplace scale and eps come from
// package privacy, and c_e is computed from the scale actually used. With
// a non-private budget there is no noise, no eps term in R_e, and c_e = 0:
// plain successive elimination.
//
// Batched: an epoch is one plan per surviving arm, played one arm after the
// other instead of round-robin. The decisions are the same (each arm's
// rewards are the same i.i.d. draws), only the order of pulls inside an
// epoch differs.
type DPSE struct {
	bounds  mechanism.Bounds
	budget  privacy.Budget
	beta    float64
	horizon int64
	eps     float64 // eps of the Laplace mechanism; +Inf when non-private
	mech    func(n int64) (mechanism.Laplace, error)

	active []int          // S
	sums   mechanism.Sums // epoch reward sums, by arm (exact too on exact noise)
	epoch  int
	rEpoch float64 // R_e
	r      int64   // ceil(R_e): pulls per arm in this epoch
	pos    int     // index in active of the arm being played
	done   int64   // pulls of active[pos] so far in this epoch
	t      int64
	tau    int64 // pulls when one arm was left (0 before)
}

// NewDPSE returns DP-SE with confidence beta in (0,1) for a pure eps-DP or
// rho-zCDP budget (privacy.None() for non-private successive elimination).
//
// Private policies rely on Feedback's privacy obligation: report rewards
// one at a time or with Samples, or sums of rewards already clipped to
// the declared range (see bandit.Feedback).
func NewDPSE(s bandit.Setting, b privacy.Budget, beta float64) (*DPSE, error) {
	if err := checkSetting(s); err != nil {
		return nil, err
	}
	if !(beta > 0 && beta < 1) {
		return nil, inputf("beta must lie in (0,1), got %v", beta)
	}
	p := &DPSE{bounds: s.Bounds, budget: b, beta: beta, horizon: s.Horizon, eps: math.Inf(1),
		sums: mechanism.NewSums(s.Arms, b.IsPrivate() && mechanism.ExactFor(s.Noise))}
	var err error
	if p.eps, p.mech, err = laplaceMeans(s, b); err != nil {
		return nil, err
	}
	for a := range s.Arms {
		p.active = append(p.active, a)
	}
	p.startEpoch()
	return p, nil
}

// DPSEEpoch returns the constants of epoch e of DP-SE (seed 000,
// Algorithm 3) with s surviving arms, confidence beta, privacy eps (+Inf
// when non-private) and rewards of range width w: the epoch length R_e
// (each arm is pulled ceil(R_e) times) and the elimination margins
// h_e = w sqrt(ln(8 s e^2/beta)/(2 R_e)) and c_e = w ln(4 s e^2/beta)/(R_e eps)
// (0 when non-private). An arm is eliminated when its noisy mean is more
// than 2 h_e + 2 c_e below the best.
func DPSEEpoch(e, s int, beta, eps, w float64) (rEpoch, h, c float64) {
	ef, sf := float64(e), float64(s)
	l8, l4 := math.Log(8*sf*ef*ef/beta), math.Log(4*sf*ef*ef/beta)
	delta := math.Ldexp(1, -e)
	private := !math.IsInf(eps, 1)
	rEpoch = 32 * l8 / (delta * delta)
	if private {
		rEpoch = math.Max(rEpoch, 8*l4/(eps*delta))
	}
	rEpoch++
	h = w * math.Sqrt(l8/(2*rEpoch))
	if private {
		c = w * l4 / (rEpoch * eps)
	}
	return rEpoch, h, c
}

func (p *DPSE) startEpoch() {
	p.epoch++
	p.sums.Reset()
	p.rEpoch, _, _ = DPSEEpoch(p.epoch, len(p.active), p.beta, p.eps, p.bounds.Width())
	// An epoch longer than the horizon never ends: capping its length at
	// T (2^62 when T is unknown) changes no decision and keeps the count
	// finite (R_e overflows for a beta near 0).
	limit := float64(int64(1) << 62)
	if p.horizon > 0 {
		limit = float64(p.horizon)
	}
	p.r = int64(math.Min(math.Ceil(p.rEpoch), limit))
	p.pos, p.done = 0, 0
}

// Next returns the rest of the current arm's pulls in this epoch, or the
// last arm for the rest of the horizon.
func (p *DPSE) Next() bandit.Plan {
	if len(p.active) == 1 {
		return bandit.Rest(p.active[0], p.horizon, p.t)
	}
	return bandit.Plan{Arm: p.active[p.pos], Count: p.r - p.done}
}

// Update records rewards; at the end of an epoch it releases the noisy
// means and eliminates arms.
func (p *DPSE) Update(f bandit.Feedback) error {
	s, err := p.Next().Sum(f, p.bounds)
	if err != nil {
		return inputf("%w", err)
	}
	p.t += f.Count
	if len(p.active) == 1 {
		return nil
	}
	p.sums.Add(f.Arm, s)
	p.done += f.Count
	if p.done < p.r {
		return nil
	}
	p.pos, p.done = p.pos+1, 0
	if p.pos < len(p.active) {
		return nil
	}
	return p.eliminate()
}

// eliminate ends the epoch (lines 16-26). eps is the one the Laplace
// mechanism is calibrated to (NewDPSE reads it back from the scale).
func (p *DPSE) eliminate() error {
	_, h, c := DPSEEpoch(p.epoch, len(p.active), p.beta, p.eps, p.bounds.Width())
	mu := make([]float64, len(p.active))
	for i, a := range p.active {
		mu[i] = p.sums.F[a] / float64(p.r)
		if p.budget.IsPrivate() {
			m, err := p.mech(p.r)
			if err != nil {
				return err
			}
			r, err := m.ReleaseSums(p.sums.At(a), p.r)
			if err != nil {
				return err
			}
			mu[i] = r[0]
		}
	}
	best := math.Inf(-1)
	for _, m := range mu {
		best = math.Max(best, m)
	}
	kept := p.active[:0]
	for i, a := range p.active {
		if best-mu[i] <= 2*h+2*c {
			kept = append(kept, a)
		}
	}
	p.active = kept
	if len(kept) == 1 {
		p.tau = p.t
	}
	p.startEpoch()
	return nil
}

// Active returns the arms not yet eliminated.
func (p *DPSE) Active() []int { return append([]int(nil), p.active...) }

// Episodes returns the number of epochs started.
func (p *DPSE) Episodes() int64 { return int64(p.epoch) }

// laplaceMeans calibrates, once, the Laplace mechanism of a policy that
// releases means of n rewards (DP-SE's epochs, AdaP-TT's phases): it
// returns the eps the mechanism is calibrated to (+Inf for a
// non-private budget) and the mechanism at a mean of n rewards.
func laplaceMeans(s bandit.Setting, b privacy.Budget) (float64, func(n int64) (mechanism.Laplace, error), error) {
	cal, err := calibrated(s, b, mechanism.CalibrateLaplace)
	if err != nil {
		return 0, nil, err
	}
	eps := math.Inf(1)
	if b.IsPrivate() {
		m, _ := cal.At(1)
		eps = 1 / m.Scale()
	}
	return eps, func(n int64) (mechanism.Laplace, error) { return cal.At(s.Bounds.MeanSensitivity(n)) }, nil
}
