package mab

import (
	"errors"
	"slices"

	"github.com/dpbandit/dpbandit/internal/state"
	"github.com/dpbandit/dpbandit/mechanism"
)

// The policies of this package save and restore what changes as they run
// (encoding.BinaryMarshaler and BinaryUnmarshaler), for a service's
// snapshots: UnmarshalBinary restores into a policy built with the same
// Setting and parameters, which the state never carries.

// countsState is the state of counts.
type countsState struct {
	N []int64
	S []float64
	T int64
}

func (c *counts) state() countsState { return countsState{c.n, c.s, c.t} }

func (c *counts) restore(st countsState) error {
	if err := state.Copy(c.n, st.N, "counts"); err != nil {
		return err
	}
	c.t = st.T
	return state.Copy(c.s, st.S, "sums")
}

// MarshalBinary returns the counts and sums.
func (c *counts) MarshalBinary() ([]byte, error) { return state.Encode(c.state()) }

// UnmarshalBinary restores what MarshalBinary returned.
func (c *counts) UnmarshalBinary(b []byte) error {
	var st countsState
	if err := state.Decode(b, &st); err != nil {
		return err
	}
	return c.restore(st)
}

// doublingState is the state of doubling.
type doublingState struct {
	Count, Last         []int64
	Mean, Scale         []float64
	T, Ep, Target, Done int64
	Arm                 int
	Sum                 mechanism.SumsState
	Exact               []mechanism.SumsState // the broken variant's
}

// MarshalBinary returns the episodes' state: counts, the released means
// and the current episode's sum. The broken variant, which keeps every
// episode's exact sums to re-release them, has no snapshot.
func (p *doubling) MarshalBinary() ([]byte, error) {
	if p.redraw {
		return nil, inputf("the broken AdaC-UCB keeps exact sums and has no snapshot")
	}
	st := doublingState{Count: p.count, Last: p.last, Mean: p.mean, Scale: p.scale, T: p.t, Ep: p.ep,
		Target: p.target, Done: p.done, Arm: p.arm, Sum: p.sum.State()}
	return state.Encode(st)
}

// UnmarshalBinary restores what MarshalBinary returned.
func (p *doubling) UnmarshalBinary(b []byte) error {
	var st doublingState
	if err := state.Decode(b, &st); err != nil {
		return err
	}
	if err := errors.Join(state.Copy(p.count, st.Count, "counts"), state.Copy(p.last, st.Last, "episodes"),
		state.Copy(p.mean, st.Mean, "means"), state.Copy(p.scale, st.Scale, "scales"), p.sum.SetState(st.Sum)); err != nil {
		return err
	}
	if st.Arm < -1 || st.Arm >= len(p.count) {
		return inputf("%w: arm %d of %d", state.ErrMismatch, st.Arm, len(p.count))
	}
	if st.Arm >= 0 && (st.Done < 0 || st.Done >= st.Target) || slices.Min(st.Count) < 0 || slices.Min(st.Last) < 0 {
		return inputf("%w: %d of %d pulls done, counts %v, episodes %v", state.ErrMismatch, st.Done, st.Target, st.Count, st.Last)
	}
	if st.Arm < 0 {
		// No episode is in progress: no sum (one released is dropped).
		p.sum.Reset()
	}
	p.t, p.ep, p.target, p.done, p.arm = st.T, st.Ep, st.Target, st.Done, st.Arm
	return nil
}

// dpseState is the state of DPSE.
type dpseState struct {
	Active     []int
	Sums       mechanism.SumsState
	Epoch, Pos int
	REpoch     float64
	R, Done, T int64
	Tau        int64
}

// MarshalBinary returns the epoch's state: the surviving arms and their
// sums.
func (p *DPSE) MarshalBinary() ([]byte, error) {
	return state.Encode(dpseState{Active: p.active, Sums: p.sums.State(), Epoch: p.epoch, Pos: p.pos, REpoch: p.rEpoch, R: p.r, Done: p.done, T: p.t, Tau: p.tau})
}

// UnmarshalBinary restores what MarshalBinary returned.
func (p *DPSE) UnmarshalBinary(b []byte) error {
	var st dpseState
	if err := state.Decode(b, &st); err != nil {
		return err
	}
	if err := p.sums.SetState(st.Sums); err != nil {
		return err
	}
	if len(st.Active) == 0 || st.Pos < 0 || st.Pos >= len(st.Active) {
		return inputf("%w: %d active arms, position %d", state.ErrMismatch, len(st.Active), st.Pos)
	}
	for i, a := range st.Active {
		// Strictly increasing: an arm listed twice would have its
		// epoch mean released twice.
		if a < 0 || a >= len(p.sums.F) || i > 0 && a <= st.Active[i-1] {
			return inputf("%w: active arms %v of %d", state.ErrMismatch, st.Active, len(p.sums.F))
		}
	}
	if st.Done < 0 || st.Done > st.R {
		return inputf("%w: %d of %d pulls done in the epoch", state.ErrMismatch, st.Done, st.R)
	}
	p.active, p.epoch, p.pos, p.rEpoch, p.r, p.done, p.t, p.tau = st.Active, st.Epoch, st.Pos, st.REpoch, st.R, st.Done, st.T, st.Tau
	return nil
}
