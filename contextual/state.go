package contextual

import (
	"cmp"
	"errors"
	"slices"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/internal/state"
	"github.com/dpbandit/dpbandit/mechanism"
)

// ofulState is the state of OFUL: V and its inverse, the determinant
// ratio, the reward statistic, and the last re-estimate.
type ofulState struct {
	V, VInv, NSum, Theta, TauInv    []float64
	LogDet, Ratio, Thresh           float64
	Radius, LMin                    float64
	Sums                            mechanism.SumsState
	Episodes, T, SinceFresh, Served int64
	Pending                         []float64 // Choose's action until Update (nil: none)
}

// MarshalBinary returns what changes as the policy runs, for a snapshot
// (bandit.Snapshotter): V, V^-1, the sums and the last re-estimate
// (theta~, V_tau^-1, beta~), the released block sums among them.
func (o *OFUL) MarshalBinary() ([]byte, error) {
	o.syncV()
	return state.Encode(ofulState{V: o.v, VInv: o.vinv, NSum: o.nsum, Theta: o.theta, TauInv: o.tauM(),
		LogDet: o.logdet, Ratio: o.ratio, Thresh: o.thresh, Radius: o.radius, LMin: o.lmin, Sums: o.sums.State(),
		Episodes: o.episodes, T: o.t, SinceFresh: o.sinceFresh, Served: o.served, Pending: o.pending})
}

// UnmarshalBinary restores what MarshalBinary returned into a policy
// built with the same Config and Setting.
func (o *OFUL) UnmarshalBinary(b []byte) error {
	var st ofulState
	if err := state.Decode(b, &st); err != nil {
		return err
	}
	if err := errors.Join(state.Copy(o.v, st.V, "V"), state.Copy(o.vinv, st.VInv, "V^-1"), state.Copy(o.nsum, st.NSum, "block sums"),
		state.Copy(o.theta, st.Theta, "theta"), state.Copy(o.tauInv, st.TauInv, "V_tau^-1"), o.sums.SetState(st.Sums)); err != nil {
		return err
	}
	o.pending = nil
	if st.Pending != nil {
		if len(st.Pending) != o.d {
			return inputf("%w: a pending action of dimension %d, want %d", state.ErrMismatch, len(st.Pending), o.d)
		}
		o.chosen = append(o.chosen[:0], st.Pending...)
		o.pending = o.chosen
	}
	rowSpans(o.rows, o.vinv, o.d)
	o.dense = full(o.rows, o.d)
	rowSpans(o.tauRows, o.tauInv, o.d)
	o.tauDense, o.synced, o.uReady, o.shared, o.vStale, o.nlog = full(o.tauRows, o.d), false, false, false, false, 0
	o.logdet, o.ratio, o.thresh, o.radius, o.lmin = st.LogDet, st.Ratio, st.Thresh, st.Radius, st.LMin
	o.episodes, o.t, o.sinceFresh, o.served = st.Episodes, st.T, st.SinceFresh, st.Served
	return nil
}

// pendingAction is one choice waiting for its reward.
type pendingAction struct {
	Seq    int64
	Action []float64
}

// sortedActions returns the actions of m by Seq (nil for none).
func sortedActions(m map[int64][]float64) []pendingAction {
	var out []pendingAction
	for seq, a := range m {
		out = append(out, pendingAction{seq, a})
	}
	slices.SortFunc(out, func(a, b pendingAction) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// delayedState is the state of Delayed.
type delayedState struct {
	Serial  int64
	Pending []pendingAction // by Seq
	Waits   bandit.WaitsState
	Policy  []byte
	// Withdrawn holds, under the late rule, the withdrawn choices still
	// pending (by Seq; empty, and not encoded, under the other rules).
	Withdrawn []pendingAction
}

// MarshalBinary returns the pending choices, the delays and the wrapped
// policy's state; it fails if the policy is not a bandit.Snapshotter.
func (d *Delayed) MarshalBinary() ([]byte, error) {
	p, err := bandit.Save(d.p)
	if err != nil {
		return nil, err
	}
	st := delayedState{Serial: d.serial, Waits: d.waits.State(), Policy: p}
	st.Pending, st.Withdrawn = sortedActions(d.pending), sortedActions(d.withdrawn)
	return state.Encode(st)
}

// UnmarshalBinary restores what MarshalBinary returned, into a Delayed
// built (NewDelayed or NewDelayedOne) as the saved one was.
func (d *Delayed) UnmarshalBinary(b []byte) error {
	var st delayedState
	if err := state.Decode(b, &st); err != nil {
		return err
	}
	if err := bandit.Restore(d.p, st.Policy); err != nil {
		return err
	}
	d.serial = st.Serial
	d.pending = map[int64][]float64{}
	for _, p := range st.Pending {
		d.pending[p.Seq] = p.Action
	}
	if len(st.Withdrawn) > 0 && !d.late {
		return state.ErrMismatch // withdrawn choices stay pending under the late rule only
	}
	for _, p := range st.Withdrawn {
		d.withdrawn[p.Seq] = p.Action
	}
	return d.waits.SetState(st.Waits)
}
