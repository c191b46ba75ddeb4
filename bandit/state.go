package bandit

import (
	"encoding"
	"slices"

	"github.com/dpbandit/dpbandit/internal/liberr"
	"github.com/dpbandit/dpbandit/internal/state"
)

// Snapshotter is a policy whose state can be saved and restored, for a
// service that restarts without replaying its whole history:
// MarshalBinary returns what changes as the policy runs (counts, sums,
// released values), never its configuration; UnmarshalBinary restores it
// into a policy built anew with the same Setting and parameters. The
// restored policy continues exactly as the saved one would have.
type Snapshotter interface {
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

// ErrNoSnapshot is the error of Save and Restore for a policy that is not
// a Snapshotter.
var ErrNoSnapshot = liberr.New("bandit", "the policy has no snapshot")

// Save returns the state of p, a Snapshotter, or fails with ErrNoSnapshot.
func Save(p any) ([]byte, error) {
	s, ok := p.(Snapshotter)
	if !ok {
		return nil, liberr.New("bandit", "%w (%T)", ErrNoSnapshot, p)
	}
	return s.MarshalBinary()
}

// Restore restores what Save returned into p, a policy built as the saved
// one was, or fails with ErrNoSnapshot.
func Restore(p any, b []byte) error {
	s, ok := p.(Snapshotter)
	if !ok {
		return liberr.New("bandit", "%w (%T)", ErrNoSnapshot, p)
	}
	return s.UnmarshalBinary(b)
}

// WaitsState is the state of Waits.
type WaitsState struct {
	Decided, Arrived int64
	Queue            []int64
	Open             []int64 // the pending slots, in order
	Hist             [65]int64
}

// State returns the decisions, the pending slots and the delays.
func (w *Waits) State() WaitsState {
	st := WaitsState{Decided: w.decided, Arrived: w.arrived, Queue: slices.Clone(w.queue), Hist: w.hist}
	for seq := range w.open {
		st.Open = append(st.Open, seq)
	}
	slices.Sort(st.Open)
	return st
}

// SetState restores what State returned.
func (w *Waits) SetState(st WaitsState) error {
	for _, seq := range slices.Concat(st.Queue, st.Open) {
		if seq < 1 || seq > st.Decided {
			return inputf("%w: slot %d of %d decisions", state.ErrMismatch, seq, st.Decided)
		}
	}
	w.decided, w.arrived, w.queue, w.hist = st.Decided, st.Arrived, st.Queue, st.Hist
	w.open = map[int64]bool{}
	for _, seq := range st.Open {
		w.open[seq] = true
	}
	return nil
}

// delayedState is the state of Delayed.
type delayedState struct {
	Plan               Plan
	Serial, Taken, Got int64
	Waits              WaitsState
	Policy             []byte
}

// MarshalBinary returns the plan's slots, the delays and the wrapped
// policy's state; it fails if the policy is not a Snapshotter.
func (d *Delayed) MarshalBinary() ([]byte, error) {
	p, err := Save(d.p)
	if err != nil {
		return nil, err
	}
	return state.Encode(delayedState{Plan: d.plan, Serial: d.serial, Taken: d.taken, Got: d.got, Waits: d.waits.State(), Policy: p})
}

// UnmarshalBinary restores what MarshalBinary returned, into a Delayed
// wrapping a policy built as the saved one was.
func (d *Delayed) UnmarshalBinary(b []byte) error {
	var st delayedState
	if err := state.Decode(b, &st); err != nil {
		return err
	}
	if st.Taken < st.Got || st.Got > st.Plan.Count {
		return inputf("%w: %d rewards of %d slots taken of %d", state.ErrMismatch, st.Got, st.Taken, st.Plan.Count)
	}
	if err := Restore(d.p, st.Policy); err != nil {
		return err
	}
	d.plan, d.serial, d.taken, d.got = st.Plan, st.Serial, st.Taken, st.Got
	return d.waits.SetState(st.Waits)
}

// pooledState is the state of Pooled.
type pooledState struct {
	Plan        Plan
	Serial, Got int64
	Waits       WaitsState
	Seqs        []int64 // the pending decisions, in order
	Arms        []int   // their arms
	Counted     []int64 // those counted on, in order
	PoolArms    []int   // the arms whose pools hold rewards, in order
	Pools       [][]pooled
	Fed, UpTo   int64
	Drained     []drain
	Policy      []byte
}

// MarshalBinary returns the plan, the pending decisions, the pools, the
// delays and the wrapped policy's state; it fails if the policy is not a
// Snapshotter. The pools hold rewards no release covers yet, as the
// policy's own state holds its current episode's sum.
func (d *Pooled) MarshalBinary() ([]byte, error) {
	p, err := Save(d.p)
	if err != nil {
		return nil, err
	}
	st := pooledState{Plan: d.plan, Serial: d.serial, Got: d.got, Waits: d.waits.State(), Fed: d.fed, UpTo: d.upTo, Drained: d.drained, Policy: p}
	for seq := range d.arm {
		st.Seqs = append(st.Seqs, seq)
	}
	slices.Sort(st.Seqs)
	for _, seq := range st.Seqs {
		st.Arms = append(st.Arms, d.arm[seq])
	}
	for _, seq := range d.counted {
		if d.counting[seq] {
			st.Counted = append(st.Counted, seq)
		}
	}
	for a := range d.pool {
		st.PoolArms = append(st.PoolArms, a)
	}
	slices.Sort(st.PoolArms)
	for _, a := range st.PoolArms {
		st.Pools = append(st.Pools, d.pool[a])
	}
	return state.Encode(st)
}

// UnmarshalBinary restores what MarshalBinary returned, into a Pooled
// wrapping a policy built as the saved one was.
func (d *Pooled) UnmarshalBinary(b []byte) error {
	var st pooledState
	if err := state.Decode(b, &st); err != nil {
		return err
	}
	if st.Got > st.Plan.Count || len(st.Arms) != len(st.Seqs) || len(st.Pools) != len(st.PoolArms) {
		return inputf("%w: %d rewards of a plan of %d, %d arms of %d pending decisions, %d pools of %d arms",
			state.ErrMismatch, st.Got, st.Plan.Count, len(st.Arms), len(st.Seqs), len(st.Pools), len(st.PoolArms))
	}
	if err := Restore(d.p, st.Policy); err != nil {
		return err
	}
	var w Waits
	if err := w.SetState(st.Waits); err != nil {
		return err
	}
	arm := make(map[int64]int, len(st.Seqs))
	for i, seq := range st.Seqs {
		if !w.Pending(seq) {
			return inputf("%w: decision %d is not pending", state.ErrMismatch, seq)
		}
		arm[seq] = st.Arms[i]
	}
	counting, inflight := map[int64]bool{}, map[int]int64{}
	for _, seq := range st.Counted {
		a, ok := arm[seq]
		if !ok || counting[seq] {
			return inputf("%w: decision %d counted on is not pending", state.ErrMismatch, seq)
		}
		counting[seq] = true
		inflight[a]++
	}
	pool, waiting := map[int][]pooled{}, map[int64]bool{}
	for i, a := range st.PoolArms {
		pool[a] = st.Pools[i]
		for _, r := range st.Pools[i] {
			waiting[r.Seq] = true
		}
	}
	d.plan, d.serial, d.got, d.waits = st.Plan, st.Serial, st.Got, w
	d.arm, d.counted, d.counting, d.inflight, d.pool, d.waiting = arm, st.Counted, counting, inflight, pool, waiting
	d.fed, d.upTo, d.drained, d.covered, d.released = st.Fed, st.UpTo, st.Drained, nil, false
	return nil
}
