package linear

import (
	"slices"

	"github.com/dpbandit/dpbandit/design"
	"github.com/dpbandit/dpbandit/internal/state"
	"github.com/dpbandit/dpbandit/mechanism"
)

// The phased policies (GOPE, AdaC-GOPE, AdaR-GOPE-Var, DP-PE) save and
// restore what changes as they run (encoding.BinaryMarshaler and
// BinaryUnmarshaler), for a service's snapshots: UnmarshalBinary restores
// into a policy built with the same Setting and parameters, which the
// state never carries. The phase's design is not saved: it is a function
// of the active set and tolerance it was computed for (design.GOptimal),
// and is computed again from them. Batched keeps random generators and
// local randomisers and has no snapshot.

// phasedState is the state of phased.
type phasedState struct {
	Active, DesActive, Order []int
	DesTol                   float64
	Counts                   []int64
	Phase, Pos, Final        int
	Done, T                  int64
	Sums                     mechanism.SumsState
}

// MarshalBinary returns the phase's state: the surviving actions, the
// design's active set and tolerance, the schedule, the pulls so far and
// the reward sums of the phase (released once, at its end).
func (p *phased) MarshalBinary() ([]byte, error) {
	return state.Encode(phasedState{Active: p.active, DesActive: p.desActive, Order: p.order, DesTol: p.desTol, Counts: p.counts,
		Phase: p.phase, Pos: p.pos, Final: p.final, Done: p.done, T: p.t, Sums: p.sums.State()})
}

// UnmarshalBinary restores what MarshalBinary returned. A state no run
// reaches (an action listed twice, a schedule past its phase) is refused
// (state.ErrMismatch): an action listed twice would enter a phase's
// release twice.
func (p *phased) UnmarshalBinary(b []byte) error {
	var st phasedState
	if err := state.Decode(b, &st); err != nil {
		return err
	}
	k := len(p.x)
	if err := state.Copy(p.counts, st.Counts, "counts"); err != nil {
		return err
	}
	increasing := func(s []int) bool {
		for i, a := range s {
			if a < 0 || a >= k || i > 0 && a <= s[i-1] {
				return false
			}
		}
		return true
	}
	if len(st.Active) == 0 || !increasing(st.Active) || !increasing(st.DesActive) || st.Final < -1 || st.Final >= k {
		return inputf("%w: active actions %v, design over %v, final %d, of %d", state.ErrMismatch, st.Active, st.DesActive, st.Final, k)
	}
	if st.Final < 0 {
		sorted := slices.Sorted(slices.Values(st.Order))
		if st.Pos < 0 || st.Pos >= len(st.Order) || !increasing(sorted) || st.Done < 0 || st.Done >= st.Counts[st.Order[st.Pos]] || len(st.DesActive) == 0 {
			return inputf("%w: support %v, at %d, %d pulls done", state.ErrMismatch, st.Order, st.Pos, st.Done)
		}
	}
	if err := p.sums.SetState(st.Sums); err != nil {
		return err
	}
	p.des = nil
	if len(st.DesActive) > 0 {
		acts := make([][]float64, len(st.DesActive))
		for i, a := range st.DesActive {
			acts[i] = p.x[a]
		}
		des, err := design.GOptimal(acts, st.DesTol)
		if err != nil {
			return inputf("%w: %v", state.ErrMismatch, err)
		}
		p.des = des
	}
	p.active, p.desActive, p.order, p.desTol = st.Active, st.DesActive, st.Order, st.DesTol
	p.phase, p.pos, p.final, p.done, p.t = st.Phase, st.Pos, st.Final, st.Done, st.T
	return nil
}
