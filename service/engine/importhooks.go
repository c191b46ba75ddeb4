package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/importer"
	"github.com/dpbandit/dpbandit/service/store"
)

// Imports' part in the engine (package importer holds the rest): a
// session under the experiment's lock (RunImport) whose decisions are
// taken as live ones (newDecision) and whose rewards go through settle
// as live ones (the unit's limits and ledger, the same debit, the same
// releases). They are ordinary operations, marked as imported in their
// stored reasons, so that a restart replays them and counts them again
// (importer.Totals.Count); their changes are committed together, in one
// transaction (store.Change's Group): all of the import or nothing.
// The engine imports package importer, not the reverse: the imported
// totals (importer.Totals) are part of State and of snapshots.

// noteImported marks an imported event settled with status (reason,
// admit's: "" when learned; nano its debit) and counts it, before the
// operation's change is made (a snapshot in it counts it). The caller
// holds x.mu, in an import.
func (x *Experiment) noteImported(rec *record, status, reason string, nano int64) {
	if status == store.Expired {
		reason = x.imp.expired
	}
	rec.Reason = importer.Reason(reason)
	x.imported.Add(status, reason, nano)
}

// importRun is an import under way (RunImport), an importer.Session:
// its changes, committed together at its end, the decision taken and not
// yet settled, and the reason of the next decision that expires. Its
// methods run under the experiment's lock, within RunImport's run only.
type importRun struct {
	x       *Experiment
	changes []*store.Change
	pending *record
	expired string
}

// errUnsettled is an import session used out of turn: a decision taken
// before the last was settled, or settled twice, or left unsettled.
var errUnsettled = errors.New("import: each decision is settled (Reward or Expire) once, before the next")

// RunImport runs an import (package importer) under the experiment's
// lock, run, and returns the operations it added (decisions and
// rewards) once they are durable. run takes decisions and settles each
// one before the next, as live ones (see above); their changes are
// committed together, once run returns nil. A stopped (Unavailable),
// archived (Gone) or identified (identify.go) experiment refuses the
// import before run. An error of run once it has taken a decision stops
// the experiment, as a failed policy does: memory is ahead of the
// store, which holds nothing of the import, and only a restart, which
// replays the store, is safe.
func (x *Experiment) RunImport(ctx context.Context, run func(importer.Session) error) (int64, error) {
	ops, durable, err := x.runImport(run)
	if err == nil && durable != nil {
		err = x.env.Writer.Wait(ctx, durable)
	}
	return ops, err
}

func (x *Experiment) runImport(run func(importer.Session) error) (int64, chan struct{}, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.failed != nil {
		return 0, nil, x.stopped()
	}
	if x.def.Status == store.Archived {
		return 0, nil, fault.Errorf(fault.Gone, "experiment %q is archived", x.def.ID)
	}
	if w := x.identified(); w != nil {
		return 0, nil, w.Stopped(x.def.ID)
	}
	last, seq0 := x.last, x.seq
	s := &importRun{x: x}
	x.imp = s
	err := run(s)
	if err == nil && s.pending != nil {
		err = errUnsettled
	}
	changes := s.changes
	x.imp, s.x = nil, nil
	switch {
	case err != nil && x.seq == seq0:
		return 0, nil, err // nothing changed (run only read)
	case err != nil:
		// Memory is ahead of the store, which holds nothing of the
		// import: only a restart, which replays the store, is safe.
		x.last = last
		if x.failed == nil {
			err = x.fail(fmt.Errorf("import: %w", err))
		}
		return 0, nil, err
	case len(changes) == 0:
		return 0, nil, nil
	}
	head := changes[0]
	head.Group = changes[1:]
	if err := x.env.Writer.Submit(head); err != nil {
		return 0, nil, fault.Errorf(fault.Unavailable, "%v", err)
	}
	return x.seq - seq0, changes[len(changes)-1].Durable, nil
}

func (s *importRun) Event(id string) (stored, imported bool, err error) {
	rec, err := s.x.event(id)
	if rec == nil || err != nil {
		return false, false, err
	}
	_, imported = importer.IsImported(rec.Reason)
	return true, imported, nil
}

func (s *importRun) Identified() bool { return s.x.identified() != nil }

func (s *importRun) Decide(l *importer.Event, name func(arm int) (id, unit string)) (int, error) {
	if s.pending != nil {
		return 0, errUnsettled
	}
	if l == nil {
		l = &importer.Event{}
	}
	if name == nil {
		name = func(int) (string, string) { return l.ID, l.Unit }
	}
	var facts *rankFacts
	if s.x.def.Surface == define.SurfacePersonalizer {
		facts = &rankFacts{shared: l.Shared}
	}
	rec, err := s.x.newDecision(name, l.Context, facts, l.Set)
	if err != nil {
		return 0, err
	}
	s.pending = rec
	return rec.Arm, nil
}

func (s *importRun) Reward(r float64) (importer.Settled, error) {
	if b := s.x.bounds; !(r >= b.Lo && r <= b.Hi) {
		return importer.Settled{}, fault.Errorf(fault.OutOfRange, "reward %v lies outside the declared reward_range [%v, %v]", r, b.Lo, b.Hi)
	}
	return s.settle(r, store.Learned, "")
}

func (s *importRun) Expire(why importer.Miss) (importer.Settled, error) {
	return s.settle(0, store.Expired, string(why))
}

// settle settles the pending decision with r and status (reason: the
// Miss of an expired one), counted in the imported totals
// (noteImported), and returns how.
func (s *importRun) settle(r float64, status, reason string) (importer.Settled, error) {
	rec, x := s.pending, s.x
	if rec == nil {
		return importer.Settled{}, errUnsettled
	}
	s.pending, s.expired = nil, reason
	if err := x.settle(rec, r, status); err != nil {
		return importer.Settled{}, err
	}
	reason, _ = importer.IsImported(rec.Reason)
	return importer.Settled{Status: rec.Status, Reason: reason, Debit: s.changes[len(s.changes)-1].Debit}, nil
}
