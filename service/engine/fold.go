package engine

import (
	"errors"

	"github.com/dpbandit/dpbandit/service/store"
)

// Folds. Two of the store's writes serve lookups only, not the replay:
// the event-id index (idempotent retries of events no longer in memory)
// and the ledger (a unit's spend, read when it is not cached). Each is a
// b-tree keyed by a client's id, so that each decision or reward
// written as it comes dirties a page of its own in every commit: about
// a quarter of SQLite's commit cost (docs/performance.md). On SQLite
// they are written in folds instead: every foldEvery operations of an
// experiment, with each of its snapshots, each second (Server.Expire),
// before the ledger is read, and at the stop, one transaction indexes
// the events decided since the experiment's last fold and adds its
// debits since then to the ledger, a row per unit.
//
// What is not folded yet stays in memory, and is answered from there:
// the settled events decided since the last fold are kept (trim), and a
// unit's cached counts with debits since then are pinned (ledger/cache.go), so
// that neither is ever read from a store that does not hold them yet.
//
// A crash loses the memory, not the events: each experiment's cursor
// (experiments.folded, written by its folds) says up to which operation
// it is folded, and a restart folds the rest from the history it replays
// before it serves (loadTail). Every snapshot folds, so the history
// replayed from a snapshot (the events decided after it, and those
// pending then) holds every event decided or rewarded after the cursor;
// a snapshot ahead of the cursor (which a store written so cannot hold)
// is not used.
//
// Replicas (on PostgreSQL) read one another's ledger rows (the spend
// rows of units without one start from it, store/postgres/lease.go): there every change
// folds its own writes (Env.Eager), and the index and the ledger are
// written as they come, as before folds; no cursor is written or read.

// foldEvery is the operations between an experiment's folds on SQLite.
// A fold's commit takes about 2.4 us an operation (its statements), and
// every request in its group waits for it: 4096 operations made 10-ms
// stalls (p999 15 ms against 8 ms at 1024), for no more throughput.
const foldEvery = 1 << 10

// foldInto makes c, a change of the experiment's, fold what is not
// folded yet. The caller holds x.mu.
func (x *Experiment) foldInto(c *store.Change) {
	if x.seq == x.foldSeq {
		return
	}
	unreserved := x.env.Unreserved
	c.Fold, c.Folded = &store.Fold{Upto: x.seq, Index: x.unindexed, Debits: x.owed.Take(), Unreserved: unreserved}, x.foldCh
	x.foldSeq, x.lastFold, x.foldCh, x.unindexed = x.seq, x.foldCh, make(chan struct{}), store.Span{}
}

// foldDue folds into c if a fold is due: on every change when the store
// writes as it goes (x.env.Eager), every foldEvery operations otherwise.
// The caller holds x.mu.
func (x *Experiment) foldDue(c *store.Change) {
	if x.env.Eager || x.seq-x.foldSeq >= foldEvery {
		x.foldInto(c)
	}
}

// foldNow submits a fold of the experiment, in a change of its own, if
// it has operations not folded; it returns the channel closed once
// everything is folded: the new fold's, or the last one's, which may
// still be in flight (nil: nothing was ever folded). The caller holds
// x.mu.
func (x *Experiment) foldNow() (chan struct{}, error) {
	if x.seq == x.foldSeq {
		return x.lastFold, nil
	}
	c := &store.Change{Exp: x.key, Durable: make(chan struct{})}
	x.foldInto(c)
	if err := x.env.Writer.Submit(c); err != nil {
		return nil, err
	}
	return c.Folded, nil
}

// folded reports whether ch, a fold's channel, is closed: the fold is
// durable.
func folded(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// ErrHistory marks an experiment whose history could not be read or
// folded at its load: its debits since its last fold would be missing
// from the ledger, so the service does not start without them.
var ErrHistory = errors.New("service: the experiment's history could not be folded")
