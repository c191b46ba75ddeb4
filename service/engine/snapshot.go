package engine

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/internal/state"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/importer"
	"github.com/dpbandit/dpbandit/service/rules"
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
// rebuilt from its whole history.
//
// A snapshot holds the sums of the current unreleased block, as the
// stored rewards do; when a block's rewards are deleted (data
// minimisation), the snapshot taken then, after the release, replaces
// the last one.

// snapshotVersion numbers the layout of snapshot. Version 1 listed the
// seqs of the unreleased rewards (Unfreed), version 2 holds their span:
// a version-1 snapshot is not read, and its experiment replays its whole
// history once (docs/service.md, Upgrading).
const snapshotVersion = 2

// snapshot is what an experiment's snapshot holds.
type snapshot struct {
	Version   int
	Algorithm string // the definition's, checked on load
	Seq       int64  // the last operation it includes
	Releases  int64  // releases recorded up to Seq
	Draws     int64  // random words recorded up to Seq
	Policy    []byte // the decider's state
	Counts    Counts
	Pulls     []int64
	Series    []Sample
	Recent    []store.Release
	Slots     []slot     // the pending events' tickets
	Unfreed   store.Span // learned events whose rewards are stored, not yet released, lie in it
	// Apprentice is apprentice mode's test (rules.Apprentice).
	Apprentice rules.Apprentice
	// Pooled holds, under the pooled rule, the learned rewards that went
	// through a pool and that no release covers yet: their events and
	// tickets (experiment.pooledAt).
	Pooled []slot
	// Imported totals what imports brought (importhooks.go).
	Imported importer.Totals
}

// slot is a pending event's ticket (its Seq is not stored with the event).
type slot struct {
	Event  int64 // the event's seq
	Ticket bandit.Ticket
}

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

// save returns the experiment's state, encoded with its checksum.
func (x *Experiment) save() (*store.Snapshot, error) {
	pol, err := bandit.Save(x.pol)
	if err != nil {
		return nil, err
	}
	sn := snapshot{Version: snapshotVersion, Algorithm: x.set.eff.Algorithm, Seq: x.seq, Releases: x.nrel, Draws: x.draws, Policy: pol,
		Counts: x.n, Pulls: x.pulls, Series: x.series, Recent: x.recent, Unfreed: x.unfreed, Apprentice: x.appr, Imported: x.imported}
	for _, rec := range x.queue {
		if rec.Status == store.Pending {
			sn.Slots = append(sn.Slots, slot{rec.Seq, rec.tk})
		}
	}
	for tk, seq := range x.pooledAt {
		sn.Pooled = append(sn.Pooled, slot{seq, bandit.Ticket{Seq: tk}})
	}
	slices.SortFunc(sn.Pooled, func(a, b slot) int { return cmp.Compare(a.Event, b.Event) })
	b, err := state.Encode(sn)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	return &store.Snapshot{Seq: x.seq, State: b, Sum: sum[:]}, nil
}

// errBadSnapshot marks a snapshot that cannot be used.
var errBadSnapshot = errors.New("service: the snapshot cannot be verified")

// decodeSnapshot verifies and decodes a stored snapshot of def.
func decodeSnapshot(def define.Definition, st *store.Snapshot) (*snapshot, error) {
	sum := sha256.Sum256(st.State)
	if !bytes.Equal(sum[:], st.Sum) {
		return nil, fmt.Errorf("%w: its checksum does not match", errBadSnapshot)
	}
	var sn snapshot
	if err := state.Decode(st.State, &sn); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadSnapshot, err)
	}
	switch {
	case sn.Version != snapshotVersion:
		return nil, fmt.Errorf("%w: version %d, this service reads %d", errBadSnapshot, sn.Version, snapshotVersion)
	case sn.Algorithm != algorithmAt(def, sn.Seq+1) || sn.Seq != st.Seq || len(sn.Pulls) != def.Arms:
		return nil, fmt.Errorf("%w: it is of another experiment (%s, operation %d, %d arms)", errBadSnapshot, sn.Algorithm, sn.Seq, len(sn.Pulls))
	case sn.Seq < 0 || sn.Releases < 0 || sn.Draws < 0:
		return nil, fmt.Errorf("%w: negative positions", errBadSnapshot)
	}
	return &sn, nil
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
