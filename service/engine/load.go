package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/dpbandit/dpbandit/service/store"
)

// Loading. A restart rebuilds each experiment in one walk, Load:
//
//  1. its last snapshot is read and verified (decodeSnapshot); one that
//     does not verify, or that is ahead of the experiment's fold, is
//     set aside, and the whole history is used;
//  2. its history from the snapshot's mark is read (store.Histories);
//  3. what a crash left unfolded of it is folded (loadTail), before it
//     serves, so that the ledger holds every debit;
//  4. its policy is rebuilt and the operations after the snapshot
//     replayed on the recorded releases and random words (restore, in
//     experiment.go): nothing is drawn anew, and a replay that does not
//     reproduce what was stored is ErrDiverged.
//
// A snapshot that fails at step 4 is set aside too, and the walk runs
// again from the start of the history.

// Load rebuilds an experiment from the store: from its last snapshot and
// the operations after it when the snapshot verifies, else from its whole
// history. It folds what is not folded first (loadTail): a failure there
// is ErrHistory.
func Load(ctx context.Context, def Definition, env *Env) (*Experiment, error) {
	folded := def.Folded
	stored, err := env.Store.Snapshot(ctx, def.Key())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrHistory, err)
	}
	if stored != nil {
		sn, err := decodeSnapshot(def, stored)
		if err == nil && !env.Eager && sn.Seq > folded {
			err = fmt.Errorf("%w: it is ahead of the experiment's fold (operation %d, folded to %d)", errBadSnapshot, sn.Seq, folded)
		}
		if err == nil {
			var x *Experiment
			if x, err = loadFrom(ctx, def, sn, &folded, env); err == nil {
				return x, nil
			}
		}
		if ctx.Err() != nil || errors.Is(err, ErrHistory) {
			return nil, err
		}
		env.Logger.Warn("snapshot not used: replaying the whole history", "experiment", def.Key(), "err", err)
	}
	return loadFrom(ctx, def, nil, &folded, env)
}

// loadFrom rebuilds an experiment from a snapshot (nil: from its start),
// folding what is not folded of it first; *folded is its cursor.
func loadFrom(ctx context.Context, def Definition, sn *snapshot, folded *int64, env *Env) (*Experiment, error) {
	var mark store.Mark
	if sn != nil {
		mark = store.Mark{Seq: sn.Seq, Releases: sn.Releases, Draws: sn.Draws}
		for _, p := range sn.Slots {
			mark.Pending = append(mark.Pending, p.Event)
		}
	}
	h, err := env.Store.History(ctx, def.Key(), mark)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrHistory, err)
	}
	if err := loadTail(ctx, def.Key(), mark, h, folded, env); err != nil {
		return nil, err
	}
	x, err := restore(def, h, sn, env)
	if err != nil {
		return nil, err
	}
	x.foldSeq = *folded
	return x, nil
}

// loadTail folds what a crash left unfolded of an experiment, from h,
// its history from mark, before the experiment serves: the events
// decided after *folded, its cursor, are indexed, and the cursor moves
// to the experiment's last operation (a cursor past it, from a store
// written before folds, moves back to it).
//
// On PostgreSQL, where every change folds its own writes (and earlier
// versions' replicas, during a rolling update, write as they go without
// moving the cursor), there is nothing to fold.
func loadTail(ctx context.Context, exp string, mark store.Mark, h *store.History, folded *int64, env *Env) error {
	last, owed := mark.Seq, debts{}
	for _, e := range h.Events {
		last = max(last, e.Seq, e.RSeq)
		if e.RSeq > *folded && (e.Status == store.Learned || e.Status == store.Defaulted) {
			owed.add(e.Unit, e.Debit)
		}
	}
	if env.Eager || *folded == last {
		*folded = last
		return nil
	}
	f := &store.Fold{Upto: last, Debits: owed.take()}
	if *folded < last {
		f.Index = store.Span{Lo: *folded + 1, Hi: last}
	}
	c := &store.Change{Exp: exp, Fold: f, Durable: make(chan struct{})}
	var err error
	if env.Writer == nil { // the service's start, before its writer
		err = env.Store.Commit(ctx, []*store.Change{c})
	} else if err = env.Writer.Submit(c); err == nil {
		err = env.Writer.Wait(ctx, c.Durable)
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrHistory, exp, err)
	}
	*folded = last
	return nil
}

// New returns a new experiment of def, with nothing decided yet.
func New(def Definition, env *Env) (*Experiment, error) {
	return restore(def, &store.History{}, nil, env)
}

// Broken returns an experiment of def that failed to load (err): every
// request about it is answered Unavailable, until a restart loads it.
func Broken(def Definition, err error, env *Env) *Experiment {
	return &Experiment{env: env, def: def, failed: fmt.Errorf("experiment %s: %w", def.Key(), err)}
}
