package mab

import (
	"errors"
	"math"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/internal/state"
	"github.com/dpbandit/dpbandit/mechanism"
)

// stepsState is the state of steps: the pending pull (its coin already
// drawn) and the decision.
type stepsState struct {
	Plan               bandit.Plan
	Ready, Done        bool
	Arm                int
	Tau, Phased, Pulls int64
}

func (s *steps) stepState(pulls int64) stepsState {
	return stepsState{s.plan, s.ready, s.done, s.arm, s.tau, s.phased, pulls}
}

// restoreSteps checks st against k arms and sets it.
func (s *steps) restoreSteps(st stepsState, k int) error {
	if st.Ready && (st.Plan.Arm < 0 || st.Plan.Arm >= k || st.Plan.Count != 1) || st.Done && (st.Arm < 0 || st.Arm >= k) ||
		st.Pulls < 0 || st.Done && (st.Tau < 1 || st.Tau > st.Pulls || st.Phased < 0 || st.Phased > st.Tau) {
		return inputf("%w: pending %+v (%v), decision %v arm %d at %d of %d pulls", state.ErrMismatch, st.Plan, st.Ready, st.Done, st.Arm, st.Tau, st.Pulls)
	}
	s.plan, s.ready, s.done, s.arm, s.tau, s.phased = st.Plan, st.Ready, st.Done, st.Arm, st.Tau, st.Phased
	return nil
}

// adapTTState is the state of AdaPTT.
type adapTTState struct {
	Counts, Last, PhN []int64
	Values            []float64
	PhSums            mechanism.SumsState
	Phases            int64
	Leader            int
	Steps             stepsState
}

// MarshalBinary returns AdaP-TT's state: counts, the released means, the
// open phases' counts and sums, the pending pull and the decision.
func (p *AdaPTT) MarshalBinary() ([]byte, error) {
	if p.redraw != nil {
		return nil, inputf("the broken AdaP-TT keeps exact means and has no snapshot")
	}
	return state.Encode(adapTTState{Counts: p.counts, Last: p.last, PhN: p.phN, Values: p.values, PhSums: p.phSums.State(),
		Phases: p.phases, Leader: p.leader, Steps: p.stepState(p.t)})
}

// UnmarshalBinary restores what MarshalBinary returned. A state no run
// can reach (a phase that is not a doubling, an open phase past its
// close, a non-finite mean) is refused with state.ErrMismatch.
func (p *AdaPTT) UnmarshalBinary(b []byte) error {
	var st adapTTState
	if err := state.Decode(b, &st); err != nil {
		return err
	}
	k := len(p.counts)
	if err := errors.Join(state.Copy(p.counts, st.Counts, "counts"), state.Copy(p.last, st.Last, "phases"),
		state.Copy(p.phN, st.PhN, "open phases"), state.Copy(p.values, st.Values, "means"), p.phSums.SetState(st.PhSums)); err != nil {
		return err
	}
	var phases int64
	for a, n := range p.counts {
		// Phases of sizes 1, 1, 2, 4, ...: N = 2^(ph-1), the last phase
		// N/2 (1 after the first), the open one short of N.
		ph := int64(0)
		if n > 0 {
			ph = int64(math.Ilogb(float64(n))) + 1
		}
		want := max(n/2, min(n, 1))
		if n < 0 || n&(n-1) != 0 || p.last[a] != want || p.phN[a] < 0 || p.phN[a] >= max(n, 1) || p.values[a]-p.values[a] != 0 {
			return inputf("%w: arm %d: %d samples, last phase %d, open %d, mean %v", state.ErrMismatch, a, n, p.last[a], p.phN[a], p.values[a])
		}
		phases += ph
	}
	if phases != st.Phases || st.Leader < 0 || st.Leader >= k || !st.Steps.Done && st.Steps.Pulls != sum64(p.counts)+sum64(p.phN) {
		return inputf("%w: %d phases (the counts make %d), leader %d, %d pulls", state.ErrMismatch, st.Phases, phases, st.Leader, st.Steps.Pulls)
	}
	if err := p.restoreSteps(st.Steps, k); err != nil {
		return err
	}
	p.phases, p.leader, p.t = st.Phases, st.Leader, st.Steps.Pulls
	return nil
}

// Unreleased returns the rewards of the open phases, which no release
// covers yet (bandit.Forgetter); false for a non-private budget.
func (p *AdaPTT) Unreleased() (int64, bool) { return sum64(p.phN), p.budget.IsPrivate() }

// ttUCBState is the state of TTUCB.
type ttUCBState struct {
	Counts countsState
	Steps  stepsState
}

// MarshalBinary returns TT-UCB's counts and sums, the pending pull and
// the decision.
func (p *TTUCB) MarshalBinary() ([]byte, error) {
	return state.Encode(ttUCBState{p.counts.state(), p.stepState(p.t)})
}

// UnmarshalBinary restores what MarshalBinary returned.
func (p *TTUCB) UnmarshalBinary(b []byte) error {
	var st ttUCBState
	if err := state.Decode(b, &st); err != nil {
		return err
	}
	if err := p.counts.restore(st.Counts); err != nil {
		return err
	}
	return p.restoreSteps(st.Steps, len(p.n))
}
