package engine

import (
	"time"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/store"
)

// Log retention (a Personalizer experiment's logRetentionDays, enforced
// with --keep-log; without it every reward is deleted at its release
// already). At every tick (Expire) the sweep deletes from the store the
// rewards of the events decided more than the retention ago, as far as
// it is safe: only those a release covers (coveredBefore: the events
// decided before the learner's last release, none that no release
// covers yet), so that the learner's open episode keeps what a replay
// needs; with a snapshot, so that no stored snapshot holds them. The
// decisions themselves (event ids, units, contexts, actions,
// propensities) stay in the store: a restart whose snapshot does not
// verify replays the whole history from them, and a retried eventId is
// answered from its stored decision. The exported log (LogCutoff) shows
// no event decided before the retention, whatever the store still
// holds.
//
// Which events are older than the retention: the sweep marks, at most
// once every retainEvery, the last operation (x.seq) with the time (every
// event up to it was decided by then: operations are numbered in the
// order they are taken, on the experiment's clock), and deletes up to
// the newest mark older than the retention. Marks are in memory only:
// a start (a restart, a replica's takeover) marks everything before it
// at its first sweep, so an event's reward is deleted within the
// retention plus retainEvery after the later of its decision and the
// last start, once a release covers it.

// retainEvery is the least time between two marks of the sweep.
const retainEvery = time.Hour

// maxRetainMarks bounds the marks kept: beyond it every other one is
// dropped (the sweep then deletes later, never sooner).
const maxRetainMarks = 1024

// retention is the sweep's state (in memory only).
type retention struct {
	marks []retainMark
	done  int64 // the events up to it were swept
}

// retainMark says that every event up to operation seq was decided by
// at (unix nanoseconds).
type retainMark struct{ seq, at int64 }

// retentionDays returns the client's log retention in days, when the
// sweep enforces one (0: none). The caller holds x.mu.
func (x *Experiment) retentionDays() int {
	if x.def.Surface != define.SurfacePersonalizer || !x.env.KeepLog || x.set.cur.LogRetentionDays <= 0 {
		return 0
	}
	if _, pooled := x.pol.(pooledDecider); pooled {
		return 0 // (no Personalizer learner is: its cover is forgetCovered's)
	}
	return x.set.cur.LogRetentionDays
}

// retain is the sweep at time now: it returns the channel of the change
// that deletes the rewards now past the retention (nil: none). The
// caller holds x.mu.
func (x *Experiment) retain(now time.Time) chan struct{} {
	days := x.retentionDays()
	if days == 0 || x.imp != nil {
		return nil
	}
	r := &x.ret
	if n := len(r.marks); n == 0 || now.UnixNano()-r.marks[n-1].at >= int64(retainEvery) {
		r.marks = append(r.marks, retainMark{x.seq, now.UnixNano()})
		if len(r.marks) > maxRetainMarks {
			kept := r.marks[:0]
			for i, m := range r.marks {
				if i%2 == 1 || i == len(r.marks)-1 {
					kept = append(kept, m)
				}
			}
			r.marks = kept
		}
	}
	cutoff := retentionCutoff(now, days)
	upto, used := int64(0), 0
	for i, m := range r.marks {
		if m.at > cutoff {
			break
		}
		upto, used = m.seq, i
	}
	hi := min(upto, x.coveredBefore())
	if hi <= r.done {
		return nil
	}
	if upto == hi {
		r.marks = r.marks[used+1:] // (a later sweep needs none of them)
	}
	c := x.bare()
	c.Forget, c.Durable = store.Span{Lo: r.done + 1, Hi: hi}, make(chan struct{})
	r.done = hi
	x.snapshotInto(c, true)
	if err := x.submit(c); err != nil {
		return nil // the writer failed: the service stops taking writes
	}
	x.last = c.Durable
	return c.Durable
}

// coveredBefore returns the last operation up to which every stored
// reward is covered by a release: the events decided before the
// learner's last release (a contextual learner's episode ends, and
// releases, only once its rewards are in; the decisions taken while it
// waits are not learned), but none that no release covers yet
// (unfreed), which a restart's replay still needs. The caller holds
// x.mu.
//
// In logging only mode since operation F, every stored reward is covered
// once those before F are (the learner's last release came after F - 1)
// or the learner never learned one: the decisions after F are in no plan
// (loggingonly.go), so no replay needs their rewards
// (TestPersonalizerLogRetentionLoggingOnly; without this the rewards of
// a logging-only experiment, which never releases, were never deleted).
func (x *Experiment) coveredBefore() int64 {
	hi := int64(0)
	if len(x.recent) > 0 {
		hi = x.recent[len(x.recent)-1].Seq - 1
	}
	if f := x.loggingOnlySince(); f > 0 && (hi >= f-1 || x.n.Learned == 0) {
		hi = x.seq
	}
	if !x.unfreed.Empty() {
		hi = min(hi, x.unfreed.Lo-1)
	}
	return hi
}

// loggingOnlySince returns the operation from which the experiment has
// been in logging only mode without a break (0: it is not now). The
// caller holds x.mu.
func (x *Experiment) loggingOnlySince() int64 {
	mode, since := define.ModeOnline, int64(0)
	for _, s := range x.def.Settings {
		if s.Mode == "" || s.Mode == mode {
			continue
		}
		if mode = s.Mode; mode == define.ModeLoggingOnly {
			since = s.From
		}
	}
	if mode != define.ModeLoggingOnly {
		return 0
	}
	return since
}

// LogCutoff returns the decision time (unix nanoseconds) before which
// the exported log shows no event, as of now: now less the client's
// log retention (0: none).
func (x *Experiment) LogCutoff(now time.Time) int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.def.Surface != define.SurfacePersonalizer || x.set.cur.LogRetentionDays <= 0 {
		return 0
	}
	return retentionCutoff(now, x.set.cur.LogRetentionDays)
}

// retentionCutoff returns now less days days, in unix nanoseconds, or 0
// (none) when that is not after the Unix epoch: no event is that old. It
// never overflows: now.Add(-days × 24 h) did past 106,751 days (what a
// time.Duration holds), and a retention of 150,000 days, which the
// specification's int32 allows, put the cutoff in the year 2200, so that
// every covered reward was swept (TestPersonalizerLogRetentionFarFuture).
func retentionCutoff(now time.Time, days int) int64 {
	const day = int64(24 * time.Hour)
	n := now.UnixNano()
	if int64(days) >= n/day {
		return 0
	}
	return n - int64(days)*day
}
