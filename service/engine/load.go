package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/internal/bloom"
	"github.com/dpbandit/dpbandit/service/ledger"
	"github.com/dpbandit/dpbandit/service/policy"
	"github.com/dpbandit/dpbandit/service/replay"
	"github.com/dpbandit/dpbandit/service/snapshot"
	"github.com/dpbandit/dpbandit/service/store"
	"github.com/dpbandit/dpbandit/service/tape"
)

// Loading. A restart rebuilds each experiment in one walk, Load:
//
//  1. its last snapshot is read and verified (snapshot.Decode); one that
//     does not verify, or that is ahead of the experiment's fold, is
//     set aside, and the whole history is used;
//  2. its history from the snapshot's mark is read (store.Histories);
//  3. what a crash left unfolded of it is folded (loadTail), before it
//     serves, so that the ledger holds every debit;
//  4. its policy is rebuilt and the operations after the snapshot
//     (replay.Ops) replayed on the recorded releases and random words
//     (restore): nothing is drawn anew, and a replay that does not
//     reproduce what was stored is tape.ErrDiverged.
//
// A snapshot that fails at step 4 is set aside too, and the walk runs
// again from the start of the history.

// Load rebuilds an experiment from the store: from its last snapshot and
// the operations after it when the snapshot verifies, else from its whole
// history. It folds what is not folded first (loadTail): a failure there
// is ErrHistory.
func Load(ctx context.Context, def define.Definition, env *Env) (*Experiment, error) {
	folded := def.Folded
	stored, err := env.Store.Snapshot(ctx, def.Key())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrHistory, err)
	}
	if stored != nil {
		sn, err := snapshot.Decode(def, stored)
		if err == nil && !env.Eager && sn.Seq > folded {
			err = fmt.Errorf("%w: it is ahead of the experiment's fold (operation %d, folded to %d)", snapshot.ErrBad, sn.Seq, folded)
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
func loadFrom(ctx context.Context, def define.Definition, sn *snapshot.Snapshot, folded *int64, env *Env) (*Experiment, error) {
	var mark store.Mark
	if sn != nil {
		mark = sn.Mark()
	}
	h, err := env.Store.History(ctx, def.Key(), mark)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrHistory, err)
	}
	tail := mark
	tail.Seq = max(tail.Seq, def.LastSetting()) // a setting is an operation of its own (settings.go)
	if err := loadTail(ctx, def.Key(), tail, h, folded, env); err != nil {
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
// its history from mark, before the experiment serves (ledger.Unfolded):
// the events decided after *folded, its cursor, are indexed, and the
// cursor moves to the experiment's last operation.
//
// On PostgreSQL, where every change folds its own writes (and earlier
// versions' replicas, during a rolling update, write as they go without
// moving the cursor), there is nothing to fold.
func loadTail(ctx context.Context, exp string, mark store.Mark, h *store.History, folded *int64, env *Env) error {
	last, f := ledger.Unfolded(h.Events, mark.Seq, *folded)
	if env.Eager || f == nil {
		*folded = last
		return nil
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

// restore rebuilds an experiment from its history: the policy is built
// anew, restored from the snapshot sn if there is one, and every
// operation of h (those after the snapshot) replayed in order, on a tape
// that returns the stored releases and random words (and fails the
// restore if the replay asks for more: nothing is drawn anew). Rewards
// deleted after their release (data minimisation) are replayed as the
// range's lower end: the policy forgets them (bandit.Forgetter) and the
// tape returns their release whatever its input. It keeps the
// env.KeepEvents last settled events in memory. Units' counts are the
// ledger's (package ledger).
func restore(def define.Definition, h *store.History, sn *snapshot.Snapshot, env *Env) (*Experiment, error) {
	t := tape.New(env.Entropy)
	t.Load(h.Releases, h.Draws)
	x, err := newExperiment(def, t, sn, env)
	if err != nil {
		return nil, err
	}
	ops, recs, err := x.operations(h, sn)
	if err != nil {
		return nil, err
	}
	for _, o := range ops {
		if err := x.advance(o.Seq); err != nil {
			return nil, err
		}
		if err := x.replay(o, recs[o.Event]); err != nil {
			return nil, err
		}
	}
	if err := x.advance(x.def.LastSetting() + 1); err != nil {
		return nil, err
	}
	x.pruneGreedy() // (settlements that are no operation left theirs)
	if err := t.Finished(); err != nil {
		return nil, err
	}
	x.nrel += int64(len(h.Releases))
	x.draws += int64(len(h.Draws))
	x.recent = lastReleases(x.recent, h.Releases)
	if sn != nil {
		x.imported.Count(h.Events, sn.Seq)
	} else {
		x.imported.Count(h.Events, 0)
	}
	for _, e := range h.Events {
		r := x.events[e.ID]
		x.countReward(r)
		x.ids.Add(r.ID)
		if r.Status != store.Pending {
			x.keep(r)
		}
	}
	return x, nil
}

// newExperiment returns an experiment of def whose policy, on tape t, is
// restored from the snapshot sn (nil: new).
func newExperiment(def define.Definition, t *tape.Tape, sn *snapshot.Snapshot, env *Env) (*Experiment, error) {
	keep, every := env.KeepEvents, env.SnapshotEvery
	if keep <= 0 {
		keep = 1 << 14
	}
	if every <= 0 {
		every = 1 << 14
	}
	next := int64(1)
	if sn != nil {
		next = sn.Seq + 1
	}
	def.CacheRanks() // (a Personalizer experiment's repeated action lists)
	eff, cur := def.Effective(next)
	pol, err := policy.Build(eff, t)
	if err != nil {
		return nil, err
	}
	x := &Experiment{def: def, key: def.Key(), bounds: mechanism.Bounds{Lo: def.RewardRange[0], Hi: def.RewardRange[1]}, pol: pol, tape: t,
		events: map[string]*record{}, slots: map[int64]*record{}, pooledAt: map[int64]int64{}, ids: bloom.NewSet(env.IDs, "e\x00"+def.Key(), sn != nil), keepN: keep, units: ledger.NewCache(max(env.KeepUnits, 1)), pulls: make([]int64, def.Arms),
		snapEvery: every, foldCh: make(chan struct{}), owed: ledger.Debts{}, env: env, set: settings{eff, cur},
		mDecisions: env.Metrics.Decisions.WithLabelValues(def.Key()), mLearned: env.Metrics.Rewards.WithLabelValues(def.Key(), store.Learned)}
	if sn == nil {
		return x, nil
	}
	if err := bandit.Restore(pol, sn.Policy); err != nil {
		return nil, fmt.Errorf("%w: %v", snapshot.ErrBad, err)
	}
	x.seq, x.snapSeq, x.nrel, x.draws, x.n, x.recent, x.unfreed = sn.Seq, sn.Seq, sn.Releases, sn.Draws, sn.Counts, sn.Recent, sn.Unfreed
	x.series, x.imported = sn.Series, sn.Imported
	x.appr = sn.Apprentice
	copy(x.pulls, sn.Pulls)
	for _, p := range sn.Pooled {
		x.pooledAt[p.Ticket.Seq] = p.Event
	}
	return x, nil
}

// operations keeps h's events in memory and returns the operations to
// replay after the snapshot sn (nil: none; replay.Ops), with the records
// of h's events they name; the events pending at the snapshot get their
// tickets back.
func (x *Experiment) operations(h *store.History, sn *snapshot.Snapshot) ([]replay.Op, []*record, error) {
	var tickets map[int64]bandit.Ticket
	if sn != nil {
		tickets = sn.Tickets()
	}
	ops, err := replay.Ops(h.Events, x.seq, tickets)
	if err != nil {
		return nil, nil, err
	}
	stored := make(chan struct{}) // every stored event is durable, and indexed (loadTail): one closed channel for all
	close(stored)
	recs := make([]*record, len(h.Events))
	for i := range h.Events {
		rec := &record{Event: h.Events[i], durable: stored, indexed: stored}
		if rec.Seq <= x.seq {
			rec.tk = tickets[rec.Seq]
		}
		x.events[rec.ID], recs[i] = rec, rec
	}
	return ops, recs, nil
}

// replay applies one stored operation o, of the event rec, to the
// policy, as it was applied live; a decision that does not come out as
// stored is tape.ErrDiverged.
func (x *Experiment) replay(o replay.Op, rec *record) error {
	if o.Seq <= x.seq {
		return fmt.Errorf("%w: operation %d is out of order", tape.ErrDiverged, o.Seq)
	}
	x.seq = o.Seq
	tk := rec.tk
	switch o.Kind {
	case replay.Decide:
		set, err := x.def.StoredSet(rec.Context) // as when it was decided, rounding scaled alike
		if err != nil {
			return fmt.Errorf("%w: decision %d: context: %v", tape.ErrDiverged, rec.Seq, err)
		}
		got, p, policyArm, err := x.take(set, rec.Context)
		if err != nil || got.Arm != rec.Arm || got.Plan != rec.Plan || rec.PolicyArm >= 0 && (p != rec.PScore || policyArm != rec.PolicyArm) {
			return fmt.Errorf("%w: decision %d was arm %d of plan %d, replay gives arm %d of plan %d (propensity %v, %v; policy arm %d)",
				tape.ErrDiverged, rec.Seq, rec.Arm, rec.Plan, got.Arm, got.Plan, rec.PScore, p, policyArm)
		}
		rec.tk = got
		x.count(rec)
		x.covered() // what a release in it covered was deleted then
	case replay.Reward:
		r := x.bounds.Lo
		if rec.Reward != nil {
			r = *rec.Reward
		}
		learn := x.pol.Reward
		if rec.Status == store.Defaulted {
			learn = x.pol.Default
		}
		if err := learn(tk, r); err != nil {
			return fmt.Errorf("%w: reward of event %q: %v", tape.ErrDiverged, rec.ID, err)
		}
		x.apprenticeReward(rec, r, true)
		if _, ok := policy.PoolsOf(x.pol); ok {
			x.learned(tk, rec.Seq, rec.Reward != nil)
			x.covered() // what a release in it covered was deleted then
		} else {
			if rec.Reward != nil && x.forgets() {
				x.unfreed.Add(rec.Seq)
			}
			if x.released() {
				x.unfreed = store.Span{}
			}
		}
	case replay.Drop:
		if err := x.pol.Drop(tk); err != nil {
			return fmt.Errorf("%w: drop of event %q: %v", tape.ErrDiverged, rec.ID, err)
		}
		x.apprenticeReward(rec, 0, false)
	case replay.Seen:
		x.pol.Seen(tk)
		x.apprenticeReward(rec, 0, false)
	}
	return x.tape.Err()
}

// New returns a new experiment of def, with nothing decided yet.
func New(def define.Definition, env *Env) (*Experiment, error) {
	return restore(def, &store.History{}, nil, env)
}

// Broken returns an experiment of def that failed to load (err): every
// request about it is answered Unavailable, until a restart loads it.
func Broken(def define.Definition, err error, env *Env) *Experiment {
	return &Experiment{env: env, def: def, key: def.Key(), failed: fmt.Errorf("experiment %s: %w", def.Key(), err)}
}
