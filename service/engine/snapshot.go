package engine

import (
	"cmp"
	"context"
	"slices"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/service/snapshot"
	"github.com/dpbandit/dpbandit/service/store"
)

// Snapshots. Every Config.SnapshotEvery operations, and whenever rewards
// are deleted after their release, an experiment's state is written with
// the operation that completes it, in the same transaction: the policy's
// state (bandit.Snapshotter: counts, sums, the released values it
// reuses), the tape's positions (how many releases and random words were
// recorded before it) and what the API shows. A restart loads the last
// snapshot and replays only the operations after it, on the releases
// and words recorded after it: a release is still drawn once and never
// re-drawn. A snapshot that cannot be verified (its checksum, its
// version, its definition, or a replay of the operations after it that
// does not reproduce what was stored) is ignored, and the experiment is
// rebuilt from its whole history. What a snapshot holds, its encoding
// and its verification are package snapshot's; when one is taken, and
// what is gathered into it under the experiment's lock, are here.
//
// A snapshot holds the sums of the current unreleased block, as the
// stored rewards do; when a block's rewards are deleted (data
// minimisation), the snapshot taken then, after the release, replaces
// the last one.

// recentReleases is the number of releases the state shows.
const recentReleases = 10

// lastReleases appends add to the last releases, keeping the last
// recentReleases.
func lastReleases(last, add []store.Release) []store.Release {
	last = append(last, add...)
	return append(last[:0:0], last[max(0, len(last)-recentReleases):]...)
}

// forgets reports whether the policy forgets released rewards
// (bandit.Forgetter with a private budget).
func (x *Experiment) forgets() bool {
	_, forgets := x.unreleased()
	return forgets
}

// snapshotInto adds a snapshot of the experiment to c, the change of the
// operation just made, if snapshots are due (or force) and the policy
// has them. The caller holds x.mu, with the operation applied to memory.
func (x *Experiment) snapshotInto(c *store.Change, force bool) {
	if x.snapEvery == 0 || !force && x.seq-x.snapSeq < x.snapEvery {
		return
	}
	sn, err := x.save()
	if err != nil {
		// The policy has no snapshot: restarts replay its history.
		x.env.Logger.Warn("no snapshots: restarts replay the whole history", "experiment", x.def.Key(), "err", err)
		x.snapEvery = 0
		return
	}
	c.Snapshot, x.snapSeq = sn, x.seq
	x.foldInto(c) // a restart replays from the snapshot: what is before it is folded (fold.go)
}

// saveNow submits a snapshot of the experiment if it changed since its
// last, in a change of its own: no operation's writes (the tape still
// holds the last operation's, already submitted with it). The caller
// holds x.mu.
func (x *Experiment) saveNow() error {
	if x.failed != nil || x.pol == nil || x.seq == x.snapSeq {
		return nil
	}
	c := &store.Change{Exp: x.def.Key(), Durable: make(chan struct{})}
	if x.snapshotInto(c, true); c.Snapshot == nil {
		return nil
	}
	if err := x.env.Writer.Submit(c); err != nil {
		return err
	}
	x.last = c.Durable
	return nil
}

// save returns the experiment's state, encoded with its checksum
// (snapshot.Encode).
func (x *Experiment) save() (*store.Snapshot, error) {
	pol, err := bandit.Save(x.pol)
	if err != nil {
		return nil, err
	}
	sn := snapshot.Snapshot{Algorithm: x.set.eff.Algorithm, Seq: x.seq, Releases: x.nrel, Draws: x.draws, Policy: pol,
		Counts: x.n, Pulls: x.pulls, Series: x.series, Recent: x.recent, Unfreed: x.unfreed, Apprentice: x.appr, Imported: x.imported}
	for _, rec := range x.queue {
		if rec.Status == store.Pending {
			sn.Slots = append(sn.Slots, snapshot.Slot{Event: rec.Seq, Ticket: rec.tk})
		}
	}
	for tk, seq := range x.pooledAt {
		sn.Pooled = append(sn.Pooled, snapshot.Slot{Event: seq, Ticket: bandit.Ticket{Seq: tk}})
	}
	slices.SortFunc(sn.Pooled, func(a, b snapshot.Slot) int { return cmp.Compare(a.Event, b.Event) })
	return snapshot.Encode(sn)
}

// LoadIDs adds to the experiment's id filter the event ids decided
// before the snapshot it was loaded from: until it is done, an event id
// not in memory is looked up in the store (event), which answers the
// same, more slowly. A failure is logged: the lookups go on.
func (x *Experiment) LoadIDs(ctx context.Context) {
	x.mu.Lock()
	upTo, ready := x.snapSeq, x.pol == nil || !x.ids.Loading()
	x.mu.Unlock()
	if ready {
		return
	}
	err := x.ids.Load(func(add func(string)) error { return x.env.Store.EventIDs(ctx, x.def.Key(), upTo, add) })
	if err != nil && ctx.Err() == nil {
		x.env.Logger.Warn("event id filter not built: ids not in memory are looked up in the store", "experiment", x.def.Key(), "err", err)
	}
}
