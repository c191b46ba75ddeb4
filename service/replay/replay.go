// Package replay orders what a restart replays of an experiment
// (service/engine's Load): the operations of its stored history
// (store.History) after its snapshot, decisions and settlements
// together, by their operation numbers, with the checks that the history
// fits the snapshot. Replaying them on the policy, on the recorded
// releases (service/tape), is the engine's.
//
// It names no error of its own: a history that does not fit its snapshot
// is the snapshot's fault (snapshot.ErrBad: Load sets the snapshot aside
// and replays the whole history), one that cannot be what was served is
// the tape's (tape.ErrDiverged), as the engine's replay of each
// operation says. It is apart from service/snapshot, which holds the
// snapshot's format, because it orders a history, with or without a
// snapshot (after 0, no tickets), and its operations' kinds (Decide,
// Reward, Drop, Seen) name what a replay does, not what a snapshot holds.
package replay

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/service/snapshot"
	"github.com/dpbandit/dpbandit/service/store"
	"github.com/dpbandit/dpbandit/service/tape"
)

// Kind is what an operation did to the policy.
type Kind int

const (
	Decide Kind = iota // a decision
	Reward             // a learned reward (or default reward)
	Drop               // a freed slot: the reward is not learned
	Seen               // an overflow decision's reward came: only its delay counts
)

// Op is one operation to replay: the decision (Decide) or the
// settlement (the others) of the history's event Event (an index into
// its Events), numbered Seq.
type Op struct {
	Seq   int64
	Kind  Kind
	Event int
}

// Ops returns the operations of events (a history read after operation
// after: a snapshot's, 0 for none) to replay, in order: the decisions
// after it and the settlements of every event. pending are the tickets
// of the events pending at the snapshot (snapshot.Snapshot.Tickets):
// each must be among events, once, and every event decided up to after
// must be one of them, not settled by then (snapshot.ErrBad otherwise). An
// event id stored twice is tape.ErrDiverged.
func Ops(events []store.Event, after int64, pending map[int64]bandit.Ticket) ([]Op, error) {
	var ops []Op
	ids, matched := make(map[string]bool, len(events)), make(map[int64]bool, len(pending))
	for i, e := range events {
		if ids[e.ID] {
			return nil, fmt.Errorf("%w: event_id %q is stored twice", tape.ErrDiverged, e.ID)
		}
		ids[e.ID] = true
		if e.Seq > after {
			ops = append(ops, Op{e.Seq, Decide, i})
		} else if _, ok := pending[e.Seq]; !ok || matched[e.Seq] || e.RSeq > 0 && e.RSeq <= after {
			return nil, fmt.Errorf("%w: event %d was not pending at the snapshot", snapshot.ErrBad, e.Seq)
		} else {
			matched[e.Seq] = true
		}
		if e.RSeq > 0 {
			kind := Drop
			switch {
			case e.Status == store.Learned || e.Status == store.Defaulted:
				kind = Reward
			case e.Plan == 0:
				kind = Seen
			}
			ops = append(ops, Op{e.RSeq, kind, i})
		}
	}
	if left := len(pending) - len(matched); left > 0 {
		return nil, fmt.Errorf("%w: %d events pending at the snapshot are not stored", snapshot.ErrBad, left)
	}
	slices.SortFunc(ops, func(a, b Op) int { return cmp.Compare(a.Seq, b.Seq) })
	return ops, nil
}
