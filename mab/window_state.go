package mab

import (
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/internal/state"
	"github.com/dpbandit/dpbandit/mechanism"
)

// swucbState is the state of SWUCB.
type swucbState struct {
	T       int64
	Acts    []int
	Rews, W []float64
	N       []int64
	Prefix  [][]float64
	Counter *mechanism.SmoothState
}

// MarshalBinary returns the window and, when private, the counter's
// state and its last tau + 1 releases (the smooth counter only).
func (p *SWUCB) MarshalBinary() ([]byte, error) {
	st := swucbState{T: p.t, Acts: p.acts, Rews: p.rews, W: p.w, N: p.n, Prefix: p.prefix}
	if p.counter != nil {
		c, err := mechanism.CounterState(p.counter)
		if err != nil {
			return nil, err
		}
		st.Counter = &c
	}
	return state.Encode(st)
}

// UnmarshalBinary restores what MarshalBinary returned.
func (p *SWUCB) UnmarshalBinary(b []byte) error {
	var st swucbState
	if err := state.Decode(b, &st); err != nil {
		return err
	}
	if (st.Counter != nil) != (p.counter != nil) || len(st.Prefix) != len(p.prefix) {
		return state.ErrMismatch
	}
	for _, err := range []error{state.Copy(p.acts, st.Acts, "actions"), state.Copy(p.rews, st.Rews, "rewards"),
		state.Copy(p.w, st.W, "sums"), state.Copy(p.n, st.N, "counts")} {
		if err != nil {
			return err
		}
	}
	for i := range p.prefix {
		if err := state.Copy(p.prefix[i], st.Prefix[i], "releases"); err != nil {
			return err
		}
	}
	if p.counter != nil {
		if err := mechanism.RestoreCounter(p.counter, *st.Counter); err != nil {
			return err
		}
	}
	p.t = st.T
	return nil
}

// restartState is the state of Restart.
type restartState struct {
	T     int64
	Inner []byte
}

// MarshalBinary returns the step and the current block's policy's state.
func (p *Restart) MarshalBinary() ([]byte, error) {
	in, err := bandit.Save(p.cur)
	if err != nil {
		return nil, err
	}
	return state.Encode(restartState{p.t, in})
}

// UnmarshalBinary restores what MarshalBinary returned: the block's
// policy is restored into a fresh one, built as every block's is.
func (p *Restart) UnmarshalBinary(b []byte) error {
	var st restartState
	if err := state.Decode(b, &st); err != nil {
		return err
	}
	cur, err := p.build(p.s)
	if err != nil {
		return err
	}
	if err := bandit.Restore(cur, st.Inner); err != nil {
		return err
	}
	p.cur, p.t = cur, st.T
	return nil
}

// dUCBState is the state of DUCB.
type dUCBState struct {
	N, S   []float64
	Played []bool
}

// MarshalBinary returns the discounted statistics.
func (p *DUCB) MarshalBinary() ([]byte, error) { return state.Encode(dUCBState{p.n, p.s, p.played}) }

// UnmarshalBinary restores what MarshalBinary returned.
func (p *DUCB) UnmarshalBinary(b []byte) error {
	var st dUCBState
	if err := state.Decode(b, &st); err != nil {
		return err
	}
	if err := state.Copy(p.n, st.N, "counts"); err != nil {
		return err
	}
	if err := state.Copy(p.played, st.Played, "played"); err != nil {
		return err
	}
	return state.Copy(p.s, st.S, "sums")
}
