package rules

import (
	"time"

	"github.com/dpbandit/dpbandit/service/store"
)

// Log retention (a Personalizer experiment's logRetentionDays, enforced
// with --keep-log; without it every reward is deleted at its release
// already). At every tick the sweep deletes from the store the rewards
// of the events decided more than the retention ago, as far as it is
// safe: only those a release covers (Covered: the events decided before
// the learner's last release, none that no release covers yet), so that
// the learner's open episode keeps what a replay needs; with a snapshot,
// so that no stored snapshot holds them. The decisions themselves (event
// ids, units, contexts, actions, propensities) stay in the store: a
// restart whose snapshot does not verify replays the whole history from
// them, and a retried eventId is answered from its stored decision. The
// exported log shows no event decided before the retention
// (RetentionCutoff), whatever the store still holds.
//
// Which events are older than the retention: the sweep marks, at most
// once every RetainEvery, the last operation with the time (every event
// up to it was decided by then: operations are numbered in the order
// they are taken, on the experiment's clock), and deletes up to the
// newest mark older than the retention. Marks are in memory only: a
// start (a restart, a replica's takeover) marks everything before it at
// its first sweep, so an event's reward is deleted within the retention
// plus RetainEvery after the later of its decision and the last start,
// once a release covers it.

// RetainEvery is the least time between two marks of the sweep.
const RetainEvery = time.Hour

// maxMarks bounds the marks kept: beyond it every other one is dropped
// (the sweep then deletes later, never sooner).
const maxMarks = 1024

// Sweep is the sweep's state (in memory only): its marks, and the
// operation up to which it deleted.
type Sweep struct {
	marks []mark
	done  int64 // the events up to it were swept
}

// mark says that every event up to operation seq was decided by at
// (unix nanoseconds).
type mark struct{ seq, at int64 }

// Due is the sweep at time now, seq the last operation taken, under a
// retention of days days (> 0), covered the last operation up to which a
// release covers every stored reward (Covered). It returns the
// operations whose rewards may now be deleted, and takes them as
// deleted; ok is false when there are none.
func (s *Sweep) Due(now time.Time, seq int64, days int, covered int64) (span store.Span, ok bool) {
	if n := len(s.marks); n == 0 || now.UnixNano()-s.marks[n-1].at >= int64(RetainEvery) {
		s.marks = append(s.marks, mark{seq, now.UnixNano()})
		if len(s.marks) > maxMarks {
			kept := s.marks[:0]
			for i, m := range s.marks {
				if i%2 == 1 || i == len(s.marks)-1 {
					kept = append(kept, m)
				}
			}
			s.marks = kept
		}
	}
	cutoff := RetentionCutoff(now, days)
	upto, used := int64(0), 0
	for i, m := range s.marks {
		if m.at > cutoff {
			break
		}
		upto, used = m.seq, i
	}
	hi := min(upto, covered)
	if hi <= s.done {
		return store.Span{}, false
	}
	if upto == hi {
		s.marks = s.marks[used+1:] // (a later sweep needs none of them)
	}
	span = store.Span{Lo: s.done + 1, Hi: hi}
	s.done = hi
	return span, true
}

// Cover is what Covered reads of an experiment.
type Cover struct {
	// Released is the operation before the learner's last release (0:
	// none), Seq the last operation.
	Released, Seq int64
	// LoggingOnly is the operation since which the experiment is in
	// logging only mode (LoggingOnlySince; 0: it is not), Learned says
	// the learner learned a reward.
	LoggingOnly int64
	Learned     bool
	// Unfreed holds the learned events whose rewards no release covers
	// yet.
	Unfreed store.Span
}

// Covered returns the last operation up to which every stored reward is
// covered by a release: the events decided before the learner's last
// release (a contextual learner's episode ends, and releases, only once
// its rewards are in; the decisions taken while it waits are not
// learned), but none that no release covers yet (Unfreed), which a
// restart's replay still needs.
//
// In logging only mode since operation F, every stored reward is covered
// once those before F are (the learner's last release came after F - 1)
// or the learner never learned one: the decisions after F are in no plan
// (LoggingOnly), so no replay needs their rewards
// (TestPersonalizerLogRetentionLoggingOnly; without this the rewards of
// a logging-only experiment, which never releases, were never deleted).
func Covered(c Cover) int64 {
	hi := c.Released
	if f := c.LoggingOnly; f > 0 && (hi >= f-1 || !c.Learned) {
		hi = c.Seq
	}
	if !c.Unfreed.Empty() {
		hi = min(hi, c.Unfreed.Lo-1)
	}
	return hi
}

// RetentionCutoff returns now less days days, in unix nanoseconds, or 0
// (none) when that is not after the Unix epoch: no event is that old. It
// never overflows: now.Add(-days × 24 h) did past 106,751 days (what a
// time.Duration holds), and a retention of 150,000 days, which the
// specification's int32 allows, put the cutoff in the year 2200, so that
// every covered reward was swept (TestPersonalizerLogRetentionFarFuture).
func RetentionCutoff(now time.Time, days int) int64 {
	const day = int64(24 * time.Hour)
	n := now.UnixNano()
	if int64(days) >= n/day {
		return 0
	}
	return n - int64(days)*day
}
